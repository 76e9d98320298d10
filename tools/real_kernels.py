"""Run every ``.pto`` kernel we hold as a user would, and count what stops the rest.

For each file: ``ptosim check``; for the files check accepts, ``ptosim run`` with the
default inputs, then with ``--timing-only``, then with ``--inputs plausible``. Each mode is
tried on every accepted file (so the three columns are independent); a file *runs* when
one of them ends with exit code 0. Scalar arguments get the ``--arg NAME=VALUE`` values the
file's own usage comment gives (``// ptosim run FILE --arg n=64 ...``), as a user reading
it would pass them, and so do its launch flags (``--ranks``, ``--stream``, ``--comm-context``,
``--func``, ``--block-dim``, ``--target``); a file that gives none runs without, and says which
arguments it needs.
A stop is counted by its cause: the first error line with the file, its location and the
numbers taken out, so kernels that stop for one reason fall into one bucket. Any exception
that is not a one-line user error (what a user would see as a traceback) is counted apart
and printed whole.

The commands run in this interpreter through ``sim.cli.main`` (the same code path as the
``ptosim`` command, without a process per run). A run that passes ``--seconds`` (default
120) is stopped and counted as a timeout.

Usage::

    .venv/bin/python tools/real_kernels.py                      # the default folders
    .venv/bin/python tools/real_kernels.py tests/data/wild -v   # one folder, every file
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import signal
import sys
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = [
    "tests/data/real",
    "tests/data/real_kernels",
    "tests/data/wild",
    "tests/data/compiler_output",
    "examples",
]
MODES = {
    "default": [],
    "timing-only": ["--timing-only"],
    "plausible": ["--inputs", "plausible"],
}


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout


def _cli(argv: list[str], seconds: int) -> tuple[str, str]:
    """("ok" | "error" | "traceback" | "timeout", the first error line or the traceback)."""
    from sim.cli import main

    err = io.StringIO()
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main(argv)
    except _Timeout:
        return "timeout", f"over {seconds} s"
    except SystemExit as e:  # argparse's own exits
        rc = e.code if isinstance(e.code, int) else 2
    except BaseException:  # what a user would see as a traceback
        return "traceback", traceback.format_exc()
    finally:
        signal.alarm(0)
    if rc == 0:
        return "ok", ""
    lines = [ln for ln in err.getvalue().splitlines() if "error" in ln]
    return "error", lines[0] if lines else err.getvalue().strip()


# flags of a usage line that say how to launch the kernel (kept); files it reads or writes
# (--input, --output, --trace ...) and the mode flags this script sets itself are dropped
_LAUNCH_FLAGS = (
    "--arg",
    "--ranks",
    "--comm-context",
    "--func",
    "--block-dim",
    "--target",
    "--stream",
)


def usage_args(text: str) -> list[str]:
    """The launch flags (``--arg NAME=VALUE``, ``--ranks N``, ``--func NAME`` ...) of the
    ``ptosim run`` usage lines in a file's ``//`` comments (a line ending in a backslash
    continues on the next)."""
    comments = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("//")]
    joined = "\n".join(comments).replace("\\\n", " ")
    out: list[str] = []
    for line in joined.splitlines():
        if "ptosim run" in line:
            for flag, value in re.findall(r"(--[\w-]+)(?:[ =]((?!--)\S+))?", line):
                if flag in _LAUNCH_FLAGS and value:
                    out += [flag, value]
    return out


def cause(line: str) -> str:
    """The reason of an error line, without the file, the location and the numbers."""
    text = re.sub(r"^.*?\.pto(:\d+:\d+)?: error: ", "", line)
    text = re.sub(r"^ptosim: error: ", "", text)
    text = re.sub(r"^instruction #\d+ ", "", text)
    text = re.sub(r"\([^()]*\.pto:\d+:\d+\)", "", text)
    text = re.sub(r"%[\w.$-]+", "%v", text)
    text = re.sub(r"@[\w.$-]+", "@f", text)
    text = re.sub(r"--arg [\w.$-]+=VALUE", "--arg NAME=VALUE", text)
    text = re.sub(r"-?\d+(\.\d+)?", "N", text)
    return " ".join(text.split())[:150]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", help=f"folders searched for *.pto (default {FOLDERS})")
    ap.add_argument("--seconds", type=int, default=120, help="time limit of one command")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per file and mode")
    args = ap.parse_args(argv)
    files = sorted(
        {p for f in args.folders or FOLDERS for p in (ROOT / f).rglob("*.pto")},
    )
    refused: Counter[str] = Counter()
    stops = {mode: Counter() for mode in MODES}
    ran = dict.fromkeys(MODES, 0)
    tracebacks: list[tuple[str, str, str]] = []
    accepted = runs_somehow = 0
    for path in files:
        rel = str(path.relative_to(ROOT))
        status, line = _cli(["check", str(path)], args.seconds)
        if status == "traceback":
            tracebacks.append((rel, "check", line))
        if status != "ok":
            refused[cause(line) if status == "error" else status] += 1
            if args.verbose:
                print(f"{rel}: check: {line}")
            continue
        accepted += 1
        any_ok = False
        given = usage_args(path.read_text(errors="replace"))
        for mode, extra in MODES.items():
            status, line = _cli(["run", "--quiet", *given, *extra, str(path)], args.seconds)
            if status == "ok":
                ran[mode] += 1
                any_ok = True
            else:
                if status == "traceback":
                    tracebacks.append((rel, mode, line))
                stops[mode][cause(line) if status == "error" else status] += 1
            if args.verbose:
                print(f"{rel}: {mode}: {status} {line.splitlines()[0] if line else ''}")
        runs_somehow += any_ok

    print(f"{len(files)} .pto files; check accepts {accepted}, refuses {len(files) - accepted}")
    for why, n in refused.most_common():
        print(f"  refused {n:4}  {why}")
    for mode in MODES:
        print(f"run ({mode}): {ran[mode]} of {accepted}")
        for why, n in stops[mode].most_common():
            print(f"  stopped {n:4}  {why}")
    share = 100.0 * runs_somehow / accepted if accepted else 100.0
    print(f"run in some mode: {runs_somehow} of {accepted} accepted ({share:.1f} %)")
    print(f"tracebacks: {len(tracebacks)}")
    for rel, mode, text in tracebacks:
        print(f"--- {rel} ({mode})\n{text}")
    return 1 if tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
