"""One pipe of a unit: its in-order queue of dispatched items and its timing state.

``sim.engine.machine`` runs the items; this is what it keeps per pipe: the cycle the pipe
is free again (timed path), the vector stream state (cold, warm, restarting after a
barrier), the waits recorded with the next instruction, what it is blocked on (for a
deadlock report) and the events a barrier or the dispatcher wakes it with.
"""

from __future__ import annotations

from collections import deque

from sim.timing.plan import COLD

__all__ = ["Pipe"]


class Pipe:
    """One pipe's state and its queue of dispatched items.

    The queue holds three entries per item — the item, its sequence number less the
    previous queued item's, its dispatch cycle — and, with race checks, ``clocks`` the
    dispatcher's clock at issue. A dispatcher that nothing holds back queues its whole
    stream ahead of the pipes (a chip's units do): a tuple per item would be a
    garbage-collected object kept per instruction (72 bytes, rescanned by every full
    collection), a sequence number an int object (28), where the step from the previous
    one is a small int Python shares and the dispatch cycle the dispatcher's own."""

    __slots__ = (
        "name",
        "queue",
        "tail_seq",
        "head_seq",
        "clocks",
        "wake",
        "busy",
        "t",
        "last_end",
        "stream",
        "blocked",
        "pending_waits",
        "last_op_row",
        "drained",
        "resume",
    )

    queue: deque
    clocks: deque
    t: int | float  # a cycle (the SimPy clock's type)

    def __init__(self, name):
        self.name = name
        self.queue = deque()  # item, seq step, dispatch cycle of each dispatched item
        self.tail_seq = 0  # seq of the item queued last
        self.head_seq = 0  # seq of the item taken last
        self.clocks = deque()  # the dispatcher's vector clock at issue (race checks)
        self.wake = None  # event the idle process sleeps on
        self.busy = False
        self.t = 0  # cycle the pipe finished its last item (timed path)
        self.last_end = -1
        self.stream = COLD  # vector stream state: cold, warm, or restart after a barrier
        self.blocked = None  # (wait item, seq) at the head of the queue, while blocked
        self.pending_waits = []
        self.last_op_row = -1  # recorder offset of the last op row (its records grow)
        self.drained = None  # event for a PIPE_ALL barrier waiting on this pipe
        self.resume = None  # timed path: runs the queue on (a set it waited for fired)

    def head(self) -> tuple:
        """(item, seq, dispatch cycle) of the first queued item."""
        q = self.queue
        return q[0], self.head_seq + q[1], q[2]

    def drop_head(self) -> None:
        """Take the first queued item off (``head`` read it)."""
        q = self.queue
        q.popleft()
        self.head_seq += q.popleft()
        q.popleft()
