"""A5 vector functions without a curve fit: a small analytic model of the VF core.

On A5 a vector tile op runs as a vector function (VF): a loop of register-level
instructions (loads ``VLDS``, compute ops, stores ``VSTS``) on an out-of-order core with
two compute ports, two load ports and one store port (timing-model.md §11.2). The
reference fits whole VFs per op (``sim.timing.formula``); for the ops and dtypes it does
not fit, this module costs the op's loop (``models/a5/vf_programs.csv``) from the VfSim
micro-architecture data (``models/a5/vfsim/*.csv`` verbatim, plus ``vf_isa_extra.csv`` for
instructions those tables lack):

* **start-up and drain**: ``vf_startup_cost - idu_dispatch_start_advance`` before the
  first dispatch, ``vloop_to_dispatch_delay`` into the loop, ``vf_drain_cost`` after the
  last completion;
* **one iteration's dependency chain**, paid once: load -> each compute op in order ->
  store, each edge the producer->consumer forwarding figure (``forwarding.csv``, default
  latency - 3; a compute consumer may start one cycle earlier, as VfSim's issue-queue
  model does), then the producer's ``data_store_cost`` for the store;
* **steady state**: iterations x the initiation interval of the busiest resource — loads
  over the load ports, stores over the store port, all loads and stores together over
  ``vf_memory_ops_per_cycle`` (ASSUMPTION, machine.toml), and per functional-unit class (ALU,
  SFU: their histories are separate) the sum of the body's own initiation intervals
  (``initiation_interval.csv``, default 1) over the compute ports (EXU0-only ops over one);
* **2-D and row loops**: a row costs at least ``vf_2d_cycles_per_memory_op`` per load or
  store of the row plus ``vf_row_gap_cycles`` (loop control and address update of the
  NO_POST_UPDATE variant), more when the compute bound is larger. ASSUMPTION: the two
  figures are read off the reference's 2-D fits (machine.toml cites them); VfSim's own
  loop model is not in the reference;
* **column reductions** accumulate down the rows in one register: each row waits for the
  previous row's result (the op's forwarding to itself) unless the resources are slower.

Against the ops that do have fits this model lands within a few cycles of the 1-D
constants (TADD 54 vs 55.1, TEXP f32 63 vs 62.7, TMINS 53 vs 53.1, TRSQRT f32 76 vs 75.6)
and on the 1-D slopes of the SFU ops (TEXP f32 2 vs 1.97, f16 4 vs 3.76); the test suite
scores it on every fitted op.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import attrs

from sim.base.errors import UserError
from sim.isa.dtypes import dtype as _dtype
from sim.target.model import read_csv_rows

__all__ = ["vf_cycles", "program_instructions", "LOOPS"]

LOOPS = ("flat", "flat_static", "rows", "cols")


@attrs.frozen
class Instr:
    key: str  # "VADD.fp32"
    op_class: str  # COMPUTE, LOAD or STORE
    latency: float
    store_cycles: float  # data_store_cost: a store of this instruction's result
    fu: str  # ALU, SFU ("" for loads and stores)
    exu0_only: bool
    ii: float  # own initiation interval on a port


@attrs.frozen
class Program:
    op: str
    dtypes: str  # "any" or "float"
    loop: str  # flat, flat_static, rows, cols
    pre: tuple
    body: tuple
    row: tuple


@attrs.frozen
class Core:
    instrs: dict
    forwarding: dict
    uarch: dict
    defaults: dict
    programs: dict


@functools.lru_cache(maxsize=8)
def _core(isa_dir: Path, extra: Path, programs: Path) -> Core:
    ii = {
        (r["previous"], r["current"]): float(r["cycles"])
        for r in read_csv_rows(isa_dir / "initiation_interval.csv")
    }
    instrs = {}
    for src in (isa_dir / "isa.csv", extra):
        for r in read_csv_rows(src):
            key = f"{r['op']}.{r['form']}"
            instrs[key] = Instr(
                key,
                r["op_class"],
                float(r["latency"]),
                float(r["data_store_cost"]),
                r["EXU"],
                r["dispatch_exu"] == "EXU0_ONLY",
                float(r.get("ii_cycles") or ii.get((key, key), 1)),
            )
    fwd = {
        (r["producer"], r["consumer"]): float(r["cycles"])
        for r in read_csv_rows(isa_dir / "forwarding.csv")
    }
    uarch = {r["key"]: r["value"] for r in read_csv_rows(isa_dir / "uarch.csv")}
    defaults = {r["key"]: float(r["value"]) for r in read_csv_rows(isa_dir / "isa_defaults.csv")}
    progs = {}
    for r in read_csv_rows(programs):
        if r["loop"] not in LOOPS or r["dtypes"] not in ("any", "float"):
            raise UserError(
                f"{programs}: op {r['op']}: loop must be one of {', '.join(LOOPS)} and "
                f"dtypes any or float, found {r['loop']!r} / {r['dtypes']!r}"
            )
        progs[r["op"]] = Program(
            r["op"],
            r["dtypes"],
            r["loop"],
            tuple(r["pre"].split()),
            tuple(r["body"].split()),
            tuple(r["row"].split()),
        )
    return Core(instrs, fwd, uarch, defaults, progs)


def _form(size: int) -> str:
    return "fp32" if size == 4 else "fp16"


_CVT = {
    ("f16", "f32"): "VCVT_F16_TO_F32.f16_to_f32",
    ("f32", "f16"): "VCVT_F32_TO_F16.f32_to_f16",
    ("f32", "i32"): "VCVT_F32_TO_S32.f32_to_s32",
    ("i32", "f32"): "VCVT_S32_TO_F32.s32_to_f32",
}


def _instr(core: Core, token: str, form: str, cvt: tuple) -> Instr | None:
    if "." in token:
        key = token
    elif token == "VCVT":
        key = _CVT.get(cvt, "VCVT.any")
    else:
        key = f"{token}.{form}"
    return core.instrs.get(key)


def program_instructions(core: Core, prog: Program, form: str, cvt: tuple = ()) -> tuple | None:
    """(pre, body, row) as Instr tuples, or None when one instruction is unknown."""
    out = []
    for part in (prog.pre, prog.body, prog.row):
        got = tuple(_instr(core, t, form, cvt) for t in part)
        if any(i is None for i in got):
            return None
        out.append(got)
    return tuple(out)


def _edge(core: Core, p: Instr, c: Instr) -> float:
    f = core.forwarding.get((p.key, c.key), max(0.0, p.latency - 3))
    return max(0.0, f - 1) if c.op_class == "COMPUTE" else f


def _chain(core: Core, seq) -> float:
    """One iteration's dependency chain: first load -> compute ops in order -> last store."""
    loads = [i for i in seq if i.op_class == "LOAD"]
    stores = [i for i in seq if i.op_class == "STORE"]
    prev = loads[0] if loads else None
    t = 0.0
    for c in (i for i in seq if i.op_class == "COMPUTE"):
        t += _edge(core, prev, c) if prev is not None else 0.0
        prev = c
    if prev is None:
        return stores[0].store_cycles if stores else 0.0
    if stores:
        return t + _edge(core, prev, stores[-1]) + max(1.0, prev.store_cycles)
    return t + prev.latency


