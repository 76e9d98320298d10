"""The chip runs users make: ``ptosim run`` on the chip kernels, with and without the race check.

Two kernels on 24 cores, timing only, as docs/guide/chip.md runs them: ``examples/gemm.pto`` at
6144^3 (388 224 instructions) and ``examples/flash_attention.pto`` at S1 = 8192 (68 064).
For each, two figures, each the minimum of ``--repeat`` fresh processes (this shared
machine's speed drifts; the minimum is the least disturbed run):

* ``cli``: the whole ``ptosim run KERNEL --timing-only`` process (start-up, parse,
  simulate, report) — CPU seconds (user + sys), instructions per CPU second, peak RSS —
  with its default checks (a hand-synchronised kernel is checked for races) and with
  ``--no-races``; the race-checked figure against its target (``targets``: flash
  attention on 24 cores at Perf-Sim's rate, the GEMM 2.5x faster than Perf-Sim, the
  whole-chip runs in 10 s and 40 s), met or not; the whole-chip cases also with
  ``--sample-waves 1`` and ``2`` (their first one or two waves and the last simulated, the
  full waves between estimated: ``sim.engine.waves``), with the estimate's error against the exact
  run's device time;
* ``simulate``: ``sim.simulate`` alone in a fresh process (trace rows off), race check
  on (``races="manual"``, what ``ptosim run`` does) and off: the race check's overhead;
  also for one unit, the ``vector`` and ``cube`` kernels of ``bench/kernels.py`` at 10^5
  instructions (after ``kernels.warmup()``).

    .venv/bin/python bench/bench_chip_cli.py              # both kernels, 3 processes each
    .venv/bin/python bench/bench_chip_cli.py --repeat 5 --only gemm
    .venv/bin/python bench/bench_chip_cli.py --repeat 1 --only fa_chip   # 128 blocks in waves
    .venv/bin/python bench/bench_chip_cli.py --repeat 1 --only fa_chip32k   # 256 blocks
    .venv/bin/python bench/bench_chip_cli.py --root /tmp/old-checkout   # another checkout

``--root DIR`` runs another checkout's ``sim`` (put first on ``PYTHONPATH``, run from that
directory) with this interpreter: a before/after comparison on the same machine at the
same time. The ``ptosim run`` processes share the user's parser cache
(``sim.frontend.lark_cache``), as a user's runs do: the first process fills it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "gemm": (
        "examples/gemm.pto",
        {"m": 6144, "k": 6144, "n": 6144, "singleCoreM": 1536, "singleCoreN": 1024},
    ),
    "fa": ("examples/flash_attention.pto", {"S1": 8192, "S1_TILE": 128}),
}
CORES = 24
SAMPLE_WAVES = (1, 2)  # the whole-chip cases run sampled too (ptosim run --sample-waves K)
# whole-chip flash attention, S0 = S1 = 16 384 and 32 768: 128 and 256 blocks of 128 query
# rows in waves on the 24 cores (~0.92 M and ~3.7 M instructions); run only when asked
# (--only fa_chip, --only fa_chip32k): (file, args, blocks)
LONG = {
    "fa_chip": ("examples/flash_attention.pto", {"S1": 16384, "S1_TILE": 0}, 128),
    "fa_chip32k": ("examples/flash_attention.pto", {"S1": 32768, "S1_TILE": 0}, 256),
}
PERFSIM = ROOT / "bench" / "data" / "perfsim_speed.toml"


def targets() -> dict:
    """The speed each ``ptosim run`` case (races checked, CPU time of the whole process)
    should reach: (what, limit, unit) with unit "s" (at most) or "k instr/s" (at least).
    Flash attention on 24 cores at Perf-Sim's rate, the GEMM 2.5x faster than Perf-Sim
    (``bench/data/perfsim_speed.toml``); the whole-chip runs in fixed times."""
    ps = tomllib.loads(PERFSIM.read_text())
    return {
        "gemm": ("2.5x Perf-Sim's CPU time", ps["gemm"]["cpu_seconds"] / 2.5, "s"),
        "fa": (
            "Perf-Sim's rate",
            max(200.0, ps["flash_attention"]["instructions_per_cpu_second"] / 1e3),
            "k instr/s",
        ),
        "fa_chip": ("S0 = S1 = 16 384 in", 10.0, "s"),
        "fa_chip32k": ("S0 = S1 = 32 768 in", 40.0, "s"),
    }


def verdict(name: str, cpu: float, instructions: int) -> str:
    """``target ...: met`` / ``not met`` for a case's end-to-end CPU time."""
    what, limit, unit = targets()[name]
    if unit == "s":
        return f"target {what} <= {limit:.2f} s: {'met' if cpu <= limit else 'not met'}"
    rate = instructions / cpu / 1e3
    return f"target {what} >= {limit:.0f} k instr/s: {'met' if rate >= limit else 'not met'}"


# one unit, for the race check's overhead there (bench/kernels.py, simulate only)
SINGLE = {"vector": 100_000, "cube": 100_000}


