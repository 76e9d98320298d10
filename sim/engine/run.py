"""One simulation run: program + target + inputs -> Result."""

from __future__ import annotations

import pandas as pd

from sim.engine.execute import Interpreter
from sim.engine.limits import Limits, RunStopped
from sim.engine.machine import Machine
from sim.engine.races import RaceDetector
from sim.errors import DeadlockError, UserError
from sim.result import Result
from sim.target import load_target
from sim.trace.schema import COLUMNS, DTYPES

__all__ = ["simulate"]


def _frame(rows) -> pd.DataFrame:
    df = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    df = df.sort_values(["start_cycle", "id"], kind="stable").reset_index(drop=True)
    return df.astype(DTYPES)


def simulate(program, target="a2a3", *, inputs=None, functional=True, strict=True, seed=0,
             detail: str = "op", races: bool = False, ideal_sync: bool = False,
             infinite_bandwidth: bool = False, limits: Limits | None = None) -> Result:
    """Simulate ``program`` (a ``Program`` or a builder ``Kernel``) on ``target``.

    ``inputs`` maps GM argument names to numpy arrays (unbound ones get seeded random
    data) and scalar argument names to values. ``functional=False`` skips the numpy
    functional units (timing only). ``strict`` turns integer division by zero and
    out-of-range inputs into errors. Every executed instruction is verified against the
    target profile (once per distinct instruction and operand state). ``detail="cce"``
    adds a row per lowered CCE instruction (kind ``cce``) under each op row. ``races=True``
    checks every pair of unordered cross-pipe accesses to the same bytes (``Result.races``).
    ``ideal_sync=True`` satisfies every wait_flag at once and makes barriers free;
    ``infinite_bandwidth=True`` costs the bytes of DMA items 0 cycles, keeping their
    start-up latency (the what-if bounds of ``sim.whatif``). ``limits`` (``sim.engine.limits``)
    bounds the run by cycles and issued items and reports progress; a run it stops, a
    deadlock and a KeyboardInterrupt carry the trace recorded so far as ``.trace``.
    """
    if detail not in ("op", "cce"):
        raise UserError(f"detail: expected 'op' or 'cce', found {detail!r}")
    if hasattr(program, "program"):          # a builder Kernel
        inputs = {**program.inputs, **(inputs or {})}
        program = program.program()
    tgt = load_target(target)
    interp = Interpreter(program, tgt, inputs=inputs, functional=functional, strict=strict,
                         seed=seed, track_accesses=races)
    detector = RaceDetector() if races else None
    watched = limits is not None and limits.active
    machine = Machine(tgt, env=limits.environment() if watched else None, detail=detail == "cce",
                      races=detector, ideal_sync=ideal_sync, infinite_bandwidth=infinite_bandwidth)
    try:
        rows = machine.run(limits.stream(interp.issue()) if watched else interp.issue())
        if watched:
            limits.check()               # a run shorter than one check interval, too
    except (DeadlockError, RunStopped, KeyboardInterrupt) as e:
        e.trace = _frame(machine.rows)
        raise
    return Result(program.main.name, tgt, _frame(rows), dict(interp.gm), tuple(interp.warnings),
                  tuple(detector.finish()) if detector else ())
