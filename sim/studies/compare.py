"""Manual vs auto: run a kernel as written and in auto mode, side by side.

"Manual" is the program exactly as written: its addresses (tiles declared without one
are placed by the engine, first fit without reuse) and its flags and barriers. "Auto" is
``to_auto`` of it: placed and synchronised by the simulator (``sim.placement.auto``).
Both runs check races. The comparison holds, for each run: total cycles, busy cycles per
pipe, executed set/wait pairs, pipe barriers and full barriers, peak bytes per buffer and
the races found.

A chip kernel (cube and vector units, ``sim.engine.units``) runs on one core unless
``block_dim`` says more; every unit has its own pipes and buffers, so its busy cycles are
per unit (``AIV0 PIPE_V``) and a buffer's peak bytes are those of the unit kind that owns
it (UB: each vector unit's).
A kernel that places no tile by hand (no ``TASSIGN`` / constant ``alloc_tile addr=``) has
no hand placement to compare: its manual side is its own flags with the engine's first-fit
placement, and ``Comparison.note`` says so.

This is the one module of ``sim.placement`` that runs the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import pandas as pd

from sim.base.errors import DeadlockError, UserError
from sim.isa.opcodes import PIPES
from sim.isa.program import For, If, PipeOp, Section, walk
from sim.placement.auto import AutoPlan, plan_auto, program_of
from sim.placement.ir import constant_addresses, reserve_of
from sim.placement.metrics import initial_addresses, occupancy, peak_bytes, sync_counts
from sim.target import load_target

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path
    from typing import Any

    from matplotlib.figure import Figure

    from sim.engine.limits import Limits
    from sim.engine.ranks import RanksResult
    from sim.engine.result import Result
    from sim.isa.program import Program
    from sim.kernel.builder import Kernel
    from sim.target.model import Target

__all__ = [
    "Run",
    "Comparison",
    "run_comparison",
    "compare",
    "compare_json",
    "compare_figure",
    "format_compare",
    "run_checked",
    "run_mode",
]


def run_checked(
    program,
    target,
    *,
    inputs=None,
    seed=0,
    functional=True,
    block_dim=None,
    limits=None,
    free=None,
    ranks=None,
    comm_context=None,
    streams=(),
    sample_waves=None,
):
    """``simulate(program, target, races=True, sync="manual")``: the program exactly as
    given, race-checked (the checking run of this package), on ``block_dim`` cores, bounded
    by ``limits`` (``sim.engine.limits``; counted from zero again for each run), with the
    shared mechanisms ``free`` names made free; on ``ranks`` NPUs when given (a
    ``RanksResult``, races across ranks checked; ``comm_context`` and ``streams``, the
    kernels launched beside it on every rank, as written too, as ``simulate``'s;
    ``sample_waves`` as ``simulate``'s)."""
    from sim.engine.run import simulate

    if limits is not None:
        limits.again()
    return simulate(
        program,
        target,
        inputs=inputs,
        seed=seed,
        functional=functional,
        races=True,
        sync="manual",
        block_dim=block_dim,
        limits=limits,
        free=free,
        ranks=ranks,
        comm_context=comm_context,
        streams=streams,
        sample_waves=sample_waves,
    )


@attrs.frozen
class _Launched:
    """A stream kernel as another mode prepared it (a ``KernelLike``: its data and launch
    size kept)."""

    prepared: Program
    inputs: dict
    block_dim: int

    def program(self) -> Program:
        return self.prepared


def _streams_in(mode: str, streams, tgt) -> tuple:
    """The kernels launched beside the compared one, in the column's mode: as written for
    the manual column, each in auto mode for the auto column (``ptosim run --sync`` sets
    the mode of every launched kernel alike)."""
    if mode == "manual" or not streams:
        return tuple(streams)
    from sim.engine.run import prepared

    out = []
    for s in streams:
        prog = program_of(s)
        auto = prepared(prog, tgt, "auto").program
        out.append(_Launched(auto, dict(getattr(s, "inputs", {})), getattr(s, "block_dim", 1)))
    return tuple(out)


@attrs.frozen
class Run:
    """One side of a comparison."""

    mode: str  # "manual" | "auto"
    program: Program = attrs.field(repr=False)
    result: Result | None = attrs.field(repr=False)  # None on deadlock
    occupancy: pd.DataFrame = attrs.field(repr=False)
    deadlock: str | None = None
    fifo: dict = attrs.field(factory=dict, repr=False)  # buffer -> [(label, start, end)]
    # a run with ranks: the whole run; ``result`` is then rank 0's (its pipes, syncs, tiles)
    ranks: RanksResult | None = attrs.field(default=None, repr=False)

    @property
    def total_cycles(self) -> int | None:
        if self.result is None:
            return None
        return (self.ranks or self.result).total_cycles

    @property
    def warnings(self) -> tuple:
        """The run's warnings, as ``ptosim run`` reports them (every rank's, once)."""
        if self.result is None:
            return ()
        return tuple((self.ranks or self.result).warnings)

    def metrics(self) -> dict:
        if self.result is None:
            return {
                "total_cycles": None,
                "pipes": {},
                "syncs": None,
                "waits": None,
                "barriers": None,
                "full_barriers": None,
                "peak_bytes": {},
                "races": None,
                "race_findings": [],
                "deadlock": self.deadlock,
                "warnings": [],
            }
        r = self.result
        own = [f.message for f in r.races]
        across: list[str] = []
        if self.ranks is not None:  # every rank's chip (each stream's), then across ranks
            own = [
                f"rank {i}: {f.message}"
                for i, rs in enumerate(self.ranks.streams or [(x,) for x in self.ranks.ranks])
                for x in rs
                for f in x.races
            ]
            across = list(self.ranks.races)
        return {
            "total_cycles": self.total_cycles,
            "pipes": _busy(r),
            **sync_counts(r.trace),
            "peak_bytes": peak_bytes(self.occupancy),
            "races": len(own) + len(across),
            "race_findings": own + across,
            "deadlock": None,
            "warnings": list(self.warnings),
        }


def _busy(r) -> dict:
    """Busy cycles per pipe; on a chip kernel per unit and pipe (each has its own)."""
    if len(r.units) <= 1:
        return {p: int(v["busy_cycles"]) for p, v in r.pipes.items()}
    cores = len({u["core"] for u in r.units}) > 1
    out = {}
    for u in r.units:
        unit = f"core {u['core']} {u['unit']}" if cores else u["unit"]
        out.update({f"{unit} {p}": int(v["busy_cycles"]) for p, v in u["pipes"].items()})
    return out


@attrs.frozen
class Comparison:
    kernel: str
    target: object = attrs.field(repr=False)
    manual: Run
    auto: Run
    plan: AutoPlan = attrs.field(repr=False)
    hand_placed: int = 0  # tiles the kernel places by hand

    @property
    def note(self) -> str | None:
        """One line when the kernel places no tile by hand (else None)."""
        if self.hand_placed:
            return None
        return (
            f"note: {self.kernel} places no tile by hand (no TASSIGN or constant "
            f"alloc_tile addr=): the manual column is its own flags with tiles placed "
            f"first fit by the engine, one address each"
        )

    @property
    def sampled(self) -> str | None:
        """One line when a run's launch was sampled (``sample_waves``: its total_cycles
        estimated, its other rows of the blocks that ran), else None."""
        said = [
            f"{r.mode} {r.result.sample['blocks_simulated']} of {r.result.block_dim}"
            for r in (self.manual, self.auto)
            if r.result is not None and r.result.sample
        ]
        if not said:
            return None
        return (
            f"sampled: total_cycles is estimated from the blocks simulated ({', '.join(said)} "
            f"blocks); the other rows are of the simulated blocks"
        )

    @property
    def warnings(self) -> tuple:
        """Both runs' warnings: one they both gave once, one of a single run after its
        mode (``auto run: warning: ...``)."""
        m, a = self.manual.warnings, self.auto.warnings
        return tuple(
            w if w in m and w in a else f"{'manual' if w in m else 'auto'} run: {w}"
            for w in dict.fromkeys((*m, *a))
        )

    def frame(self) -> pd.DataFrame:
        return _frame(self)

    def to_json(self) -> dict:
        return _json(self)

    def figure(self, **kw: Any) -> Figure:
        from sim.studies.compare_plot import comparison_figure

        return comparison_figure(self, **kw)


def _run(mode, prog, tgt, inputs, seed, addresses, double=None, fifo=None, **launch) -> Run:
    fifo = fifo or {}
    try:
        result = run_checked(prog, tgt, inputs=inputs, seed=seed, **launch)
    except DeadlockError as e:
        empty = pd.DataFrame(
            columns=["tile", "buffer", "start_byte", "end_byte", "start_cycle", "end_cycle"]
        )
        return Run(mode, prog, None, empty, str(e), _bands_that_ran(fifo, None))
    whole = None
    if hasattr(result, "ranks"):  # a run with ranks: rank 0's figures, the run's time
        whole, result = result, result.ranks[0]
    return Run(
        mode,
        prog,
        result,
        occupancy(result.trace, prog, addresses, double),
        None,
        _bands_that_ran(fifo, result),
        whole,
    )


def _fifo_bands(prog, placed: dict) -> dict:
    """Buffer -> [(label, start, end, branch)] of the FIFO buffers (``reserve_buffer``) of
    ``prog``: at their base, an ``auto = true`` one where ``placed`` (the engine) puts it;
    ``branch`` is the source locations of the statements of the ``scf.if`` branch the
    buffer is reserved in (None: not in a branch)."""
    out: dict[str, list] = {}
    for f in prog.functions:
        for st, branch in _reserves_in_branches(f.body, None):
            buf, size, base = reserve_of(st)
            name = dict(st.attrs).get("name")
            base = placed.get(("reserve", name)) if base is None else base
            if base is not None:
                out.setdefault(buf, []).append((f"FIFO {name}", base, base + size, branch))
    return out


def _reserves_in_branches(body, branch):
    """(reserve_buffer statement, locations of its innermost ``scf.if`` branch or None)."""
    for st in body:
        if isinstance(st, If):
            for b in (st.then_body, st.else_body):
                locs = frozenset(str(s.loc) for s in walk(b) if getattr(s, "loc", None))
                yield from _reserves_in_branches(b, locs)
        elif isinstance(st, (For, Section)):
            yield from _reserves_in_branches(st.body, branch)
        elif isinstance(st, PipeOp) and st.op == "pto.reserve_buffer":
            yield st, branch


def _bands_that_ran(fifo: dict, result) -> dict:
    """``fifo`` without the buffers of ``scf.if`` branches the run did not take (no trace
    row comes from a statement of theirs): the branches of one ``scf.if`` are exclusive,
    and auto mode lets the taken branch's tiles use an untaken branch's FIFO bytes."""
    ran = None
    if result is not None and any(b[3] is not None for bands in fifo.values() for b in bands):
        ran = set(result.trace["source"].astype(str))
    return {
        buf: [b[:3] for b in bands if ran is None or b[3] is None or b[3] & ran]
        for buf, bands in fifo.items()
    }


def _manual(prog, tgt, inputs, seed, **launch) -> Run:
    from sim.engine.placement import place_tiles

    placed = place_tiles(prog, tgt)
    return _run(
        "manual",
        prog,
        tgt,
        inputs,
        seed,
        initial_addresses(prog, placed),
        fifo=_fifo_bands(prog, placed),
        **launch,
    )


def _auto(plan: AutoPlan, tgt, inputs, seed, **launch) -> Run:
    addrs = {t.name: s.addrs[0] for t, s in plan.slots.items() if not s.double}
    double = {
        t.name: (*s.addrs, *plan.first_access.get(t.name, ("", "")))
        for t, s in plan.slots.items()
        if s.double
    }
    return _run(
        "auto",
        plan.program,
        tgt,
        inputs,
        seed,
        addrs,
        double,
        fifo=_fifo_bands(plan.program, {}),
        **launch,
    )


def _program_inputs(program_or_kernel, inputs):
    if hasattr(program_or_kernel, "inputs") and hasattr(program_or_kernel, "program"):
        inputs = {**program_or_kernel.inputs, **(inputs or {})}
    return program_of(program_or_kernel), inputs


def run_comparison(
    program_or_kernel: Program | Kernel,
    target: str | Path | Target = "a2a3",
    *,
    inputs: dict[str, Any] | None = None,
    seed: int = 0,
    double_buffer: bool = True,
    functional: bool = True,
    block_dim: int | None = None,
    limits: Limits | None = None,
    free: Iterable[str] | str | None = None,
    ranks: int | None = None,
    comm_context: str | None = None,
    streams: Sequence[Program | Kernel] = (),
    sample_waves: int | None = None,
) -> Comparison:
    """Run ``program_or_kernel`` as written and in auto mode (see the module doc), each on
    ``block_dim`` cores (default: a builder kernel's own, else 1), functionally or timing
    only, each bounded by ``limits`` (``sim.engine.limits``), with the shared mechanisms
    ``free`` names made free (``sim.simulate``'s ``free``), on ``ranks`` NPUs when given
    (both runs with ranks: the total is the latest rank's end, the other rows rank 0's,
    races counted in every rank and across ranks; ``comm_context`` as ``simulate``'s;
    ``streams``: kernels launched beside it on every rank, as ``simulate``'s, as written in
    the manual run and in auto mode in the auto run; ``sample_waves``: both runs sampled,
    as ``simulate``'s, their ``total_cycles`` then estimated: ``Comparison.sampled``)."""
    if isinstance(program_or_kernel, Comparison):
        return program_or_kernel
    from sim.engine.run import check_sample

    check_sample(sample_waves, functional, ranks)
    if block_dim is None:
        block_dim = getattr(program_or_kernel, "block_dim", None)
    prog, inputs = _program_inputs(program_or_kernel, inputs)
    tgt = load_target(target)
    plan = plan_auto(prog, tgt, double_buffer=double_buffer)
    hand = sum(len(constant_addresses(f)) for f in prog.functions)
    launch = {"functional": functional, "block_dim": block_dim, "limits": limits, "free": free}
    if sample_waves is not None:
        launch["sample_waves"] = sample_waves
    if ranks is not None:  # absent without ranks: a one-chip run as it always was
        launch.update(ranks=ranks, comm_context=comm_context)
    elif streams:
        raise UserError("streams: a run of these needs ranks=N")
    more = {"streams": _streams_in("auto", streams, tgt)} if streams else {}
    return Comparison(
        prog.main.name,
        tgt,
        _manual(prog, tgt, inputs, seed, **launch, **({"streams": streams} if streams else {})),
        _auto(plan, tgt, inputs, seed, **launch, **more),
        plan,
        hand,
    )


def run_mode(
    program_or_kernel,
    target="a2a3",
    mode: str = "manual",
    *,
    inputs=None,
    seed=0,
    functional: bool = True,
    double_buffer: bool = True,
    ranks: int | None = None,
    comm_context: str | None = None,
    streams: Sequence[Program | Kernel] = (),
    block_dim: int | None = None,
    sample_waves: int | None = None,
) -> Run:
    """One side of a comparison: the run in ``mode`` ("manual" or "auto") alone, on
    ``ranks`` NPUs when given, with ``streams`` beside it (``run_comparison``'s), in
    ``block_dim`` blocks (default: a builder kernel's own, else 1), with ``simulate``'s
    ``sample_waves``."""
    prog, inputs = _program_inputs(program_or_kernel, inputs)
    tgt = load_target(target)
    more: dict[str, Any] = {} if ranks is None else {"ranks": ranks, "comm_context": comm_context}
    # a builder kernel's own launch size (the program alone would run one block)
    more["block_dim"] = (
        getattr(program_or_kernel, "block_dim", None) if block_dim is None else block_dim
    )
    if sample_waves is not None:
        more["sample_waves"] = sample_waves
    if streams:
        more["streams"] = _streams_in(mode, streams, tgt)
    if mode == "manual":
        return _manual(prog, tgt, inputs, seed, functional=functional, **more)
    if mode == "auto":
        return _auto(
            plan_auto(prog, tgt, double_buffer=double_buffer),
            tgt,
            inputs,
            seed,
            functional=functional,
            **more,
        )
    raise UserError(f"sync mode {mode!r}: expected 'manual' or 'auto'")


def _pipes(*runs) -> list[str]:
    """The pipe keys of both runs (``PIPE_V``, or ``AIV0 PIPE_V`` on a chip kernel), by
    unit, then in pipe order."""
    seen = set()
    for r in runs:
        if r.result is not None:
            seen |= set(r.metrics()["pipes"])

    def key(k):
        unit, _, pipe = k.rpartition(" ")
        return unit, PIPES.index(pipe) if pipe in PIPES else len(PIPES), pipe

    return sorted(seen, key=key)


def _frame(c: Comparison) -> pd.DataFrame:
    m, a = c.manual.metrics(), c.auto.metrics()
    rows = [("total_cycles", m["total_cycles"], a["total_cycles"])]
    for p in _pipes(c.manual, c.auto):
        rows.append(
            (
                f"busy_cycles[{p}]",
                m["pipes"].get(p, 0) if m["total_cycles"] is not None else None,
                a["pipes"].get(p, 0) if a["total_cycles"] is not None else None,
            )
        )
    for key in ("syncs", "barriers", "full_barriers"):
        rows.append((key, m[key], a[key]))
    for buf in sorted(set(m["peak_bytes"]) | set(a["peak_bytes"])):
        rows.append(
            (f"peak_bytes[{buf}]", m["peak_bytes"].get(buf, 0), a["peak_bytes"].get(buf, 0))
        )
    rows.append(("races", m["races"], a["races"]))
    df = pd.DataFrame(rows, columns=["metric", "manual", "auto"]).set_index("metric")
    return df.astype("Int64")


def _json(c: Comparison) -> dict:
    out = {}
    for run in (c.manual, c.auto):
        out[run.mode] = run.metrics()
    for run in (c.manual, c.auto):
        if run.result is not None and run.result.sample:
            out[run.mode]["sample"] = dict(run.result.sample)
    out["manual"]["hand_placed_tiles"] = c.hand_placed
    plan = c.plan
    out["auto"]["placement"] = {name: list(v) for name, v in plan.addresses.items()}
    out["auto"]["double_buffered"] = list(plan.double_buffered)
    out["auto"]["inserted"] = {
        "syncs": plan.stats.pairs,
        "barriers": plan.stats.barriers,
        "fallback_barriers": plan.stats.fallback_barriers,
        "scalar_barriers": plan.stats.scalar_barriers,
        "loop_flags": plan.stats.loop_flags,
    }
    return out


def compare(
    program_or_kernel: Program | Kernel, target: str | Path | Target = "a2a3", **kw: Any
) -> pd.DataFrame:
    """Manual vs auto as a DataFrame: one row per metric (total_cycles,
    busy_cycles[PIPE], syncs = set/wait pairs, barriers, full_barriers,
    peak_bytes[BUFFER], races), columns ``manual`` and ``auto`` (``<NA>`` for a run that
    deadlocked). ``program_or_kernel`` may also be a ``Comparison``; ``kw`` go to
    ``run_comparison`` (``inputs``, ``seed``, ``double_buffer``)."""
    return run_comparison(program_or_kernel, target, **kw).frame()


def compare_json(
    program_or_kernel: Program | Kernel, target: str | Path | Target = "a2a3", **kw: Any
) -> dict:
    """``{"manual": {...}, "auto": {...}}``: total_cycles, pipes (busy cycles), syncs,
    waits, barriers, full_barriers, peak_bytes (buffer -> bytes), races, race_findings,
    deadlock; auto adds placement, double_buffered and the inserted sync counts."""
    return run_comparison(program_or_kernel, target, **kw).to_json()


def compare_figure(
    program_or_kernel: Program | Kernel, target: str | Path | Target = "a2a3", **kw: Any
) -> Figure:
    """The buffer occupancy maps (cycle x byte address) and pipeline Gantts of both runs."""
    fig_kw = {k: kw.pop(k) for k in ("title",) if k in kw}
    return run_comparison(program_or_kernel, target, **kw).figure(**fig_kw)


def format_compare(df: pd.DataFrame) -> str:
    """The comparison table as text, with an ``auto - manual`` column."""

    def cell(v):
        return "-" if v is None or pd.isna(v) else f"{int(v):,}"

    rows = [("metric", "manual", "auto", "auto - manual")]
    for metric, r in df.iterrows():
        m, a = r["manual"], r["auto"]
        d = "-" if pd.isna(m) or pd.isna(a) else f"{int(a) - int(m):+,}"
        rows.append((str(metric), cell(m), cell(a), d))
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"{r[0]:<{w[0]}}  {r[1]:>{w[1]}}  {r[2]:>{w[2]}}  {r[3]:>{w[3]}}" for r in rows]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)
