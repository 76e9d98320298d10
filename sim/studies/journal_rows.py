"""A sweep journal row's identity: what it is the row of, and whether a resumed sweep may
serve it.

A row is keyed by a hash of the kernel — the file's bytes and, for a ``.py`` kernel, the
modules of its directory tree it imports (``sim.kernel.files.local_modules``) — with the
parameters, target, mode, seed and simulator version (``sim.studies.sweep``). The journal
is a file anyone may edit, and ``build()`` may import helpers the file itself does not, so
a row also carries the configuration it claims (parameters, target and sync asked for),
the helper modules its run imported with their hashes, and a digest of its content:
``row_problem`` says why a row is not the configuration's own (then it is run again).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sim.studies.journal import LAUNCH, METRICS

__all__ = ["kernel_digest", "sources", "journal_row", "row_digest", "row_problem"]


def kernel_digest(path: str) -> str:
    """SHA-256 of the kernel file and, for a ``.py`` kernel, of the modules of its
    directory tree loaded so far (``sim.kernel.files.local_modules``: what the file
    imports; the caller has loaded it)."""
    h = hashlib.sha256(Path(path).read_bytes())
    for rel, digest in sources(path).items():
        h.update(f"\0{rel}\0{digest}".encode())
    return h.hexdigest()


def sources(path: str) -> dict:
    """The helper modules of a ``.py`` kernel loaded so far, with their hashes."""
    if not path.endswith(".py"):
        return {}
    from sim.kernel.files import local_modules

    return local_modules(path)


# what a journal row may hold besides its counts (busy_cycles[...], peak_bytes[...] too)
_ROW_FIELDS = {
    "target",
    "sync",
    "error",
    "warnings",
    "config",
    "params",
    "asked",
    "sources",
    "digest",
}


def row_digest(row: dict) -> str:
    body = {k: v for k, v in row.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=repr).encode()).hexdigest()[:20]


def journal_row(row: dict, c) -> dict:
    """``row`` as the journal keeps it: with the configuration it is for and a digest of
    its content (``row_problem`` checks both before a resumed sweep serves it)."""
    row = {
        **row,
        "config": c.key,
        "params": _plain_params(c.params),
        "asked": _asked(c),
    }
    return {**row, "digest": row_digest(row)}


def _asked(c) -> dict:
    """The configuration a row claims to be: its target and sync mode asked for, and its
    blocks per launch when the sweep gave them (rows of the sweeps without have none)."""
    asked = {"target": c.target, "sync": c.sync}
    if c.block_dim is not None:
        asked["block_dim"] = c.block_dim
    return asked


def _plain_params(params: dict) -> dict:
    return json.loads(json.dumps(params, default=repr))


def row_problem(row: dict, c, path: str) -> str | None:
    """Why the journal ``row`` found under ``c``'s key is not ``c``'s row (None: it is)."""
    if "digest" not in row or "params" not in row:
        return "was written without its configuration"
    if row["digest"] != row_digest(row):
        return "was changed after it was written (its digest does not match)"
    extra = sorted(
        k
        for k in row
        if k not in _ROW_FIELDS and k not in METRICS and k not in LAUNCH and not k.endswith("]")
    )
    if extra:
        return f"holds a column {extra[0]!r} no sweep row has"
    asked = row.get("asked")
    same = json.dumps(row["params"], sort_keys=True) == json.dumps(
        _plain_params(c.params), sort_keys=True
    )
    if not same or asked != _asked(c):
        claims = asked if isinstance(asked, dict) else {}
        blocks = f", block_dim {claims['block_dim']}" if "block_dim" in claims else ""
        return (
            f"claims parameters {row['params']}, target {claims.get('target')}{blocks} and "
            f"sync {claims.get('sync')}, not this configuration's"
        )
    for field, wanted in (("target", c.target), ("sync", c.sync)):
        if wanted is not None and row.get(field) not in (None, wanted):
            return f"ran {field} {row.get(field)}, not {wanted}"
    helpers = row.get("sources") or {}
    if not isinstance(helpers, dict):
        return "lists its helper modules in an unknown form"
    folder = Path(path).parent
    for rel, digest in helpers.items():
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            return f"lists a helper module {rel!r} outside the kernel's directory"
        try:
            now = hashlib.sha256((folder / rel).read_bytes()).hexdigest()
        except OSError:
            now = ""
        if now != digest:
            return f"was computed with another {rel} (changed since)"
    return None