def _child_usage() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def _env(root: Path) -> dict:
    """The child's environment: ``root`` first on the path; compiled bytecode kept (in a
    cache of its own, as an installed package keeps it), so that a process does not
    compile the simulator's sources again where the shell says not to write them."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "ptosim-bench-pyc"))
    return env


def cli_once(
    name: str, races: bool, root: Path = ROOT, sample: int | None = None
) -> tuple[float, float, int]:
    """(CPU seconds, peak RSS MB, device cycles) of one ``ptosim run`` process (with
    ``--sample-waves sample`` when given). RSS: the largest child so far (ru_maxrss of
    RUSAGE_CHILDREN), so each case runs in its own bench process."""
    file, args, blocks = _case(name)
    cmd = [
        sys.executable,
        "-m",
        "sim",
        "run",
        str(root / file),
        "--block-dim",
        str(blocks),
        "--timing-only",
        "--json",
    ]
    for k, v in args.items():
        cmd += ["--arg", f"{k}={v}"]
    if not races:
        cmd.append("--no-races")
    if sample is not None:
        cmd += ["--sample-waves", str(sample)]
    before, _ = _child_usage()
    out = subprocess.run(
        cmd, check=True, capture_output=True, text=True, cwd=root, env=_env(root)
    ).stdout
    after, rss = _child_usage()
    return after - before, rss, int(json.loads(out)["total_cycles"])


def simulate_once(name: str, races: bool, root: Path = ROOT) -> dict:
    """One ``sim.simulate`` in this (fresh) process: CPU seconds and instructions."""
    sys.path.insert(0, str(root))
    import sim

    if name in SINGLE:
        sys.path.insert(0, str(root / "bench"))
        import kernels

        kernel, args, cores = kernels.build(name, SINGLE[name]), None, None
        sim.simulate(kernels.warmup(), "a2a3", functional=False)
    else:
        from sim.kernel.files import load_kernel

        file, args, cores = _case(name)
        kernel = load_kernel(str(root / file), [])
    t0 = time.process_time()
    r = sim.simulate(
        kernel,
        "a2a3",
        functional=False,
        inputs=args,
        block_dim=cores,
        races="manual" if races else False,
        trace="none",
    )
    cpu = time.process_time() - t0
    n = sum(p["instructions"] for u in r.units for p in u["pipes"].values())
    return {"cpu": cpu, "instructions": n, "cycles": r.total_cycles, "races": len(r.races)}


def _case(name: str) -> tuple:
    """(file, scalar arguments, blocks) of a chip case."""
    if name in LONG:
        return LONG[name]
    file, args = CASES[name]
    return file, args, CORES


def _fresh(root: Path, *args) -> str:
    return subprocess.run(
        [sys.executable, __file__, "--root", str(root), *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=root,
        env=_env(root),
    ).stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="processes per figure (minimum kept)")
    ap.add_argument(
        "--only",
        choices=sorted(CASES) + sorted(SINGLE) + sorted(LONG),
        action="append",
        help="run only this kernel (repeatable)",
    )
    ap.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose sim runs (default: this one)"
    )
    ap.add_argument("--simulate-once", nargs=2, metavar=("CASE", "RACES"), help=argparse.SUPPRESS)
    ap.add_argument("--cli-once", nargs=2, metavar=("CASE", "RACES"), help=argparse.SUPPRESS)
    ap.add_argument("--sample", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.simulate_once:
        name, races = args.simulate_once
        print(json.dumps(simulate_once(name, races == "on", args.root.resolve())))
        return 0
    if args.cli_once:
        name, races = args.cli_once
        print(json.dumps(cli_once(name, races == "on", args.root.resolve(), args.sample)))
        return 0
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; min of {args.repeat} "
        f"processes per figure; sim from {args.root}"
    )
    root = args.root.resolve()
    for name in args.only or [*CASES, *SINGLE]:
        sims = {}
        for races in ("on", "off"):
            runs = [
                json.loads(_fresh(root, "--simulate-once", name, races)) for _ in range(args.repeat)
            ]
            sims[races] = min(runs, key=lambda r: r["cpu"])
        n = sims["on"]["instructions"]
        over = sims["on"]["cpu"] / sims["off"]["cpu"] - 1
        cores = 1 if name in SINGLE else _case(name)[2]
        print(
            f"{name}: {n} instructions on {cores} {'blocks' if name in LONG else 'core'}"
            f"{'s' * (cores > 1 and name not in LONG)}, "
            f"{sims['on']['cycles']} cycles, {sims['on']['races']} races"
        )
        print(
            f"  simulate: races on {sims['on']['cpu']:.2f} s, off {sims['off']['cpu']:.2f} s "
            f"CPU: race check +{100 * over:.0f} %"
        )
        if name in SINGLE:
            continue
        for races in ("on", "off"):
            flag = "" if races == "on" else " --no-races"
            try:
                runs = [
                    json.loads(_fresh(root, "--cli-once", name, races)) for _ in range(args.repeat)
                ]
            except subprocess.CalledProcessError:  # a version without --no-races
                print(f"  ptosim run{flag}: failed")
                continue
            cpu = min(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            print(
                f"  ptosim run{flag}: {cpu:.2f} s CPU end to end, {n / cpu / 1e3:.0f} k "
                f"instr/s, peak RSS {rss:.0f} MB"
            )
            if races == "on":
                print(f"    {verdict(name, cpu, n)}")
        if name in LONG:
            for k in SAMPLE_WAVES:
                _sampled(root, name, n, sims["on"]["cycles"], args.repeat, k)
    return 0


def _sampled(root: Path, name: str, n: int, exact: int, repeat: int, k: int) -> None:
    """The whole-chip case with ``--sample-waves k`` (races checked): CPU time, the
    estimated device time against the exact run's, and the target."""
    runs = [
        json.loads(_fresh(root, "--cli-once", name, "on", "--sample", str(k)))
        for _ in range(repeat)
    ]
    cpu, cycles = min(r[0] for r in runs), runs[0][2]
    print(
        f"  ptosim run --sample-waves {k}: {cpu:.2f} s CPU end to end, peak RSS "
        f"{max(r[1] for r in runs):.0f} MB, {cycles} cycles estimated "
        f"({100 * (cycles / exact - 1):+.2f} % against the exact run)"
    )
    print(f"    {verdict(name, cpu, n)}")


if __name__ == "__main__":
    sys.exit(main())