def _ii(core: Core, instrs, memory_ops_per_cycle: float) -> float:
    """Initiation interval of one pass over ``instrs``: the busiest resource."""
    u = core.uarch
    ports = int(u["issue_ports"])
    n_loads = sum(i.op_class == "LOAD" for i in instrs)
    n_stores = sum(i.op_class == "STORE" for i in instrs)
    loads, stores = n_loads / int(u["load_ports"]), n_stores / int(u["store_ports"])
    memory = (n_loads + n_stores) / memory_ops_per_cycle
    per_fu: dict = {}
    for i in instrs:
        if i.op_class == "COMPUTE":
            per_fu[i.fu] = per_fu.get(i.fu, 0.0) + i.ii
    exu0 = sum(i.ii for i in instrs if i.op_class == "COMPUTE" and i.exu0_only)
    compute = max([v / ports for v in per_fu.values()] + [exu0])
    return max(loads, stores, memory, compute)


def _memory_ops(instrs) -> int:
    return sum(i.op_class in ("LOAD", "STORE") for i in instrs)


def vf_cycles(s, target) -> float | None:
    """Cycles of the A5 vector function of PIPE_V op ``s`` (None: no program applies)."""
    vec = target.vector
    if not vec.get("vf_programs"):
        return None
    core = _core(
        (target.path / vec["vf_isa"]).resolve(),
        (target.path / vec["vf_isa_extra"]).resolve(),
        (target.path / vec["vf_programs"]).resolve(),
    )
    prog = core.programs.get(s.opcode)
    dst = _dtype(s.dtype)
    src = _dtype(s.src_dtype or s.dtype)
    if prog is None or (prog.dtypes == "float" and not dst.is_float):
        return None
    parts = program_instructions(core, prog, _form(dst.size_bytes), (src.name, dst.name))
    if parts is None:
        return None
    _, body, row = parts
    u, d = core.uarch, core.defaults
    stride = float(u["innermost_iter_dispatch_stride"])
    gap, per_mem = float(vec["vf_row_gap_cycles"]), float(vec["vf_2d_cycles_per_memory_op"])
    mem_rate = float(vec["vf_memory_ops_per_cycle"])
    const = (
        d["vf_startup_cost"]
        - float(u["idu_dispatch_start_advance"])
        + float(u["vloop_to_dispatch_delay"])
        + _chain(core, body + row)
        + d["vf_drain_cost"]
    )
    E = 256 // max(src.size_bytes, dst.size_bytes)
    R, C = s.valid_rows, s.valid_cols
    inner = math.ceil(C / E)
    ii_body = max(stride, _ii(core, body, mem_rate))
    ii_row = _ii(core, row, mem_rate) if row else 0.0
    row_floor = per_mem * (inner * _memory_ops(body) + _memory_ops(row)) + gap
    if prog.loop in ("flat", "flat_static"):
        contiguous = C == s.cols or (prog.loop == "flat" and R == 1)
        if contiguous:
            return const + math.ceil(R * C / E) * ii_body
        return const - gap + R * max(inner * ii_body, row_floor)
    if prog.loop == "rows":
        return const - gap + R * max(inner * ii_body + ii_row, row_floor)
    # cols: per column chunk, R dependent accumulations, then the chunk's store
    acc = [i for i in body if i.op_class == "COMPUTE"][-1]
    step = max(ii_body, _edge(core, acc, acc))
    chunk_floor = per_mem * (R * _memory_ops(body) + _memory_ops(row)) + gap
    return const - gap + inner * max(R * step + ii_row, chunk_floor)
