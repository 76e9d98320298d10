"""One simulation run: program + target + inputs -> Result."""

from __future__ import annotations

import gc
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

import numpy as np

from sim.base.errors import DeadlockError, SimulationError, UserError
from sim.engine.access import GmShared
from sim.engine.chip import Chip
from sim.engine.launch import free_set, launch_cycles
from sim.engine.limits import Limits, RunInterrupted, RunStopped
from sim.engine.mode import prepare
from sim.engine.plausible import FILLS, PLAUSIBLE_KEY, index_bounds
from sim.engine.ranks import RanksResult, rank_inputs, run_ranks
from sim.engine.record import TRACE_MODES
from sim.engine.result import Result
from sim.engine.scan import kept
from sim.isa.program import KernelLike, Program, Scalar
from sim.target import load_target

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path
    from typing import Any

    from sim.target.model import Target


__all__ = ["simulate", "prepared", "race_warning", "idle_warning"]


@contextmanager
def _frozen_gc():
    """Keep the collector off the objects alive before the run (the program, a kernel's
    millions of statements): a run creates few long-lived objects, so rescanning those
    on every full collection is pure overhead (~25 % of a 10^5-instruction run)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _numpy_errors(functional: bool):
    """The functional units' numpy error state, set once for the run: floating-point
    overflow and invalid results are data, not errors (``sim.functional.arith``)."""
    return np.errstate(all="ignore") if functional else nullcontext()


def simulate(
    program: Program | KernelLike,
    target: str | Path | Target | None = None,
    *,
    inputs: dict[str, Any] | list[dict[str, Any]] | str | None = None,  # arrays by name
    functional: bool = True,
    strict: bool = True,
    seed: int = 0,
    fill: str = "random",
    detail: str = "op",
    races: bool | str = False,
    ideal_sync: bool = False,
    infinite_bandwidth: bool = False,
    trace: str = "full",
    sync: str | None = None,
    limits: Limits | None = None,
    block_dim: int | None = None,
    l2: bool | None = None,
    free: Iterable[str] | str | None = None,
    ranks: int | None = None,
    comm_context: str | None = None,
    streams: Sequence[Program | KernelLike] = (),
    sample_waves: int | None = None,
) -> Result | RanksResult:
    """Simulate ``program`` (a ``Program`` or a builder ``Kernel``) on ``target`` (a name,
    a model directory or a loaded ``Target``; None: the one the module's attributes name,
    ``pto.target_arch`` / ``pto.device-spec``, as ``ptosim run`` picks it, else a2a3).

    ``inputs`` maps GM argument names to numpy arrays (unbound ones get seeded random
    data) and scalar argument names to values. ``fill="plausible"`` (or
    ``inputs="plausible"``) draws the unbound integer arguments the kernel uses as indices
    or window offsets inside the ranges it uses them in (``sim.engine.plausible``).
    ``functional=False`` skips the numpy functional units (timing only). ``strict`` turns integer
    division by zero and out-of-range inputs into errors. Every executed instruction is verified
    against the target profile (once per distinct instruction and operand state). ``detail="cce"``
    adds a row per lowered CCE instruction (kind ``cce``) under each op row.

    ``sync`` picks the synchronisation mode (``sim.engine.mode``). By default a kernel with
    no set/wait flag, event or pipe barrier in any function runs in ``"auto"`` mode (sync
    inserted, unaddressed tiles placed and calls inlined as the toolchain's auto mode
    does) and one with explicit sync runs as written (``"manual"``); ``"ideal"`` runs the
    default mode's program with free synchronisation. ``Result.mode`` says which ran.
    ``races=True`` checks every pair of unordered cross-pipe accesses to the same bytes
    (``Result.races``); ``races="manual"`` does so only when the kernel runs as written,
    and then adds a warning with the count and the first finding to ``Result.warnings``.
    ``ideal_sync=True`` satisfies every wait_flag at once and makes barriers free;
    ``infinite_bandwidth=True`` costs the bytes of DMA items 0 cycles, keeping their
    start-up latency (the what-if bounds of ``sim.whatif``). ``trace`` selects the rows
    kept: ``"full"`` (default), ``"ops"`` (no set_flag / wait_flag / barrier rows) or
    ``"none"`` (no rows; ``total_cycles`` and ``pipes`` still work) — the lighter modes are
    for sweeps. ``limits`` (``sim.engine.limits``) bounds the run by cycles and issued items
    and reports progress; a run it stops, a deadlock and a KeyboardInterrupt (then a
    ``sim.engine.limits.RunInterrupted``) carry the trace recorded so far as ``.trace``.
    ``block_dim`` blocks run the kernel SPMD (a builder ``Kernel`` brings its own;
    default 1), one per core at a time: past the target's cores they run in waves, a
    block on the first free core (``sim.engine.waves``; ``Result.blocks`` says which
    block ran on which core and when); ``l2`` overrides the target's ``[gm.l2] enabled``
    switch. ``free`` names shared mechanisms to treat as free
    (``sim.engine.launch.MECHANISMS``: the shared GM channels, the GM write ports, the
    first-touch page walks, the launch overhead), the what-ifs of ``sim.whatif``.
    ``Result.total_cycles`` is device time; ``Result.launch_cycles`` the fixed launch
    overhead beside it (``with_launch_cycles`` their sum). ``sample_waves=k`` (k >= 1, timing
    only) simulates only the first k waves of a launch of more blocks than cores and
    estimates its device time from their steady block time (``sim.engine.waves``;
    ``Result.sample`` says so, and the other figures are of the blocks that ran): a long
    launch of alike blocks in a fraction of the time, within a few per cent.

    ``ranks=N`` runs N NPUs, each a whole chip running the kernel, joined by the target's
    ``[comm]`` link model (``sim.engine.ranks``, docs/concepts/ranks.md); ``inputs`` may then
    be a list of one dict per rank, and the result is a ``RanksResult`` (a ``Result`` per
    rank). ``comm_context`` names the GM argument (int64 words) that gets each rank's
    communication context (``sim.isa.comm.context_words``: rank id, rank count, the ranks'
    window bases), which kernels read to address their peers. ``streams`` are further
    kernels launched with this one on every rank (a compute and a communication kernel on the
    host's two streams), sharing its GM (``RanksResult.streams``); ``races=True`` checks
    races across ranks (``sim.engine.rankraces``, ``RanksResult.races``). Without ``ranks`` the run
    is one chip, as always.
    """
    if detail not in ("op", "cce"):
        raise UserError(f"detail: expected 'op' or 'cce', found {detail!r}")
    if races not in (True, False, "manual"):
        raise UserError(f"races: expected True, False or 'manual', found {races!r}")
    if trace not in TRACE_MODES:
        raise UserError(f"trace: expected one of {', '.join(TRACE_MODES)}, found {trace!r}")
    per_rank = None
    if isinstance(inputs, (list, tuple)):  # one dict per rank
        if ranks is None:
            raise UserError("inputs: a list gives one dict per rank; pass ranks=N with it")
        per_rank, inputs = list(inputs), None
    if isinstance(inputs, str):  # inputs="plausible": no arrays given, the fill named
        fill = inputs
        inputs = None
    if fill not in FILLS:
        raise UserError(f"fill: expected one of {', '.join(FILLS)}, found {fill!r}")
    if isinstance(program, KernelLike):  # a builder Kernel
        inputs = {**program.inputs, **(inputs or {})}
        if block_dim is None:
            block_dim = program.block_dim
        program = program.program()
    if not isinstance(program, Program):
        hint = " (a path: sim.parse_file reads a .pto file)" if isinstance(program, str) else ""
        raise UserError(
            f"simulate: expected a sim.Kernel or a parsed Program, found "
            f"{type(program).__name__}{hint}"
        )
    if block_dim is None:
        block_dim = 1
    if isinstance(block_dim, bool) or not isinstance(block_dim, int):
        raise UserError(f"block_dim: expected a positive integer, found {block_dim!r}")
    check_sample(sample_waves, functional, ranks)
    _check_input_names(program, inputs, streams)
    for d in per_rank or ():
        _check_input_names(program, d if isinstance(d, dict) else None, streams)
    if target is None:  # attributes that name two targets are refused here, as by run
        from sim.frontend.targets import resolve_target

        target = resolve_target(program)
    tgt = load_target(target)
    freed = free_set(free)
    _static_check(program, tgt, inputs or {})
    watched = limits if limits is not None and limits.active else None
    # the auto passes' progress, for a progress object that shows it (sim.cli.progress)
    tick = getattr(watched.progress, "preparing", None) if watched is not None else None
    prep = prepared(program, tgt, sync, tick)
    check = races is True or (races == "manual" and prep.mode == "manual")
    # with the race check, the run first takes the fast timed path and shows from its
    # dispatch logs that the detector would find nothing (sim.engine.racefree); only when
    # that does not go through does it run again with the detector, whose findings count
    prove = check and not (ideal_sync or prep.ideal_sync)

    if fill == "plausible":  # index-like GM inputs inside their ranges (sim.engine.plausible)
        inputs = {**(inputs or {}), PLAUSIBLE_KEY: index_bounds(prep.program)}
    if (comm_context is not None or streams) and ranks is None:
        raise UserError("comm_context, streams: a run of these needs ranks=N")
    if ranks is not None:
        more = []
        for extra in streams:
            bdim = 1
            if isinstance(extra, KernelLike):
                inputs = {**extra.inputs, **(inputs or {})}
                bdim = extra.block_dim
                extra = extra.program()
            if not isinstance(extra, Program):
                raise UserError(f"streams: expected kernels, found {type(extra).__name__}")
            p2 = prepared(extra, tgt, sync)
            more.append((p2.program, bdim, p2.mode))
        modes = (prep.mode, *(m for _, _, m in more))
        return run_ranks(
            prep.program,
            tgt,
            ranks,
            rank_inputs(
                ranks if isinstance(ranks, int) else 0, inputs or {}, per_rank, comm_context
            ),
            block_dim=block_dim,
            seed=seed,
            warnings=(*program.warnings, *prep.warnings),
            mode=prep.mode,
            freed=freed,
            limits=watched,
            functional=functional,
            strict=strict,
            detail=detail == "cce",
            ideal_sync=ideal_sync or prep.ideal_sync,
            infinite_bandwidth=infinite_bandwidth,
            l2=l2,
            trace=trace,
            streams=tuple(more),
            # signals between ranks are always the kernel's own: checked whenever races are
            check_races=races is not False,
            # each rank's chip as one chip is checked: "manual" only where it runs as written
            chip_races=tuple(races is True or (races == "manual" and m == "manual") for m in modes),
            race_warning=race_warning if races == "manual" else None,
        )

    def run(detect: bool, gm_summary: bool = False):
        chip = Chip(
            prep.program,
            tgt,
            block_dim=block_dim,
            inputs=inputs,
            functional=functional,
            strict=strict,
            seed=seed,
            detail=detail == "cce",
            races=detect,
            race_logs=prove and not detect,
            gm_summary=gm_summary,
            ideal_sync=ideal_sync or prep.ideal_sync,
            infinite_bandwidth=infinite_bandwidth,
            l2=l2,
            free=freed,
            trace=trace,
            limits=watched,
            sample_waves=sample_waves,
        )
        try:
            with _frozen_gc(), _numpy_errors(functional):
                recording = chip.run()
                if watched is not None:
                    watched.check()  # a run shorter than one check interval, too
        except (DeadlockError, RunStopped) as e:
            # the trace so far travels with the error (read by getattr)
            e.trace = chip.recording().frame()  # type: ignore[union-attr]
            raise
        except KeyboardInterrupt:
            # an interrupt's too, built only when read: a Ctrl-C does not wait for it
            raise RunInterrupted(chip.recording()) from None
        return chip, recording

    try:
        # one unit alone first keeps only which pipes touch each GM array: where two
        # touch one and one writes, the run stops there and runs again listing them
        chip, recording = run(check and not prove, gm_summary=prove)
    except GmShared:
        if watched is not None:
            watched.again()
        chip, recording = run(False)
    with _frozen_gc():  # the run's objects, which the proof only reads
        proven = prove and chip.race_free()
    if prove and not proven:
        if watched is not None:
            watched.again()
        chip, recording = run(True)
    found = chip.races()
    # the front end's first: attribute keys the simulator does not model (attr_keys)
    warnings = (*program.warnings, *prep.warnings, *chip.warnings)
    if found and races == "manual":
        warnings += (race_warning(found),)
    if not _ran_tile_instruction(recording):
        warnings += (idle_warning(program, inputs),)
    warnings += _entry_warning(program)
    sample = chip.waves.estimate()
    if sample_waves is not None and not sample:
        warnings += (
            f"sample_waves={sample_waves}: {block_dim} blocks on {chip.waves.cores} cores leave "
            f"no full wave out past the first {sample_waves} and the last; every block ran "
            f"(the device time is exact)",
        )
    if sample and check:
        warnings += (
            f"sampled launch: races were checked in the {sample['blocks_simulated']} simulated "
            f"blocks only, not in the {block_dim - sample['blocks_simulated']} estimated",
        )
    return Result(
        program.main.name,
        tgt,
        recording,
        dict(chip.gm_state[0]),
        warnings,
        found,
        mode=prep.mode,
        mode_note=prep.note,
        block_dim=block_dim,
        memory=chip.gm.summary(recording.end) if chip.gm_used else {},
        races_checked=check,
        races_by=("proof" if proven else "detector") if check else "",
        functional=functional,
        blocks=tuple(chip.waves.table()),
        cores=chip.waves.cores,
        dispatch_cycles=chip.waves.latency,
        launch_cycles=launch_cycles(tgt, freed),
        sample=sample,
    )


def check_sample(sample_waves, functional: bool, ranks) -> None:
    """``sample_waves``: a positive integer, in a timing-only run of one chip (the blocks
    not simulated compute nothing)."""
    if sample_waves is None:
        return
    if isinstance(sample_waves, bool) or not isinstance(sample_waves, int) or sample_waves < 1:
        raise UserError(
            f"sample_waves: expected the number of waves to simulate, an integer >= 1, "
            f"found {sample_waves!r}"
        )
    if functional:
        raise UserError(
            "sample_waves: the blocks not simulated would compute no data; sample a "
            "timing-only run (functional=False, ptosim run --timing-only)"
        )
    if ranks is not None:
        raise UserError("sample_waves: not with ranks (each rank's launch runs in full)")


def _entry_warning(program) -> tuple:
    """A module with several kernel functions runs one of them (``Program.entry``: the one
    marked ``pto.entry``, else the first public function nothing calls, unless chosen): the
    run says which, so that a second kernel is never skipped without a word."""
    if not isinstance(program, Program):
        return ()
    # kernels() walks every body for calls: only when two functions could be kernels
    if sum(1 for f in program.functions if f.body and not f.private) < 2:
        return ()
    kernels = program.kernels()
    if len(kernels) < 2:
        return ()
    return (
        f"{program.main.name}: the module has {len(kernels)} kernel functions "
        f"({', '.join('@' + k for k in kernels)}); this run is of @{program.main.name} "
        f"(pick one with --func NAME, or attrs.evolve(program, entry=NAME))",
    )


def _check_input_names(program, inputs, streams=()) -> None:
    """Every name of ``inputs`` is an argument of a function the run starts units in (the
    entry, and a two-function kernel's peer; with ``streams``, theirs too: the kernels of a
    rank share its GM): a misspelt name would leave the argument it meant on seeded random
    data without a word."""
    if not inputs:
        return
    from sim.engine.placement import root_functions

    programs = [program, *(s.program() if isinstance(s, KernelLike) else s for s in streams)]
    args = {
        a.name: a
        for p in programs
        if isinstance(p, Program)
        for f in root_functions(p)
        for a in f.args
    }
    unknown = [n for n in inputs if n not in args]
    if unknown:
        pointers = ", ".join(n for n, a in args.items() if type(a) is not Scalar) or "none"
        scalars = ", ".join(n for n, a in args.items() if type(a) is Scalar) or "none"
        raise UserError(
            f"inputs: {program.main.name} has no argument {unknown[0]!r} (GM pointer "
            f"arguments: {pointers}; scalar arguments: {scalars})"
        )


def prepared(program, tgt, sync: str | None = None, tick=None):
    """The program mode ``sync`` runs (``sim.engine.mode.prepare``), kept with the program:
    the auto passes cost several times the run they prepare, and ``ptosim check`` places
    the same program before a ``--races`` run simulates it."""
    return kept(program, ("prepared", tgt, sync), lambda: prepare(program, tgt, sync, tick))


def _static_check(program, tgt, inputs: dict) -> None:
    """The check ``ptosim check`` makes (``sim.placement.bounds``), before a run in any
    mode: a hand address no buffer holds, a negative scalar argument that sizes or bounds
    something. Kept with the program: a builder kernel's walk is not repeated per run."""
    from sim.placement.bounds import (
        negative_arguments,
        sized_arguments,
        static_problems,
        view_spans,
    )

    problems = kept(program, ("static problems", tgt), lambda: static_problems(program, tgt))
    # only the entry's integer scalar arguments can break the argument rules, and only
    # where they size or bound something: the walk for that waits until one is given
    # (a builder kernel's inputs are its GM arrays)
    given = {a.name for a in program.main.args if type(a) is Scalar} & {
        n for n, v in inputs.items() if type(v) is int
    }
    if not problems and given:
        sized = kept(program, ("sized arguments",), lambda: sized_arguments(program))
        scalars = {n: v for n, v in inputs.items() if type(v) is int and n in sized}
        if scalars:
            problems = view_spans(program, scalars) + negative_arguments(sized, scalars)
    if problems:
        more = (
            f" (and {len(problems) - 1} more: ptosim check lists them)" if len(problems) > 1 else ""
        )
        raise SimulationError(f"{problems[0][2]}{more}")  # as the run-time check raises


def race_warning(found) -> str:
    """The one-line warning of a manual run with races: the count and the first."""
    n = len(found)
    return (
        f"warning: {n} race{'s' * (n != 1)}: the kernel synchronises by hand (manual "
        f"mode) and leaves accesses unordered, so its cycles may be below what hardware "
        f"would run; first: {found[0].message} (ptosim check --races lists them all; "
        f"--sync auto inserts the toolchain's synchronisation)"
    )


def _ran_tile_instruction(recording) -> bool:
    """Whether any unit ran a tile instruction (an ``op`` row; without rows, its count).
    Rows are interned by their static part as they are recorded, so the statics say it
    without reading the rows."""
    for r in getattr(recording, "recorders", (recording,)):
        if r.ops if r.mode == "none" else any(s[1] == "op" for s in r.statics):
            return True
    return False


def idle_warning(program, inputs) -> str:
    """The warning of a run that executed no tile instruction: its cycles measure no
    work. Loops bounded by scalar arguments (0 when a value was defaulted) are the usual
    cause, so the values the run had are named."""
    from sim.isa.program import Scalar

    given = [
        f"%{a.name} = {inputs[a.name]}"
        for a in program.main.args
        if isinstance(a, Scalar) and inputs and a.name in inputs
    ]
    from sim.isa.program import Instr, walk

    if not any(isinstance(st, Instr) for f in program.functions for st in walk(f.body)):
        return "warning: the kernel has no tile instruction: its cycles measure no work"
    if not given:
        return "warning: the run executed no tile instruction: its cycles measure no work"
    return (
        f"warning: the run executed no tile instruction: its cycles measure no work; "
        f"with {', '.join(given)} the kernel's loops and branches skip every one (its "
        f"scalar arguments often bound them: pass other values with --arg NAME=VALUE)"
    )
