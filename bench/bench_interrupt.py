"""How long a Ctrl-C takes to stop ``ptosim``: SIGINT sent to a running command, the time
until its one-line message and until the process is gone.

Target: the process is gone within 1 s of the signal (a user's Ctrl-C must not wait for
the run's partial trace to be built, or for millions of objects to be freed one by one).
Cases, each signalled at several points of its run (``--at`` seconds after start):

* ``gemm``: ``ptosim check --races examples/gemm.pto`` on 24 cores, 6144³ (the signal lands
  in the timed run or the race-freedom proof);
* ``racy``: ``ptosim check --races`` of ``examples/relu_sub_db.pto`` with the wait before
  its ping store removed, 10⁵ iterations (the run the detector must follow).

    .venv/bin/python bench/bench_interrupt.py
    .venv/bin/python bench/bench_interrupt.py --only gemm --at 3 6
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTOSIM = [sys.executable, "-m", "sim"]
GEMM = [
    "check", "--races", str(ROOT / "examples" / "gemm.pto"), "--block-dim", "24",
    "--arg", "m=6144", "--arg", "k=6144", "--arg", "n=6144",
    "--arg", "singleCoreM=1536", "--arg", "singleCoreN=1024",
]  # fmt: skip
TARGET_S = 1.0


def _racy(folder: Path) -> list[str]:
    """relu_sub_db.pto without the V -> MTE3 flag of its ping half: every iteration races."""
    lines = (ROOT / "examples" / "relu_sub_db.pto").read_text().splitlines(keepends=True)
    cut = [i for i, ln in enumerate(lines) if "<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>" in ln]
    path = folder / "racy.pto"
    path.write_text("".join(ln for i, ln in enumerate(lines) if i not in cut))
    return ["check", "--races", str(path), "--arg", "k=100000"]


def interrupt(args: list[str], at: float) -> tuple[float | None, float | None]:
    """(seconds from SIGINT to the message, to the exit); None: ended before the signal."""
    p = subprocess.Popen(
        [*PTOSIM, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    said: list[float] = []

    def read() -> None:
        assert p.stderr is not None
        for line in p.stderr:
            if "interrupted" in line:
                said.append(time.perf_counter())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(at)
    if p.poll() is not None:
        return None, None
    sent = time.perf_counter()
    p.send_signal(signal.SIGINT)
    p.wait(300)
    gone = time.perf_counter()
    reader.join(5)
    return (said[0] - sent if said else None), gone - sent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("gemm", "racy"))
    ap.add_argument("--at", type=float, nargs="+", default=[3.0, 6.0, 10.0])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = {"gemm": GEMM, "racy": _racy(Path(tmp))}
        for name, args in cases.items():
            if a.only and name != a.only:
                continue
            for at in a.at:
                msg, gone = interrupt(args, at)
                if gone is None:
                    print(f"{name:5} at {at:5.1f} s: finished before the signal")
                    continue
                shown = "-" if msg is None else f"{msg:.2f} s"
                verdict = "met" if gone <= TARGET_S else "MISSED"
                print(
                    f"{name:5} at {at:5.1f} s: message after {shown}, gone after {gone:.2f} s "
                    f"(target {TARGET_S:.0f} s: {verdict})"
                )


if __name__ == "__main__":
    main()
