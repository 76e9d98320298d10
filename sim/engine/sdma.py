"""A rank's SDMA engines: the copies of ``TPUT_ASYNC`` / ``TGET_ASYNC`` (communication.md
§4, §5.5).

The AIV only posts work: it writes descriptors and rings doorbells (``post_cycles`` on the
scalar unit), later polls a completion record (``poll_cycles``); the copies run on the
chip's SDMA queues, independently of the core. ``[comm.sdma]`` of machine.toml has the
figures and their fit.

* **Sessions.** A session (``build_async_session``) owns ``queue_num`` queues of its channel
  group (one of ``channels``); a post splits its bytes into descriptors of ``block_bytes``
  assigned round-robin to the session's queues (§5.5 step 1).
* **A descriptor** starts when the engine has taken the post (``latency_cycles`` after the
  posting ends) and its queue is free, and streams ``bytes / bandwidth`` cycles. A post is
  complete when its last descriptor is; **quiet semantics** (§5.5): its event completes no
  earlier than every earlier post of the session.
* **Wait** holds the issuing unit until the event's completion, then one poll; **Test**
  answers whether the completion has passed, for one poll.
* At most ``max_outstanding_posts`` posts of a session may be incomplete: a further post
  first waits for the oldest (the flag-payload slot it reuses, §5.5 step 2).

ASSUMPTION (communication.md §11: SDMA timing beyond §10.1 is [silent]): queues are the only
resource that times a copy; the data moves when the post issues (a correct kernel reads it
only after the Wait). Its bytes still load the source rank's and the destination rank's GM
models (HBM, L2, write queue) from the cycle each descriptor starts
(``sim.engine.remote.sdma_traffic``), so other traffic of those ranks waits for them; the
copy itself is not slowed by that traffic (its 20.66 GB/s are far below a rank's HBM).
"""

from __future__ import annotations

from collections import deque

from sim.base.errors import UserError

__all__ = ["Sdma", "Session"]


class Session:
    """One ``build_async_session``: its queues, descriptor size and posts in flight."""

    __slots__ = ("group", "queues", "block_bytes", "next_queue", "last", "posts", "limit")

    def __init__(self, group: int, queues: int, block_bytes: int, limit: int):
        self.group, self.queues, self.block_bytes = group, queues, block_bytes
        self.next_queue = 0
        self.last = 0.0  # completion of the latest post (quiet semantics)
        self.posts: deque = deque()  # completions of the posts in flight, oldest first
        self.limit = limit


class Sdma:
    """The SDMA queues of one rank."""

    def __init__(self, target):
        cfg = target.comm.get("sdma", {})
        if not cfg:
            raise UserError(f"target {target.name} has no [comm.sdma] figures for TPUT_ASYNC")
        self.channels = int(cfg["channels"])
        self.block_bytes = int(cfg["block_bytes"])
        self.queues_per_session = int(cfg["queues_per_session"])
        self.max_posts = int(cfg["max_outstanding_posts"])
        self.min_bytes = int(cfg["min_transfer_bytes"])
        self.post_cycles = int(cfg["post_cycles"])
        self.latency = float(cfg["latency_cycles"])
        self.poll_cycles = int(cfg["poll_cycles"])
        self.bytes_per_cycle = float(cfg["bandwidth_gb_per_s"]) * 1e9 / target.clock_hz
        self._free: dict[tuple[int, int], float] = {}  # (channel group, queue) -> free at
        self.bytes = 0  # bytes copied (for summaries and tests)
        # (start cycle, bytes) of each descriptor of the latest post: when its bytes cross
        # the two ranks' GM models (sim.engine.remote.sdma_traffic)
        self.descriptors: list[tuple[float, int]] = []

    def session(self, group: int, queues: int | None, block_bytes: int | None, where: str):
        if not 0 <= group < self.channels:
            raise UserError(
                f"{where}: channel group {group} is outside 0 .. {self.channels - 1} "
                f"(communication.md §5.5: {self.channels} channel groups)"
            )
        q = self.queues_per_session if queues is None else int(queues)
        b = self.block_bytes if block_bytes is None else int(block_bytes)
        if q < 1 or b < self.min_bytes:
            raise UserError(
                f"{where}: expected queue_num >= 1 and block_bytes >= {self.min_bytes}, "
                f"found {q} and {b}"
            )
        return Session(group, q, b, self.max_posts)

    def post(self, s: Session, now: float, nbytes: int) -> float:
        """The completion cycle of a post of ``nbytes`` whose posting ends at ``now``."""
        start = now + self.latency
        end = start
        left = nbytes
        self.descriptors = []
        while True:
            n = min(left, s.block_bytes)
            key = (s.group, s.next_queue)
            s.next_queue = (s.next_queue + 1) % s.queues
            begin = max(start, self._free.get(key, 0.0))
            done = begin + n / self.bytes_per_cycle
            self._free[key] = done
            self.descriptors.append((begin, n))
            end = max(end, done)
            left -= n
            if left <= 0:
                break
        self.bytes += nbytes
        s.last = max(s.last, end)
        s.posts.append(s.last)
        return s.last

    def slot_wait(self, s: Session, now: float) -> float:
        """Cycles a new post of ``s`` waits at ``now`` for a free flag-payload slot."""
        while s.posts and s.posts[0] <= now:
            s.posts.popleft()
        if len(s.posts) < s.limit:
            return 0.0
        return s.posts[len(s.posts) - s.limit] - now
