"""Start-up: the whole process of ``import sim`` and of ``ptosim run examples/relu_sub.py``.

Each command runs ``--repeat`` times in a fresh interpreter (after one run that writes the
bytecode caches, as a user's installed package has them); printed are the minimum and
the median of its wall time and of its CPU time (user + system, from the kernel's
accounting of the child), and which of the heavy libraries it loaded (pandas,
matplotlib, Dask's distributed, lark, SimPy). The minimum is the figure to compare on a
shared machine: other processes only ever add to it.

``--root DIR`` runs another checkout's ``sim`` (from that directory, put first on
``PYTHONPATH`` too) with this interpreter, for a before/after comparison of the same machine at the
same time.

Targets: ``ptosim run examples/relu_sub.py`` <= 0.5 s, ``import sim`` <= 0.3 s (a first
result within a blink; Perf-Sim's GEMM binary starts in 21 ms).

    .venv/bin/python bench/bench_startup.py
    .venv/bin/python bench/bench_startup.py --repeat 10 --root /tmp/old-checkout
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "matplotlib", "distributed", "lark", "simpy")
_REPORT = (
    "import sys, atexit\n"
    "atexit.register(lambda: sys.__stderr__.write('LOADED ' + ' '.join(m for m in "
    f"{HEAVY!r} if m in sys.modules) + '\\n'))\n"
)


def _cases(root: Path) -> dict:
    kernel = str(root / "examples" / "relu_sub.py")
    return {
        "import sim": ["-c", _REPORT + "import sim"],
        "ptosim run examples/relu_sub.py": [
            "-c",
            _REPORT
            + "import sys; sys.argv = ['ptosim', 'run', "
            + repr(kernel)
            + "]\nfrom sim.cli import main\nsys.exit(main())",
        ],
    }


def _run(args: list, env: dict, root: Path) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=root)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode:
        sys.stderr.write(out.stderr)
        raise SystemExit(out.returncode)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    loaded = next(
        (line.split()[1:] for line in out.stderr.splitlines() if line.startswith("LOADED")), []
    )
    return wall, cpu, loaded


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose sim runs")
    args = ap.parse_args(argv)
    env = dict(os.environ)
    # as a user's interpreter: compiled modules cached in __pycache__ (a shell or CI that
    # sets PYTHONDONTWRITEBYTECODE compiles every module of sim on every start)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    root = args.root.resolve()
    env["PYTHONPATH"] = str(root) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    print(f"{'command':<34} {'wall min':>8} {'wall med':>8} {'cpu min':>8} {'cpu med':>8}  loaded")
    for name, cmd in _cases(root).items():
        _run(cmd, env, root)  # writes the bytecode caches
        runs = [_run(cmd, env, root) for _ in range(args.repeat)]
        walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
        print(
            f"{name:<34} {min(walls):>8.3f} {statistics.median(walls):>8.3f} "
            f"{min(cpus):>8.3f} {statistics.median(cpus):>8.3f}  {' '.join(runs[0][2]) or '-'}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
