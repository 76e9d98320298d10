"""Import the Chrome trace of pto-isa's Perf-Sim into the trace schema, for comparison.

Perf-Sim (timing-model.md §10) writes one process per core and one thread per stage,
named like ``[AIC-0] MTE2`` (the cube unit of core 0) or ``[AIC-0/AIV-1] VEC`` (vector
sub-block 1 of core 0). Each instruction is a complete slice named
``OPCODE(RxC,dtype):seq`` with ``ts``/``dur`` in cycles and ``args`` holding its
``signal_event`` and ``wait_events`` (``;``-separated). Flow arrows (``ph: "s"/"f"``)
repeat those dependencies and are not needed.

Mapping into the schema:

* unit: ``AIC``, or ``AIV<n>`` from the ``AIV-<n>`` part (a stage name ending in ``_1``
  is sub-block 1); core from ``AIC-<n>``;
* pipe: Scalar -> PIPE_S, MTE1 -> PIPE_MTE1, MTE2 / MTE2_AIC / MTE2_AIV -> PIPE_MTE2,
  MTE3 -> PIPE_MTE3, VEC -> PIPE_V, CUBE -> PIPE_M, FIXP -> PIPE_FIX;
* opcode, ``operands`` (the ``RxC,dtype`` text) and ``id`` (the sequence number) from
  the slice name; kind ``scalar`` on PIPE_S, else ``op``;
* events as flags named ``E<n>``: ``records`` = the signal event, ``waits`` = the wait
  events, so ``sim.trace.flags`` pairs them like our own flags;
* ``dispatch_cycle`` = ``start_cycle``; the other columns take their defaults.
"""

from __future__ import annotations

import re

import pandas as pd

from sim.base.errors import UserError
from sim.trace.frame import normalize

__all__ = ["from_perfsim", "parse_thread", "STAGE_PIPES"]

STAGE_PIPES = {
    "SCALAR": "PIPE_S",
    "MTE1": "PIPE_MTE1",
    "MTE2": "PIPE_MTE2",
    "MTE2_AIC": "PIPE_MTE2",
    "MTE2_AIV": "PIPE_MTE2",
    "MTE3": "PIPE_MTE3",
    "VEC": "PIPE_V",
    "CUBE": "PIPE_M",
    "FIXP": "PIPE_FIX",
    "FIXPIPE": "PIPE_FIX",
}
_VECTOR_STAGES = {"VEC", "MTE3", "MTE2_AIV"}
_THREAD = re.compile(r"^\[AIC-(\d+)(?:/AIV-(\d+))?\]\s*(\S+)$")
_NAME = re.compile(r"^(\w+)(?:\((.*)\))?(?::(\d+))?$")


def parse_thread(tid: str) -> tuple[int, str, str]:
    """``"[AIC-0/AIV-1] VEC"`` -> ``(0, "AIV1", "PIPE_V")``."""
    m = _THREAD.match(str(tid).strip())
    if not m:
        raise UserError(
            f"Perf-Sim trace: thread {tid!r}: expected '[AIC-<core>] <stage>' or "
            f"'[AIC-<core>/AIV-<n>] <stage>'"
        )
    core, aiv, stage = int(m.group(1)), m.group(2), m.group(3).upper()
    sub = None
    if stage.endswith("_1"):
        stage, sub = stage[:-2], "1"
    pipe = STAGE_PIPES.get(stage)
    if pipe is None:
        raise UserError(
            f"Perf-Sim trace: thread {tid!r}: unknown stage {stage!r}, expected one "
            f"of {', '.join(sorted(STAGE_PIPES))}"
        )
    if aiv is not None or sub is not None:
        unit = f"AIV{aiv if aiv is not None else sub}"
    else:
        unit = "AIV0" if stage in _VECTOR_STAGES else "AIC"
    return core, unit, pipe


def _events(text) -> str:
    parts = [p.strip() for p in str(text).replace(",", ";").split(";")]
    return ";".join(f"E{p}" for p in parts if p not in ("", "-1"))


def from_perfsim(events: list[dict]) -> pd.DataFrame:
    """The complete slices of a Perf-Sim Chrome trace as a trace DataFrame."""
    rows = []
    for n, ev in enumerate(e for e in events if e.get("ph") == "X"):
        core, unit, pipe = parse_thread(ev.get("tid", ""))
        m = _NAME.match(str(ev.get("name", "")).strip())
        opcode, operands, seq = (
            (m.group(1), m.group(2) or "", m.group(3)) if m else (ev.get("name", ""), "", None)
        )
        args = ev.get("args") or {}
        start, dur = int(ev.get("ts", 0)), int(ev.get("dur", 0))
        signal = args.get("signal_event", "")
        rows.append(
            {
                "id": int(seq) if seq is not None else n,
                "core": core,
                "unit": unit,
                "pipe": pipe,
                "kind": "scalar" if pipe == "PIPE_S" else "op",
                "opcode": opcode,
                "dispatch_cycle": start,
                "start_cycle": start,
                "end_cycle": start + dur,
                "duration_cycles": dur,
                "waits": _events(args.get("wait_events", "")),
                "records": _events(signal) if signal != "" else "",
                "operands": operands,
            }
        )
    return normalize(pd.DataFrame(rows))
