"""Read a Chrome Trace Event JSON file back into a trace DataFrame.

Two producers are understood. Files written by ``sim.trace.export_chrome`` carry every
schema column in each slice's ``args`` and come back row for row. Anything else is read
as a pto-isa Perf-Sim trace (``sim.trace.import_perfsim``). Both the object form
(``{"traceEvents": [...]}``) and the bare array form of the format are accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from sim.base.errors import UserError
from sim.trace.frame import normalize
from sim.trace.import_perfsim import from_perfsim
from sim.trace.schema import COLUMNS, RANK_COLUMNS

__all__ = ["from_chrome", "read_chrome"]


def _events(obj) -> list[dict]:
    if isinstance(obj, dict):
        obj = obj.get("traceEvents")
    if not isinstance(obj, list):
        raise UserError(
            "Chrome trace: expected a JSON array of events or an object with 'traceEvents'"
        )
    return obj


def _is_ours(slices: list[dict]) -> bool:
    # a trace written before the block column has every other one
    need = set(COLUMNS) - {"block"}
    return bool(slices) and all(need <= set(e.get("args") or {}) for e in slices)


def from_chrome(obj) -> pd.DataFrame:
    """A trace from parsed Chrome-trace JSON (ours or Perf-Sim's)."""
    events = _events(obj)
    slices = [e for e in events if e.get("ph") == "X"]
    if _is_ours(slices):
        cols = [c for c in RANK_COLUMNS if c in slices[0]["args"]] + list(COLUMNS)
        rows = [{c: e["args"][c] for c in cols if c in e["args"]} for e in slices]
        return normalize(pd.DataFrame(rows))
    return from_perfsim(events)


def read_chrome(path) -> pd.DataFrame:
    """``from_chrome`` of the JSON file at ``path``."""
    try:
        obj = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not valid JSON: {e}") from None
    return from_chrome(obj)
