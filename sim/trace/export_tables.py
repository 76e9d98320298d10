"""Tabular trace files: CSV (any tool) and Parquet (typed, compact; needs pyarrow).

Both hold exactly the schema columns, one row per trace row (after ``rank`` and ``launch``
for the trace of a run with ranks). Reading normalises the
result (``sim.trace.frame.normalize``): CSV loses the difference between an empty text
and a missing one, and a file written by another tool may lack columns.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sim.base.errors import UserError
from sim.trace.frame import normalize
from sim.trace.schema import COLUMNS, DTYPES, RANK_COLUMNS

__all__ = ["write_csv", "read_csv", "write_parquet", "read_parquet"]


def _prepare(path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _columns(trace: pd.DataFrame) -> list[str]:
    """The schema columns, after the ``rank`` / ``launch`` of a run with ranks."""
    return [c for c in RANK_COLUMNS if c in trace.columns] + list(COLUMNS)


def write_csv(trace: pd.DataFrame, path) -> Path:
    path = _prepare(path)
    trace[_columns(trace)].to_csv(path, index=False)
    return path


def read_csv(path) -> pd.DataFrame:
    text_cols = {c: "string" for c, t in DTYPES.items() if t != "int64"}
    try:
        df = pd.read_csv(path, dtype=text_cols, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not a trace CSV: {e}") from None
    return normalize(df)


def write_parquet(trace: pd.DataFrame, path) -> Path:
    path = _prepare(path)
    trace[_columns(trace)].to_parquet(path, index=False, engine="pyarrow")
    return path


def read_parquet(path) -> pd.DataFrame:
    return normalize(pd.read_parquet(path, engine="pyarrow"))
