"""Global memory shared by the whole chip: bandwidth sharing and an optional L2.

Every unit of every core reaches GM through one memory system, so 24 cores never get 24
times one core's bandwidth. The figures live in ``[gm]`` of the target's machine.toml.

* A **GM transfer** is a DMA item on one of the ``[gm] paths`` (GM->UB, GM->L1, UB->GM,
  L1->GM, L0C->GM). Alone it costs what its path costs (timing-model.md §5.1), so a single
  unit sees exactly the per-core figures; a launch of one unit is not costed by this model
  at all (``sim.engine.chip``), so its cycles stay those of the single-op calibration.
* **Sharing rule.** Every GM transfer of the chip also crosses a shared channel that
  moves ``bandwidth_gib_per_s``. The channel serves transfers in the order they start,
  each for ``bytes / bandwidth`` cycles: a transfer starting at ``t`` reserves
  ``[max(t, free), max(t, free) + bytes / bandwidth)`` and ends at
  ``max(t + own cost, end of its reservation)``. The chip's aggregate throughput thus
  never exceeds the channel, while a lone transfer whose path is slower than the channel
  is not slowed down. Transfers that start at the same cycle are served in (core, unit,
  pipe) order (``sim.engine.gmorder`` collects them). ASSUMPTION: the reference's only
  sharing rule is the fitted model's optional cap "total / active cores" per read /
  write group (timing-model.md §5.3, caps off in the shipped fit); serving in start
  order is our choice — one reservation per transfer, deterministic, no per-step cost in
  the number of cores.
* **L2** (``[gm.l2] enabled``): an LRU cache of ``line_bytes`` lines in front of HBM
  (timing-model.md §5.4). Every transfer crosses the L2 channel
  (``[gm.l2] bandwidth_gib_per_s``). A read's missing lines also cross the HBM channel
  (``[gm] bandwidth_gib_per_s``). Writes allocate their lines in the L2 and mark them
  dirty; a dirty line goes to HBM once, when it is evicted, however often it is
  rewritten while resident. ASSUMPTION (the reference is [silent]; §5.4 models reads
  only): write-back, write-allocate, as the 910B's L2 keeps a kernel's outputs and
  workspace for their readers; the write-back's HBM bytes are charged when a clean or
  absent line is first dirtied, not at its eviction, so a cube<->vector FIFO slot
  rewritten every block costs HBM bandwidth once while a streamed output costs it per
  line, as before. With
  ``apply_latency`` the per-transfer latencies of §5.4 replace the path cost: a transfer
  whose lines all hit costs ``min(base, bytes / hit_bytes_per_cycle + hit_fixed_cycles)``,
  one with a miss ``base + miss_extra_cycles``. The LRU is tracked per line with a
  counter of lines brought in: a line stays resident until ``capacity_bytes /
  line_bytes`` newer lines were brought in after its last use (exact LRU for streaming
  and for re-use; it ignores the reordering by hits of other lines — ASSUMPTION, for a
  cost per transfer of a few numpy operations).
* **Write ports** (``[gm.write_queue]``): the chip's GM writes (the ``*_GM`` paths: FIXPIPE
  and MTE3 stores, an A2/A3 cube<->vector FIFO's pushes) reach GM through write ports, one
  per group of ``cores_per_port`` consecutive cores (core ``c`` on port
  ``c // cores_per_port``), each moving ``capacity_gib_per_s``. A port is shared by
  processor sharing: a write moves at an equal share of its port with the writes still in
  flight there when it starts, ``capacity / k`` (k counts itself), or at its own path's
  rate when that is slower; it ends at the later of ``start + bytes * k / capacity`` and
  its own end. The share is fixed when the write starts (the writes already in flight are
  not slowed down after the fact): O(writes in flight) per write, deterministic, and the
  port's throughput stays near its capacity when every write lasts about as long as the
  others. So a few cores' writes never wait (their path is slower than the port), bursts
  of many cores share it, and past a port's capacity a core's writes slow down as the
  cores on its port are added; cores on other ports do not add to it. Fitted to the
  on-board flash-attention tables (machine.toml says how);
  ``sim.simulate(..., free=("gm_write_queue",))`` makes it free.
* **First touch of a GM page** (``[gm.first_touch]``): the first transfer that touches a
  page of ``page_bytes`` (per GM array, the array's start on a page boundary) starts the
  page's translation (a page-table walk of ``walk_cycles``); it, and every transfer that
  touches the page before the walk ends, moves its bytes only then. Walks of different
  pages overlap; a page walked once stays translated for the run (ASSUMPTION: the
  translation cache holds a kernel's pages). A launch of one unit walks none (it is not
  costed by this model, above: the single-op figures it is calibrated on are taken warm,
  over repeated runs). ``free=("gm_first_touch",)`` makes it free.
* **What each costs.** ``free=("gm_bandwidth",)`` keeps the channels' accounting (bytes,
  utilisation, L2 hit rate) but no transfer waits for them: each costs its own path's time,
  as a lone unit would see it. ``sim.whatif`` runs a kernel with each mechanism freed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GlobalMemory", "MECHANISMS"]

# the shared mechanisms of this model a run can make free (``simulate(..., free=...)``)
MECHANISMS = {
    "gm_bandwidth": "the chip's shared HBM and L2 channels ([gm] and [gm.l2] "
    "bandwidth_gib_per_s): a GM transfer takes only its own path's time",
    "gm_write_queue": "the chip's GM write ports, shared by the writes in flight on each "
    "([gm.write_queue])",
    "gm_first_touch": "the page walk of a GM page's first touch ([gm.first_touch])",
}

_NEVER = np.iinfo(np.int64).min // 2


class _Channel:
    """A shared link served in start order at ``bytes_per_cycle``."""

    __slots__ = ("bytes_per_cycle", "free", "busy_cycles", "bytes")

    def __init__(self, bytes_per_cycle: float):
        self.bytes_per_cycle = bytes_per_cycle
        self.free = 0.0
        self.busy_cycles = 0.0
        self.bytes = 0

    def reserve(self, now: float, nbytes: int) -> float:
        """End of the reservation of ``nbytes`` for a transfer starting at ``now``."""
        t = nbytes / self.bytes_per_cycle
        start = self.free if self.free > now else now
        self.free = start + t
        self.busy_cycles += t
        self.bytes += nbytes
        return self.free


class _WritePorts:
    """The chip's GM write path (the module docstring's write ports): one port per group of
    ``cores_per_port`` cores, its ``bytes_per_cycle`` shared by the writes in flight on it."""

    __slots__ = ("bytes_per_cycle", "cores_per_port", "flight", "waited", "n", "bytes")

    def __init__(self, bytes_per_cycle: float, cores_per_port: int):
        self.bytes_per_cycle = bytes_per_cycle
        self.cores_per_port = cores_per_port
        self.flight: dict[int, list[float]] = {}  # port -> ends of the writes on it
        self.waited = 0.0  # cycles the ports added to the writes' ends
        self.n = 0  # writes
        self.bytes = 0

    def end(self, now: float, nbytes: int, core: int, end: float) -> float:
        """The end of a write of ``nbytes`` from ``core`` starting at ``now`` that would end
        at ``end`` without the write path: it moves at an equal share of its port with
        the writes still in flight there, ``bytes_per_cycle / k`` (k counts itself), or
        at its own path's rate when that is slower."""
        port = core // self.cores_per_port
        ends = self.flight.get(port)
        if ends is None:
            ends = self.flight[port] = []
        elif ends:
            ends[:] = [e for e in ends if e > now]
        shared = now + nbytes * (len(ends) + 1) / self.bytes_per_cycle
        self.n += 1
        self.bytes += nbytes
        if shared > end:
            self.waited += shared - end
            end = shared
        ends.append(end)
        return end


