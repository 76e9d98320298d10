"""Issued items: what the interpreter hands to the pipes, one per executed statement."""

from __future__ import annotations

__all__ = ["Issued", "OP", "SET", "WAIT", "BARRIER", "SCALAR"]

OP, SET, WAIT, BARRIER, SCALAR = "op", "set_flag", "wait_flag", "barrier", "scalar"


class Issued:
    """One dynamic instruction or sync statement bound for a pipe queue.

    ``cold`` / ``warm`` are its costs when it opens / continues a vector stream;
    ``flag`` is ``(src, dst, id)`` for set/wait items.
    """

    __slots__ = ("seq", "kind", "pipe", "opcode", "cold", "warm", "breaks", "flag",
                 "plan", "text", "source", "accesses", "dclock", "gm")

    def __init__(self, seq, kind, pipe, opcode="", cold=0, warm=0, breaks=False, flag=None,
                 plan=None, text="", source=""):
        self.seq = seq
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
        self.accesses = None      # bytes touched (race detection only)
        self.dclock = None        # dispatcher's vector clock at issue (race detection only)
        self.gm = None            # GM window (array key, rows, cols, strides ...) for an L2 model

    def label(self) -> str:
        where = f" ({self.source})" if self.source else ""
        return f"#{self.seq} {self.opcode or self.kind}{where}"
