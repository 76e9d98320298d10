"""The sweep journal on disk: ``OUT.journal`` beside a sweep's output, one JSON row per
finished configuration, appended as rows arrive so an interrupted sweep resumes.

The journal is a file the sweep makes and appends to, so it is never opened through a
symbolic link (a link planted at ``OUT.journal`` would have rows appended to wherever it
points): it is opened with ``O_NOFOLLOW`` and a link is refused in one line. It is also a
file a user may edit, so a row is taken only when it is well formed — a text ``config``
key, whole-number metrics, a text error — and any other row is skipped with a warning
naming its line (that configuration is simply run again).
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

from sim.base.errors import UserError

__all__ = ["writable", "read", "append", "METRICS", "LAUNCH"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_TEXT = ("target", "sync", "error", "config", "warnings")
# a row's counts: these, busy cycles per pipe and peak bytes per buffer
METRICS = ("total_cycles", "syncs", "barriers", "full_barriers", "races")
# the launch of a sweep with sampled waves: a count too
LAUNCH = ("blocks_simulated",)
_COUNT_FAMILIES = ("busy_cycles[", "peak_bytes[")


def _open(journal: Path, flags: int):
    try:
        fd = os.open(journal, flags | _NOFOLLOW, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP or journal.is_symlink():
            raise UserError(
                f"{journal}: is a symbolic link; the sweep journal is never written through "
                f"one (remove it, or write the sweep elsewhere with -o)"
            ) from None
        raise
    return os.fdopen(fd, "rb" if flags == os.O_RDONLY else "ab")


def writable(output) -> Path | None:
    """``OUTPUT.journal``, checked writable (with the output's folder) before anything runs."""
    if output is None:
        return None
    journal = Path(f"{output}.journal")
    try:
        journal.parent.mkdir(parents=True, exist_ok=True)
        _open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT).close()
    except OSError as e:
        raise UserError(f"{output}: cannot write the sweep's output there ({e.strerror})") from None
    return journal


def read(journal) -> dict:
    """Config key -> row of the configurations already run. A torn last line (the sweep
    was killed mid-write) is skipped and ended, so appends start on a line of their own;
    a malformed row is skipped with a warning."""
    if journal is None or not journal.is_file():
        return {}
    try:
        with _open(journal, os.O_RDONLY) as f:
            text = f.read().decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(
            f"{journal}: not a sweep journal (binary data at byte {e.start}); "
            f"delete it, or write the sweep elsewhere with -o"
        ) from None
    except OSError as e:
        raise UserError(f"{journal}: cannot read the sweep journal ({e.strerror})") from None
    if text and not text.endswith("\n"):
        append_text(journal, "\n")
    done = {}
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a torn line
            continue
        if not isinstance(row, dict) or "config" not in row:
            continue
        why = malformed(row)
        if why is not None:
            print(
                f"ptosim: warning: {journal}:{n}: row skipped ({why}); "
                f"its configuration is run again",
                file=sys.stderr,
            )
            continue
        done[row["config"]] = row
    return done


def malformed(row: dict) -> str | None:
    """Why ``row`` (a JSON object with a ``config``) cannot be a sweep row, or None: its
    text fields must be text, its counts whole numbers (other fields are not looked at)."""
    for name, value in row.items():
        if value is None:
            continue
        if name in _TEXT:
            if not isinstance(value, str):
                return f"{name} is {_kind(value)}, expected text"
        elif name in METRICS or name in LAUNCH or name.startswith(_COUNT_FAMILIES):
            if isinstance(value, bool) or not isinstance(value, int):
                return f"{name} is {_kind(value)}, expected a whole number"
    if row["config"] is None:
        return "config is null, expected text"
    return None


def _kind(value) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"{json.dumps(value)}"


def append(journal, row: dict) -> None:
    """Add a finished configuration's row (nothing without a journal)."""
    if journal is not None:
        append_text(journal, json.dumps(row) + "\n")


def append_text(journal: Path, text: str) -> None:
    try:
        with _open(journal, os.O_WRONLY | os.O_APPEND) as f:
            f.write(text.encode())
    except OSError as e:
        raise UserError(f"{journal}: cannot write the sweep journal ({e.strerror})") from None
