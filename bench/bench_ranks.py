"""Runs with ranks: how far one process goes (docs/concepts/ranks.md).

Each case is one fresh process running ``ptosim run KERNEL --ranks N --timing-only`` and
reports CPU seconds (user + sys), peak RSS and the instructions it issued over all ranks;
the minimum of ``--repeat`` processes (this shared machine's speed drifts).

* ``allgather_mesh``: ``examples/comm/allgather.py``, 8 ranks, 16 x 256 f32 blocks (one
  UB-staged TPUT per peer and a signal per peer on every rank);
* ``allgather_async``: ``examples/comm/allgather_async.py``, 8 ranks of 8 blocks;
* ``allgather_ring``: the ring form on 8 ranks;
* ``gemm_allreduce``: ``examples/comm/gemm_allreduce.py`` on 8 ranks with its communication
  kernel as a second stream (``--stream``), ``m = n = 1536``: 576 output tiles, the compute
  kernel's 576 blocks in waves on 24 cores and the communication kernel's loop over them;
* ``gemm_ar_public``: ``examples/comm/gemm_ar.py``, GEMM + AllReduce at the public size and
  structure (communication.md §8.3, §10.2): 8 ranks, 258 output tiles of 128 x 256 over
  K = 6144 on 24 persistent cube blocks, 24 persistent communication blocks polling their
  ready queues. Target: 30 s CPU and 2 GB (``ptosim run`` as a user runs it, trace rows and
  the race check as by default);
* ``allgather_gemm``: ``examples/comm/allgather_gemm.py``, AllGather + GEMM with chunk
  streaming (communication.md §8.2) at its default size (M = 4096, K = 1024, N = 4096 f16) on
  8 ranks: 24 cube blocks and 21 communication blocks per rank.

``--fidelity`` instead runs ``examples/comm/gemm_ar.py`` at the public setup of
``bench/data/gemm_ar_public.toml`` three ways, timing only, in this process -- compute only
(the communication kernel not launched), sequential (compute, then communication alone with
the ready queues as the compute kernel leaves them) and pipelined (both streams together) --
and prints each beside the measured figure (device time, and with the model's launch overhead
per launch added: the public times are host wall clock with launches).

``--allgather-gemm`` runs ``examples/comm/allgather_gemm.py`` at its default size on 2, 4 and 8
ranks, timing only: compute only (every chunk marked ready by the host, the communication
kernel not launched), communication only (the all-gather kernel alone) and overlapped (both
streams), each as device time and with the model's launch overhead (one launch per kernel).
No on-board figures are public for this kernel (held out), so there is no error column.

    .venv/bin/python bench/bench_ranks.py
    .venv/bin/python bench/bench_ranks.py --repeat 3 --only allgather_mesh
    .venv/bin/python bench/bench_ranks.py --fidelity
    .venv/bin/python bench/bench_ranks.py --allgather-gemm
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "allgather_mesh": ("examples/comm/allgather.py", ["--ranks", "8"]),
    "allgather_async": ("examples/comm/allgather_async.py", ["--ranks", "8"]),
    "allgather_ring": (
        "examples/comm/allgather.py",
        ["--ranks", "8", "--arg", "ring=true"],
    ),
    "gemm_allreduce": (
        "examples/comm/gemm_allreduce.py",
        ["--ranks", "8", "--arg", "ranks=8", "--arg", "m=1536", "--arg", "n=1536"]
        + ["--stream", "examples/comm/gemm_allreduce.py:comm"],
    ),
    "gemm_ar_public": (
        "examples/comm/gemm_ar.py",
        ["--ranks", "8", "--comm-context", "ctx", "--stream", "examples/comm/gemm_ar.py:comm"],
    ),
    "allgather_gemm": (
        "examples/comm/allgather_gemm.py",
        ["--ranks", "8", "--arg", "ranks=8", "--comm-context", "ctx"]
        + ["--stream", "examples/comm/allgather_gemm.py:comm"],
    ),
}
AG_RANKS = (2, 4, 8)
PUBLIC = ROOT / "bench" / "data" / "gemm_ar_public.toml"


def run_case(kernel: str, extra: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = [sys.executable, "-m", "sim", "run", str(ROOT / kernel), "--timing-only", "--json"]
    p = subprocess.run([*argv, *extra], capture_output=True, text=True, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = json.loads(p.stdout)
    runs = [r for rs in out.get("per_stream", [out["per_rank"]]) for r in rs]  # every kernel
    instrs = sum(r.get("instructions", 0) for r in runs)
    return {
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 3),
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
        "instructions": instrs,
        "total_cycles": out["total_cycles"],
    }


def _example(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "comm" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def allgather_gemm(ranks=AG_RANKS) -> list[dict]:
    """AllGather + GEMM at its default size on each rank count: compute only, communication
    only, overlapped (see the module doc)."""
    import sim

    g = _example("allgather_gemm")
    rows = []
    for n in ranks:
        quiet = dict(ranks=n, functional=False, trace="none", comm_context="ctx")
        alone = sim.simulate(g.compute(n, ready=True), **quiet)
        comm = sim.simulate(g.comm(n), **quiet)
        both = sim.simulate(g.compute(n), streams=[g.comm(n)], **quiet)
        clock = alone.target.clock_hz
        launch = alone.ranks[0].launch_cycles

        def us(cycles, launches, clock=clock, launch=launch):
            return round(cycles / clock * 1e6, 1), round(
                (cycles + launches * launch) / clock * 1e6, 1
            )

        row = {"ranks": n, "m": g.M, "k": g.K, "n": g.N}
        for name, r, launches in (
            ("compute_only", alone, 1),
            ("comm_only", comm, 1),
            ("overlapped", both, 2),
        ):
            row[f"{name}_us"], row[f"{name}_with_launch_us"] = us(r.total_cycles, launches)
        rows.append(row)
    return rows


def fidelity() -> list[dict]:
    """The public GEMM + AllReduce figures against the simulator's (see the module doc)."""
    import tomllib

    import sim

    public = tomllib.loads(PUBLIC.read_text())
    s, hw = public["setup"], public["measured"]
    g = _example("gemm_ar")
    n, m, k, nn = s["ranks"], s["m_padded"], s["k"], s["n_padded"]
    assert (s["base_m"], s["base_n"], s["sub_m"]) == (g.BASE_M, g.BASE_N, g.SUB_M)
    assert s["compute_blocks"] == s["comm_blocks"] == g.BLOCKS

    quiet = dict(ranks=n, functional=False, trace="none", comm_context="ctx")
    alone = sim.simulate(g.compute(n, m, k, nn), **quiet)
    # the queues as the compute kernel leaves them: compute has run
    comm_alone = sim.simulate(g.comm(n, m, nn, rung=True), **quiet)
    both = sim.simulate(g.compute(n, m, k, nn), streams=[g.comm(n, m, nn)], **quiet)
    clock = alone.target.clock_hz
    launch = alone.ranks[0].launch_cycles

    def us(cycles, launches=0):
        return round((cycles + launches * launch) / clock * 1e6, 1)

    done = max(rs[0].total_cycles for rs in both.streams)
    rows = [
        ("compute_only", us(alone.total_cycles), us(alone.total_cycles, 1), hw["compute_only_us"]),
        (
            "sequential",
            us(alone.total_cycles + comm_alone.total_cycles),
            us(alone.total_cycles + comm_alone.total_cycles, 2),
            hw["sequential_us"],
        ),
        (
            "sequential_comm",
            us(comm_alone.total_cycles),
            us(comm_alone.total_cycles, 1),
            hw["sequential_comm_us"],
        ),
        ("pipelined", us(both.total_cycles), us(both.total_cycles, 1), hw["pipelined_us"]),
        ("pipelined_compute_done", us(done), us(done, 1), hw["pipelined_compute_done_us"]),
    ]
    return [
        {
            "figure": name,
            "sim_device_us": dev,
            "sim_with_launch_us": full,
            "measured_us": ref,
            "error_pct": round((dev - ref) / ref * 100, 1),
            "error_with_launch_pct": round((full - ref) / ref * 100, 1),
        }
        for name, dev, full, ref in rows
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", choices=sorted(CASES))
    ap.add_argument("--fidelity", action="store_true", help="the public GEMM + AllReduce figures")
    ap.add_argument(
        "--allgather-gemm", action="store_true", help="AllGather + GEMM on 2, 4 and 8 ranks"
    )
    args = ap.parse_args(argv)
    if args.fidelity or args.allgather_gemm:
        for row in (fidelity() if args.fidelity else []) + (
            allgather_gemm() if args.allgather_gemm else []
        ):
            print(json.dumps(row))
        return 0
    for name, (kernel, extra) in CASES.items():
        if args.only and name != args.only:
            continue
        runs = [run_case(kernel, extra) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: r["cpu_s"])
        print(json.dumps({"case": name, **best}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
