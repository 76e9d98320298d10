"""Issued items: what the interpreter hands to the pipes, one per executed statement."""

from __future__ import annotations

__all__ = ["Issued", "OP", "SET", "WAIT", "BARRIER", "SCALAR"]

OP, SET, WAIT, BARRIER, SCALAR = "op", "set_flag", "wait_flag", "barrier", "scalar"


class Issued:
    """An instruction or sync statement bound for a pipe queue.

    ``cold`` / ``warm`` are its costs when it opens / continues a vector stream;
    ``flag`` is ``(src, dst, id)`` for set/wait items. An item holds nothing dynamic
    unless races are tracked (``accesses``) or an L2 follows GM
    addresses (``gm``; such items are copies), so the interpreter hands the same
    object over for every execution of a statement in the same tile state; the machine
    numbers the items as they arrive. ``sid`` is its static trace row, set when recorded.
    """

    __slots__ = (
        "kind",
        "pipe",
        "opcode",
        "cold",
        "warm",
        "breaks",
        "flag",
        "plan",
        "text",
        "source",
        "accesses",
        "sid",
        "gm",
        "xfer",
    )

    def __init__(
        self,
        kind,
        pipe,
        opcode="",
        cold=0,
        warm=0,
        breaks=False,
        flag=None,
        plan=None,
        text="",
        source="",
    ):
        self.kind = kind
        self.pipe = pipe
        self.opcode = opcode
        self.cold = cold
        self.warm = warm
        self.breaks = breaks
        self.flag = flag
        self.plan = plan
        self.text = text
        self.source = source
        self.accesses = None  # bytes touched (race detection only)
        self.sid = None
        self.gm = None  # GM window of a TLOAD / TSTORE (per execution, for an L2)
        # whether the chip's GM model costs it (``TransferOrder.transfer``), once known:
        # an item lives in one run, whose GM paths do not change
        self.xfer = None

    def copy(self) -> Issued:
        """A fresh item with the same static content (for per-execution race data)."""
        return Issued(
            self.kind,
            self.pipe,
            self.opcode,
            self.cold,
            self.warm,
            self.breaks,
            self.flag,
            self.plan,
            self.text,
            self.source,
        )

    def label(self, seq: int) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"#{seq} {self.opcode or self.kind}{where}"
