"""Write and read trace files, choosing the format by the file's suffix.

``.json`` is a Chrome Trace Event file (Perfetto, chrome://tracing; reading also accepts
pto-isa Perf-Sim traces), ``.csv`` a CSV table, ``.parquet`` a Parquet table.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sim.base.atomic import atomic_path
from sim.base.errors import UserError
from sim.trace.export_chrome import write_chrome
from sim.trace.export_tables import read_csv, read_parquet, write_csv, write_parquet
from sim.trace.import_chrome import read_chrome

__all__ = ["write_trace", "read_trace", "SUFFIXES"]

SUFFIXES = (".json", ".csv", ".parquet")
_WRITERS = {".csv": write_csv, ".parquet": write_parquet}
_READERS = {".json": read_chrome, ".csv": read_csv, ".parquet": read_parquet}


def _suffix(path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(f"trace file {str(path)!r}: unknown suffix {suffix or '(none)'!r}, "
                        f"expected one of {', '.join(SUFFIXES)}")
    return suffix


def write_trace(trace: pd.DataFrame, path, *, kernel: str = "", target: str = "") -> Path:
    """Write ``trace`` to ``path`` as Chrome JSON, CSV or Parquet (by suffix).

    ``kernel`` and ``target`` are recorded in a Chrome file's ``otherData``; the tables
    hold only the trace columns.
    """
    suffix = _suffix(path)
    with atomic_path(path) as tmp:          # a failed write leaves an older file whole
        if suffix == ".json":
            write_chrome(trace, tmp, kernel=kernel, target=target)
        else:
            _WRITERS[suffix](trace, tmp)
    return Path(path)


def read_trace(path) -> pd.DataFrame:
    """Read a trace written by ``write_trace`` (or a Perf-Sim ``.json`` trace)."""
    suffix = _suffix(path)
    if not Path(path).is_file():
        raise UserError(f"trace file {str(path)!r}: no such file")
    return _READERS[suffix](path)
