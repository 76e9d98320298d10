"""Write and read trace files, choosing the format by the file's suffix.

``.json`` is a Chrome Trace Event file (Perfetto, chrome://tracing; reading also accepts
pto-isa Perf-Sim traces), ``.csv`` a CSV table, ``.parquet`` a Parquet table.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from sim.base.atomic import atomic_path
from sim.base.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_trace", "read_trace", "SUFFIXES"]

SUFFIXES = (".json", ".csv", ".parquet")
# suffix -> (module, function): loaded when a file is written or read (they bring pandas,
# and ``ptosim`` reads SUFFIXES for its flags before it knows whether it writes a trace)
_WRITERS = {
    ".json": ("export_chrome", "write_chrome"),
    ".csv": ("export_tables", "write_csv"),
    ".parquet": ("export_tables", "write_parquet"),
}
_READERS = {
    ".json": ("import_chrome", "read_chrome"),
    ".csv": ("export_tables", "read_csv"),
    ".parquet": ("export_tables", "read_parquet"),
}


def _function(where: tuple):
    return getattr(importlib.import_module(f"sim.trace.{where[0]}"), where[1])


def _suffix(path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        raise UserError(
            f"trace file {str(path)!r}: unknown suffix {suffix or '(none)'!r}, "
            f"expected one of {', '.join(SUFFIXES)}"
        )
    return suffix


def write_trace(
    trace: pd.DataFrame, path: str | os.PathLike[str], *, kernel: str = "", target: str = ""
) -> Path:
    """Write ``trace`` to ``path`` as Chrome JSON, CSV or Parquet (by suffix).

    ``kernel`` and ``target`` are recorded in a Chrome file's ``otherData``; the tables
    hold only the trace columns.
    """
    suffix = _suffix(path)
    with atomic_path(path) as tmp:  # a failed write leaves an older file whole
        if suffix == ".json":
            _function(_WRITERS[suffix])(trace, tmp, kernel=kernel, target=target)
        else:
            _function(_WRITERS[suffix])(trace, tmp)
    return Path(path)


def read_trace(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a trace written by ``write_trace`` (or a Perf-Sim ``.json`` trace)."""
    suffix = _suffix(path)
    if not Path(path).is_file():
        raise UserError(f"trace file {str(path)!r}: no such file")
    return _function(_READERS[suffix])(path)
