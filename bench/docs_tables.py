"""The figures tables of README.md and docs/benchmarks.md, generated so they cannot go stale.

Two tables, each written between its markers in both files (``<!-- table:NAME -->`` ...
``<!-- /table:NAME -->``):

* ``fidelity``: whole kernels against public on-board figures (``bench/bench_fidelity.py``
  runs them: the GEMM 6144^3 on 24 cores, flash attention's cost per further 128 keys,
  flash attention on 1 to 8 cores against the manual kernel's table, whole-chip flash
  attention in waves), each time as device time and with launch, and the single-op
  summary of ``ptosim validate`` on the calibration cases. The docs
  page also gets ``fidelity-detail``: every table of ``bench_fidelity.py --markdown``.
* ``ranks`` (docs/benchmarks.md only): runs with ranks, ``bench/bench_ranks.py``'s figures --
  the public GEMM + AllReduce against its on-board figures, and AllGather + GEMM on 2, 4 and 8
  ranks (on-board figures held out: the simulator's side only);
* ``speed``: pto-sim's speed beside Perf-Sim's (pto-isa's C++ pipeline simulator). pto-sim's
  side is measured here, each figure the minimum CPU time (user + sys) of ``--repeat``
  fresh processes (``bench/bench_chip_cli.py`` runs them); Perf-Sim cannot be run here, so
  its side is recorded data, ``bench/data/perfsim_speed.toml``, with its source and date.
  The whole-chip flash-attention runs are measured sampled from one wave (``ptosim run
  --sample-waves 1``; docs/benchmarks.md has their error against the exact runs).

    .venv/bin/python bench/docs_tables.py fidelity speed --write   # regenerate both (~10 min)
    .venv/bin/python bench/docs_tables.py speed                    # print, write nothing
    .venv/bin/python bench/docs_tables.py ranks --write            # the ranks table (~3 min)
    .venv/bin/python bench/docs_tables.py --check                  # markers present in both files

Figures depend on the machine's load: write them on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
sys.path.insert(0, str(BENCH))

FILES = {"README.md": ("fidelity", "speed"), "docs/benchmarks.md": ("fidelity", "speed")}
DETAIL = {"docs/benchmarks.md": ("fidelity-detail", "ranks")}
PERFSIM = BENCH / "data" / "perfsim_speed.toml"


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- table:{name} -->", f"<!-- /table:{name} -->"


def replace_between(text: str, name: str, body: str) -> str:
    """``text`` with what stands between ``name``'s markers replaced by ``body``."""
    begin, end = _markers(name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if len(pattern.findall(text)) != 1:
        raise SystemExit(f"docs_tables: markers {begin} ... {end} must appear once")
    return pattern.sub(lambda _: f"{begin}\n{body.rstrip()}\n{end}", text)


def _pct(a: float, b: float) -> str:
    return f"{100.0 * (a - b) / b:+.0f} %".replace("-", "−")


def fidelity_tables() -> dict[str, str]:
    import bench_fidelity as bf

    gemm = bf.gemm_rows(bf.GEMMS)
    fa = bf.fa_rows()
    multi = bf.fa_multicore_rows()
    chip = bf.fa_chip_rows()
    single = bf.validate_rows()
    rows = [
        "| kernel | figure | pto-sim device | pto-sim with launch | on-board | error |",
        "|---|---|---|---|---|---|",
    ]
    for g in gemm:
        ob = g["onboard"]
        if not ob:  # no public figure at this size: in the detail tables only
            continue
        rows.append(
            f"| GEMM {g['size']}³ f16→f32, {g['cores']} cores | time µs (profiled: device) | "
            f"{g['wall_us']:.0f} | {g['with_launch_us']:.0f} | {ob['wall_us']:.0f} | "
            f"{_pct(g['wall_us'], ob['wall_us'])} |"
        )
        cube = g["shares"]["cube"]
        rows.append(
            f"|  | cube busy % | {cube:.1f} | – | {ob['shares']['cube']:.1f} | "
            f"{cube - ob['shares']['cube']:+.1f} pt |"
        )
    # from S1 2048 on: below it the default key tile changes, so the slope mixes two kernels
    for prev, f in zip(fa, fa[1:], strict=False):
        if "sim_per_128" in f and prev["s1"] >= 2048:
            rows.append(
                f"| flash attention S0 {f['s0']}, S1 {prev['s1']}→{f['s1']} | "
                f"µs per further 128 keys | "
                f"{f['sim_per_128']:.3f} | – | {f['onboard_per_128']:.3f} | "
                f"{_pct(f['sim_per_128'], f['onboard_per_128'])} |"
            )
    rows.append(
        "| flash attention JIT, S0 128 and 256 | launch µs implied by the per-call "
        f"intercepts | {bf.jit_launch_us(fa):.2f} | – | – | – |"
    )
    for s in single:
        rows.append(
            f"| single ops, {s['target']} ({s['predicted']} cases) | median accuracy, "
            f"share within 15 % | {s['median_accuracy']:.3f}, "
            f"{100 * s['within_15_percent']:.0f} % | – | – | – |"
        )
    s1s = sorted({m["s1"] for m in multi})
    rows += [
        "",
        "Flash attention on 1 to 8 cores, 128 query rows each, against pto-isa's manual kernel "
        "(task time, so with launch): pto-sim with launch / on-board (error). At S1 ≤ 2048 the "
        "manual kernel uses a tiling of its own:",
        "",
        "| cores | " + " | ".join(f"S1 {s1}" for s1 in s1s) + " |",
        "|---|" + "---|" * len(s1s),
    ]
    for cores in sorted({m["cores"] for m in multi}):
        cells = {m["s1"]: m for m in multi if m["cores"] == cores}
        rows.append(
            f"| {cores} | "
            + " | ".join(
                f"{cells[s1]['with_launch_us']:.1f} / {cells[s1]['onboard_us']:.1f} "
                f"({_pct(cells[s1]['with_launch_us'], cells[s1]['onboard_us'])})"
                for s1 in s1s
            )
            + " |"
        )
    rows += [
        "",
        "Whole-chip flash attention, S0 = S1 = S, one block per 128 query rows in waves on "
        "the 24 cores (on-board figures held out), beside the run with the shared channels "
        "and write ports free (contention-free):",
        "",
        "| S | blocks | waves | pto-sim device µs | pto-sim with launch µs | "
        "contention-free, with launch µs | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    rows += [
        f"| {c['s']} | {c['blocks']} | {c['waves']} | {c['device_us']:.1f} | "
        f"{c['with_launch_us']:.1f} | {c['free_us']:.1f} | "
        f"{c['with_launch_us'] / c['free_us']:.2f} |"
        for c in chip
    ]
    short = "\n".join(rows)
    detail = bf.format_tables(
        gemm, fa, bf.fa_tile_rows(), single, markdown=True, multi=multi, chip=chip
    )
    return {"fidelity": short, "fidelity-detail": _paragraphs(detail)}


def _paragraphs(text: str) -> str:
    """Each table's caption as a paragraph of its own (Markdown needs a blank line
    between a paragraph and the table after it)."""
    out: list[str] = []
    for line in text.splitlines():
        if line.startswith("|") and out and out[-1] and not out[-1].startswith("|"):
            out[-1] = f"**{out[-1]}**"
            out.append("")
        out.append(line)
    return "\n".join(out)


def ranks_table() -> dict[str, str]:
    import bench_ranks as br

    names = {
        "compute_only": "compute only",
        "sequential": "sequential (compute, then communication)",
        "sequential_comm": "... of which communication alone",
        "pipelined": "pipelined (both streams)",
        "pipelined_compute_done": "... compute stream done",
    }
    rows = [
        "GEMM + AllReduce, 8 ranks, 5504 × 6144 × 1536 f16 (`examples/comm/gemm_ar.py`, "
        "communication.md §10.2); the public times are host wall clock:",
        "",
        "| figure | pto-sim device µs | pto-sim with launch µs | on-board µs | error (device) |",
        "|---|---|---|---|---|",
    ]
    rows += [
        f"| {names[r['figure']]} | {r['sim_device_us']:.1f} | {r['sim_with_launch_us']:.1f} | "
        f"{r['measured_us']:.1f} | {_pct(r['sim_device_us'], r['measured_us'])} |"
        for r in br.fidelity()
    ]
    ag = br.allgather_gemm()
    rows += [
        "",
        f"AllGather + GEMM with chunk streaming (`examples/comm/allgather_gemm.py`, "
        f"communication.md §8.2), M = {ag[0]['m']}, K = {ag[0]['k']}, N = {ag[0]['n']} f16 "
        "(this project's size: the reference gives none); no on-board figures are public "
        "for this kernel (held out), so the simulator's side only:",
        "",
        "| ranks | compute only µs | communication only µs | overlapped µs | "
        "with launch: compute / communication / overlapped µs |",
        "|---|---|---|---|---|",
    ]
    rows += [
        f"| {r['ranks']} | {r['compute_only_us']:.1f} | {r['comm_only_us']:.1f} | "
        f"{r['overlapped_us']:.1f} | {r['compute_only_with_launch_us']:.1f} / "
        f"{r['comm_only_with_launch_us']:.1f} / {r['overlapped_with_launch_us']:.1f} |"
        for r in ag
    ]
    return {"ranks": "\n".join(rows)}


def speed_table(repeat: int) -> dict[str, str]:
    import bench_chip_cli as cc

    ps = tomllib.loads(PERFSIM.read_text())

    def fresh(*args: str) -> dict | list:
        return min(
            (json.loads(cc._fresh(cc.ROOT, *args)) for _ in range(repeat)),
            key=lambda r: r[0] if isinstance(r, list) else r["cpu"],
        )

    # the tile instructions each kernel runs, counted by a run (a kernel edited since
    # keeps its rate true)
    n = {
        name: json.loads(cc._fresh(cc.ROOT, "--simulate-once", name, "off"))["instructions"]
        for name in ("gemm", "fa")
    }
    load = os.getloadavg()[0]
    gemm_cpu = fresh("--cli-once", "gemm", "on")[0]
    fa_cpu = fresh("--cli-once", "fa", "on")[0]
    vec = fresh("--simulate-once", "vector", "off")
    # the whole-chip runs, sampled from one wave (the exact runs take minutes: below)
    chip = {name: fresh("--cli-once", name, "on", "--sample", "1") for name in cc.LONG}
    ps_gemm = ps["gemm"]["cpu_seconds"]
    ps_fa = ps["flash_attention"]["instructions_per_cpu_second"]
    lo = ps["vector"]["instructions_per_second_low"]
    hi = ps["vector"]["instructions_per_second_high"]
    vec_rate = vec["instructions"] / vec["cpu"]
    target = cc.targets()
    met = {
        name: cc.verdict(name, cpu, n[name]).endswith(": met")
        for name, cpu in (("gemm", gemm_cpu), ("fa", fa_cpu))
    }
    rows = [
        "| run (CPU time of the whole process) | pto-sim | Perf-Sim | pto-sim speed | target |",
        "|---|---|---|---|---|",
        f"| GEMM 6144³ on 24 cores, `ptosim run` (races checked) | {gemm_cpu:.2f} s, "
        f"{n['gemm'] / gemm_cpu / 1e3:.0f} k instr/s | {ps_gemm:.2f} s, "
        f"{ps['gemm']['instructions'] / ps_gemm / 1e3:.0f} k instr/s | "
        f"{ps_gemm / gemm_cpu:.2f}× | ≤ {target['gemm'][1]:.2f} s (2.5×): "
        f"{'met' if met['gemm'] else 'not met'} |",
        f"| flash attention S1 8192 (128-key tiles) on 24 cores, `ptosim run` (races checked) | "
        f"{n['fa'] / fa_cpu / 1e3:.0f} k instr/s | {ps_fa / 1e3:.0f} k instr/s | "
        f"{n['fa'] / fa_cpu / ps_fa:.2f}× | ≥ {target['fa'][1]:.0f} k instr/s: "
        f"{'met' if met['fa'] else 'not met'} |",
        f"| vector kernel, one unit, 10⁵ instructions, timing only, no trace (`simulate`) | "
        f"{vec_rate / 1e3:.0f} k instr/s | {lo / 1e3:.0f}–{hi / 1e3:.0f} k instr/s | "
        f"{vec_rate / hi:.1f}–{vec_rate / lo:.1f}× | |",
        *(
            f"| whole-chip flash attention S0 = S1 = {cc.LONG[name][1]['S1']}, "
            f"{cc.LONG[name][2]} blocks, `ptosim run --sample-waves 1` (races checked; device "
            f"time estimated, see sampled waves) | {chip[name][0]:.1f} s | – | – | "
            f"≤ {target[name][1]:.0f} s: "
            f"{'met' if chip[name][0] <= target[name][1] else 'not met'} |"
            for name in cc.LONG
        ),
        "",
        f"pto-sim measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} CPUs at load "
        f"average {load:.1f} (minimum CPU time of {repeat} processes). Perf-Sim: "
        f"{ps['source']}; recorded in `bench/data/perfsim_speed.toml`.",
    ]
    return {"speed": "\n".join(rows)}


def write(tables: dict[str, str]) -> None:
    for rel, names in {**FILES, **{k: FILES.get(k, ()) + v for k, v in DETAIL.items()}}.items():
        path = ROOT / rel
        text = path.read_text()
        for name in names:
            if name in tables:
                text = replace_between(text, name, tables[name])
        path.write_text(text)
        print(f"written: {rel}")


def check() -> int:
    for rel, names in {**FILES, **{k: FILES.get(k, ()) + v for k, v in DETAIL.items()}}.items():
        text = (ROOT / rel).read_text()
        for name in names:
            for m in _markers(name):
                if text.count(m) != 1:
                    print(f"{rel}: marker {m} found {text.count(m)} times, expected once")
                    return 1
    print("markers: ok")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", metavar="fidelity|speed|ranks", help="tables to generate")
    ap.add_argument("--write", action="store_true", help="write between the markers")
    ap.add_argument("--check", action="store_true", help="only check the markers")
    ap.add_argument("--repeat", type=int, default=3, help="processes per speed figure (min)")
    args = ap.parse_args(argv)
    unknown = set(args.tables) - {"fidelity", "speed", "ranks"}
    if unknown:
        ap.error(f"unknown table: {', '.join(sorted(unknown))} (fidelity, speed, ranks)")
    if args.check:
        return check()
    tables: dict[str, str] = {}
    if "fidelity" in args.tables:
        tables |= fidelity_tables()
    if "speed" in args.tables:
        tables |= speed_table(args.repeat)
    if "ranks" in args.tables:
        tables |= ranks_table()
    for name, body in tables.items():
        print(f"{name}:\n{body}\n")
    if args.write:
        write(tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
