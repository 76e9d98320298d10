"""Vector clocks: the happens-before bookkeeping shared by the dynamic race detector and
the static sync-insertion pass. A clock maps a pipe (or the dispatcher) to the number of
items it has completed; ``join`` is the element-wise maximum."""

from __future__ import annotations

__all__ = ["join"]


def join(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        if out.get(k, 0) < v:
            out[k] = v
    return out
