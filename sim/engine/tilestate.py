"""What a unit knows of one tile while it runs: its address and valid region.

The interpreter keeps one per tile; control flow (subviews, ``treshape``) and the FIFO ops
(a popped tile lives in a slot of the consumer's reserved buffer) make new ones. It lives
apart from the interpreter so that every engine module that makes one imports it from here.
"""

from __future__ import annotations

__all__ = ["TileState"]


class TileState:
    """A tile's byte address in its buffer and its valid rows and columns (``None``: dynamic)."""

    __slots__ = ("addr", "rows", "cols")

    addr: int
    rows: int | None
    cols: int | None

    def __init__(self, addr: int, rows: int | None, cols: int | None) -> None:
        self.addr, self.rows, self.cols = addr, rows, cols