_MAX_SHAPES = 4096  # strided window shapes whose lines _L2 keeps


class _L2:
    """Approximate LRU of lines, per GM array (see the module docstring)."""

    def __init__(self, cfg: dict):
        self.line = int(cfg.get("line_bytes", 512))
        self.capacity_lines = max(1, int(cfg["capacity_bytes"]) // self.line)
        self.brought = 0  # lines brought in so far
        self.stamps: dict = {}  # GM array -> per line: `brought` at last use
        self.dirty: dict = {}  # GM array -> per line: written while resident
        self.hits = 0
        self.misses = 0
        self._shapes: dict = {}  # strided window shape -> its lines from line 0

    def lines(self, window) -> np.ndarray | slice:
        """Line numbers a GM window touches: ``(key, base, rows, cols, row stride, col
        stride, itemsize)`` in elements; a ``slice`` of them when the window is one
        contiguous run of bytes (a whole-row tile: the common case, kept off numpy)."""
        _, base, rows, cols, rs, cs, isz = window
        if cs != 1 and rs == 1:  # column-contiguous (DN): swap the roles
            rows, cols, rs, cs = cols, rows, cs, rs
        if cs == 1 and (rs == cols or rows == 1):
            start = base * isz
            return slice(start // self.line, (start + rows * cols * isz - 1) // self.line + 1)
        # A strided window touches the lines of the same shape at the same offset into a
        # line, shifted by whole lines (floor((m + x + q L) / L) = floor((m + x) / L) + q):
        # worked out once per shape and offset, as a tiled kernel's windows repeat.
        q, m = divmod(base * isz, self.line)
        key = (m, rows, cols, rs, cs, isz)
        rel = self._shapes.get(key)
        if rel is None:
            if len(self._shapes) >= _MAX_SHAPES:
                self._shapes.clear()
            rel = self._shapes[key] = self._strided(m, rows, cols, rs, cs, isz)
        return rel + q

    def _strided(self, start, rows, cols, rs, cs, isz) -> np.ndarray:
        """The sorted distinct lines of a window that is not one run of bytes and starts
        at byte ``start``."""
        if cs == 1:
            starts = start + np.arange(rows, dtype=np.int64) * (rs * isz)
            first = starts // self.line
            last = (starts + cols * isz - 1) // self.line
            n = int((last - first).max()) + 1
            lines = np.minimum(first[:, None] + np.arange(n), last[:, None]).ravel()
            if rows == 1 or rs > 0 and bool((first[1:] >= last[:-1]).all()):
                # rows in address order, sharing at most a boundary line: the lines come
                # sorted, so dropping repeats is enough (no sort)
                keep = np.empty(lines.size, bool)
                keep[0] = True
                np.not_equal(lines[1:], lines[:-1], out=keep[1:])
                return lines[keep]
        else:
            r, c = np.meshgrid(np.arange(rows, dtype=np.int64), np.arange(cols, dtype=np.int64))
            lines = (start + (r * rs + c * cs) * isz) // self.line
        return np.unique(lines)

    def access(self, window, write: bool = False) -> tuple[int, int, int]:
        """(lines that hit, lines touched, lines a write newly dirtied); the touched lines
        become most recent."""
        lines = self.lines(window)
        key = window[0]
        st = self.stamps.get(key)
        if type(lines) is slice:
            need, count = lines.stop, lines.stop - lines.start
        else:
            need, count = int(lines[-1]) + 1, lines.size
        if st is None or st.size < need:
            size = max(need, 2 * (0 if st is None else st.size))
            grown, grown_dirty = np.full(size, _NEVER, np.int64), np.zeros(size, bool)
            if st is not None:
                grown[: st.size], grown_dirty[: st.size] = st, self.dirty[key]
            st = self.stamps[key] = grown
            self.dirty[key] = grown_dirty
        dirty = self.dirty[key]
        # brought - stamp < capacity, with one array operation
        present = st[lines] > self.brought - self.capacity_lines
        hit = int(np.count_nonzero(present))
        self.brought += count - hit
        st[lines] = self.brought
        self.hits += hit
        self.misses += count - hit
        dirtied = 0
        if write:
            # an evicted line's write-back was charged when it was dirtied
            was = dirty[lines] & present
            dirtied = count - int(np.count_nonzero(was))
            dirty[lines] = True
        elif hit < count:
            touched = dirty[lines]  # a view for a slice, a copy for an array
            touched &= present  # a line brought in now is clean
            if type(lines) is not slice:
                dirty[lines] = touched
        return hit, count, dirtied


class _Pages:
    """First touches of GM pages (the module docstring's page walks): per GM array and
    page, the cycle its translation is ready."""

    __slots__ = ("pages", "page_bytes", "walk", "ready", "walks", "waited")

    def __init__(self, page_bytes: int, walk_cycles: float):
        # the L2's line arithmetic with a page as the line: a window's pages
        self.pages = _L2({"capacity_bytes": page_bytes, "line_bytes": page_bytes})
        self.page_bytes = page_bytes
        self.walk = walk_cycles
        self.ready: dict = {}  # GM array -> per page: cycle its walk ends (-1: never walked)
        self.walks = 0
        self.waited = 0.0  # cycles transfers waited for walks

    def _ready(self, key, need: int) -> np.ndarray:
        """The walk-end cycles of GM array ``key``'s pages, at least ``need`` of them."""
        r = self.ready.get(key)
        if r is None or r.size < need:
            grown = np.full(max(need, 2 * (0 if r is None else r.size)), -1.0)
            if r is not None:
                grown[: r.size] = r
            r = self.ready[key] = grown
        return r

    def _span(self, window) -> range | None:
        """The pages of ``window`` when they are one run of page numbers: its rows in
        address order (row stride at least the row) with gaps between them shorter than a
        page, so no page between its first and last byte is skipped. None otherwise (the
        general path works the pages out)."""
        _, base, rows, cols, rs, cs, isz = window
        if cs != 1 and rs == 1:  # column-contiguous (DN): swap the roles, as lines() does
            rows, cols, rs, cs = cols, rows, cs, rs
        if cs != 1 or rows < 1 or cols < 1:
            return None
        if rows > 1 and not 0 <= (rs - cols) * isz < self.page_bytes:
            return None
        first = base * isz
        last = first + ((rows - 1) * rs + cols) * isz - 1
        return range(first // self.page_bytes, last // self.page_bytes + 1)

    def start(self, now: float, window) -> float:
        """The cycle a transfer of ``window`` issued at ``now`` can move its bytes: once
        every page it touches is translated (a page touched for the first time is walked
        from ``now``; one whose walk is under way is waited for)."""
        span = self._span(window)
        if span is None:
            return self._start(now, window)
        # a few pages, in Python (numpy's per-call cost is most of a transfer's here)
        r = self._ready(window[0], span.stop)
        at = now
        for page in span:
            ready = r.item(page)
            if ready < 0:
                ready = now + self.walk
                r[page] = ready
                self.walks += 1
            if ready > at:
                at = ready
        if at > now:
            self.waited += at - now
            return at
        return now

    def _start(self, now: float, window) -> float:
        """``start`` for any window, with numpy over the pages ``_L2.lines`` gives."""
        pages = self.pages.lines(window)
        need = pages.stop if type(pages) is slice else int(pages[-1]) + 1
        r = self._ready(window[0], need)
        got = r[pages]
        new = got < 0
        n = int(np.count_nonzero(new))
        if n:
            got[new] = now + self.walk
            r[pages] = got
            self.walks += n
        at = float(got.max())
        if at > now:
            self.waited += at - now
            return at
        return now


class GlobalMemory:
    """The chip's GM: ``cost(now, item, own_cost)`` is the cycles a GM transfer takes."""

    def __init__(self, target, *, l2: bool | None = None, free: frozenset = frozenset()):
        cfg = target.gm
        bpc = 2**30 / target.clock_hz
        self.paths = frozenset(cfg.get("paths", ()))
        self.hbm = _Channel(float(cfg.get("bandwidth_gib_per_s", 0)) * bpc) if cfg else None
        l2cfg = dict(cfg.get("l2", {}))
        on = bool(l2cfg.get("enabled", False)) if l2 is None else l2
        self.l2 = _L2(l2cfg) if on and l2cfg else None
        self.l2_channel = (
            _Channel(float(l2cfg["bandwidth_gib_per_s"]) * bpc) if self.l2 is not None else None
        )
        self.apply_latency = bool(l2cfg.get("apply_latency", False))
        self.hit_fixed = float(l2cfg.get("hit_fixed_cycles", 50))
        self.hit_bpc = float(l2cfg.get("hit_bytes_per_cycle", 256))
        self.miss_extra = float(l2cfg.get("miss_extra_cycles", 150))
        wq = cfg.get("write_queue", {}) if "gm_write_queue" not in free else {}
        self.write_queue = (
            _WritePorts(float(wq["capacity_gib_per_s"]) * bpc, int(wq["cores_per_port"]))
            if wq.get("enabled", False)
            else None
        )
        ft = cfg.get("first_touch", {}) if "gm_first_touch" not in free else {}
        self.pages = (
            _Pages(int(ft["page_bytes"]), float(ft["walk_cycles"]))
            if ft.get("enabled", False)
            else None
        )
        # with the channels freed their reservations are still made (the summary's bytes and
        # utilisation), but no transfer waits for them
        self.shared = "gm_bandwidth" not in free
        self._bytes: dict[int, tuple] = {}  # id(plan) -> (plan, GM bytes, is write)

    @property
    def active(self) -> bool:
        return self.hbm is not None and self.hbm.bytes_per_cycle > 0 and bool(self.paths)

    def _gm_bytes(self, plan) -> tuple[int, bool]:
        hit = self._bytes.get(id(plan))
        if hit is None or hit[0] is not plan:
            nbytes, write = 0, False
            for it in plan.items:
                if it.kind == "dma" and it.name in self.paths:
                    nbytes += it.bytes
                    write = write or it.name.endswith("_GM")
            hit = self._bytes[id(plan)] = (plan, nbytes, write)
        return hit[1], hit[2]

    def needs_window(self) -> bool:
        """True when transfers must carry their GM window (the L2 tracks lines, the page
        walks pages)."""
        return self.l2 is not None or self.pages is not None

    def cost(self, now: int, item, own: int, core: int = 0) -> int:
        """Cycles a GM transfer of ``core`` issued at ``now`` takes (``own``: its path's
        cost alone)."""
        nbytes, write = self._gm_bytes(item.plan)
        if not nbytes:
            return own
        # a transfer moves GM bytes only when the target has a [gm] table: hbm is set
        assert self.hbm is not None
        start: float = now
        if self.pages is not None and item.gm is not None:
            start = self.pages.start(now, item.gm)
        end: float = start + own
        if self.l2 is None:
            reserved = self.hbm.reserve(start, nbytes)
            if self.shared:
                end = max(end, reserved)
        else:
            assert self.l2_channel is not None  # made with the L2
            hit, lines, dirtied = (
                self.l2.access(item.gm, write) if item.gm is not None else (0, 1, 1)
            )
            miss_bytes = nbytes * (dirtied if write else lines - hit) // lines
            if self.apply_latency:
                end = start + (
                    min(own, nbytes / self.hit_bpc + self.hit_fixed)
                    if hit == lines
                    else own + self.miss_extra
                )
            reserved = self.l2_channel.reserve(start, nbytes)
            if miss_bytes:
                reserved = max(reserved, self.hbm.reserve(start, miss_bytes))
            if self.shared:
                end = max(end, reserved)
        if write and self.write_queue is not None:
            end = self.write_queue.end(start, nbytes, core, end)
        return int(end - now + 0.5) if end > now + own or self.apply_latency else own

    def summary(self, total_cycles: int) -> dict:
        """Bytes and utilisation of each channel over a run of ``total_cycles``."""
        out = {}
        for name, ch in (("hbm", self.hbm), ("l2", self.l2_channel)):
            if ch is not None:
                out[name] = {
                    "bytes": ch.bytes,
                    "utilization": round(ch.busy_cycles / total_cycles, 4) if total_cycles else 0.0,
                }
        if self.l2 is not None:
            n = self.l2.hits + self.l2.misses
            out["l2"]["hit_rate"] = round(self.l2.hits / n, 4) if n else 0.0
        q = self.write_queue
        if q is not None and q.n:
            out["write_queue"] = {"writes": q.n, "mean_wait_cycles": round(q.waited / q.n, 1)}
        w = self.pages
        if w is not None and w.walks:
            out["first_touch"] = {"walks": w.walks, "waited_cycles": round(w.waited)}
        return out
