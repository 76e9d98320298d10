"""The GM write ports and the first-touch page walks of ``sim.engine.gm``, and the defaults
and report of the GM model, against the rules of its module docstring worked by hand.

* Write ports: core ``c`` writes through the port of its group of ``cores_per_port``
  consecutive cores; a write shares the port with the writes still in flight when it
  starts (one that ends at that very cycle is done), ``capacity / k``.
* Page walks: the first transfer touching a page (per GM array, pages of ``page_bytes``
  from the array's start) walks it from its issue for ``walk_cycles``; a transfer moves
  once every page it touches is translated. Checked against an element-by-element
  reference over random windows, page sizes and walk times, and through ``cost``: the
  walk's end is when the transfer's bytes start to cross the channels.
* The L2's unstated figures are those of timing-model.md §5.4 (512-byte lines, hit
  ``min(base, bytes / 256 + 50)``, miss ``base + 150``); a mechanism's table without
  ``enabled = true`` is off; ``summary`` reports the ports and the walks only when they
  acted.

Stand-in targets (a clock and a ``[gm]`` table) drive ``GlobalMemory`` directly; a transfer
is an item whose plan holds one DMA item and whose ``gm`` is its GM window.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from sim.engine.gm import _L2, GlobalMemory, _Pages, _WritePorts

CLOCK = 1.0e9  # a 1 GHz stand-in clock: B bytes per cycle is B * CLOCK / 2**30 GiB/s
WIDE = 1.0e9  # GiB/s: a channel that never binds


def _gib(bytes_per_cycle: float) -> float:
    return bytes_per_cycle * CLOCK / 2**30


def _target(**tables):
    """A stand-in target with a wide HBM channel, no L2 unless given, and ``tables`` as
    the ``[gm]`` sub-tables (``l2``, ``write_queue``, ``first_touch``)."""
    gm = {"paths": ["GM_UB", "UB_GM"], "bandwidth_gib_per_s": WIDE, **tables}
    return SimpleNamespace(gm=gm, clock_hz=CLOCK)


def _ports(bytes_per_cycle: float, cores_per_port: int) -> dict:
    return {
        "enabled": True,
        "capacity_gib_per_s": _gib(bytes_per_cycle),
        "cores_per_port": cores_per_port,
    }


def _xfer(path: str, nbytes: int, window=None):
    item = SimpleNamespace(kind="dma", name=path, bytes=nbytes)
    return SimpleNamespace(plan=SimpleNamespace(items=(item,), bytes=nbytes), gm=window)


def _row(array: str, first_byte: int, nbytes: int):
    """The GM window of ``nbytes`` contiguous bytes of ``array`` (f32, one row)."""
    return (array, first_byte // 4, 1, nbytes // 4, nbytes // 4, 1, 4)


# --- write ports -----------------------------------------------------------------------------


@pytest.mark.parametrize("bpc", [4.0, 10.0, 64.0])
@pytest.mark.parametrize("per_port", [1, 2, 8])
@pytest.mark.parametrize("lone", [25, 100])
def test_a_write_ending_as_another_starts_is_not_in_flight(bpc, per_port, lone):
    """A write of b bytes alone on its port takes b / capacity. A second write of the same
    port (its last core) starting at the cycle the first ends has the port alone; a third
    starting one cycle before the second ends shares it with that one (k = 2)."""
    b = int(bpc * lone)  # `lone` cycles at the port's capacity
    p = _WritePorts(bpc, per_port)
    assert p.end(0, b, 0, 1) == lone
    assert p.end(lone, b, per_port - 1, lone + 1) == 2 * lone
    assert p.end(2 * lone - 1, b, 0, 0) == 2 * lone - 1 + 2 * lone
    assert p.waited == pytest.approx((lone - 1) + (lone - 1) + (2 * lone - 1 + 2 * lone))


@pytest.mark.parametrize("per_port", [1, 2, 3, 8])
@pytest.mark.parametrize("order", ["up", "down"])
def test_each_port_serves_its_group_of_consecutive_cores(per_port, order):
    """Three ports' worth of cores each write b bytes at cycle 0: port p holds cores
    p * per_port .. (p + 1) * per_port - 1, so the j-th write issued on a port ends at
    j * b / capacity whatever the other ports carry."""
    bpc, b = 8.0, 800
    p = _WritePorts(bpc, per_port)
    cores = list(range(3 * per_port))
    if order == "down":
        cores.reverse()
    issued = {port: 0 for port in range(3)}
    for c in cores:
        port = next(q for q in range(3) if c in range(q * per_port, (q + 1) * per_port))
        issued[port] += 1
        assert p.end(0, b, c, 1) == issued[port] * b / bpc, (c, port)
    assert issued == {0: per_port, 1: per_port, 2: per_port}


@pytest.mark.parametrize("per_port", [1, 4])
def test_cost_without_a_core_writes_through_core_zeros_port(per_port):
    """``cost`` called without a core (the remote accesses of ``sim.engine.links`` and
    ``sim.engine.remote``) is core 0's: it shares core 0's port, not the next port's."""
    bpc, b, own = 10.0, 1000, 10
    gm = GlobalMemory(_target(write_queue=_ports(bpc, per_port)))
    assert gm.cost(0, _xfer("UB_GM", b), own, per_port) == b / bpc  # port 1, alone
    assert gm.cost(0, _xfer("UB_GM", b), own) == b / bpc  # port 0, alone
    assert gm.cost(0, _xfer("UB_GM", b), own, 0) == 2 * b / bpc  # port 0, k = 2


def test_the_summary_reports_the_ports_mean_wait_to_a_tenth_of_a_cycle():
    """Three writes of 1000 bytes at cycle 0 on one 10 B/cycle port end at 100, 200, 300;
    with own ends 100, 150 and 250 they waited 0, 50 and 50 cycles: a mean of 33.3. A
    model whose ports saw no write reports none, nor walks it never made."""
    gm = GlobalMemory(_target(write_queue=_ports(10.0, 4)))
    assert gm.cost(0, _xfer("GM_UB", 4000), 10) == 10  # a read: no port
    assert "write_queue" not in gm.summary(1000)
    got = [gm.cost(0, _xfer("UB_GM", 1000), own, c) for c, own in ((0, 100), (1, 150), (2, 250))]
    assert got == [100, 200, 300]
    s = gm.summary(1000)
    assert s["write_queue"] == {"writes": 3, "mean_wait_cycles": 33.3}
    assert set(s) == {"hbm", "write_queue"}


# --- first-touch page walks -----------------------------------------------------------------


def _reference_walks(transfers, page: int, walk: float):
    """Element by element: each page (array, byte // page) is ready ``walk`` after the
    issue of the first transfer touching it; a transfer starts when all its pages are
    ready. Returns the starts, the number of walks and the cycles waited."""
    ready: dict = {}
    starts, waited = [], 0.0
    for now, (array, base, rows, cols, rs, cs, isz) in transfers:
        pages = {
            (array, (base + r * rs + c * cs) * isz // page)
            for r in range(rows)
            for c in range(cols)
        }
        for pg in pages:
            ready.setdefault(pg, now + walk)
        start = max(now, *(ready[pg] for pg in pages))
        starts.append(start)
        waited += start - now
    return starts, len(ready), waited


def _random_transfers(rng, page: int, n: int):
    """n windows of two arrays (row-major, strided, column-major), some far into an array
    and then back near its start, issued at non-decreasing cycles."""
    now, out = 0, []
    for _ in range(n):
        isz = int(rng.choice([1, 2, 4]))
        rows, cols = int(rng.integers(1, 6)), int(rng.integers(1, 300))
        kind = int(rng.integers(0, 3))
        if kind == 0:
            rs, cs = cols, 1
        elif kind == 1:
            rs, cs = int(rng.integers(cols, cols + 6 * page)), 1
        else:
            rs, cs = 1, int(rng.integers(rows, rows + 3 * page))
        far = int(rng.integers(0, 2))
        base = int(rng.integers(0, 40 * page if far else 2 * page))
        now += int(rng.choice([0, 0, 1, 5, 50, 400]))
        out.append((now, (str(rng.choice(["a", "b"])), base, rows, cols, rs, cs, isz)))
    return out


@pytest.mark.parametrize("page", [64, 512, 4096])
@pytest.mark.parametrize("walk", [0, 37, 740])
def test_page_walks_against_an_element_by_element_reference(page, walk):
    """Each transfer's start, the walks made and the cycles waited, as the reference
    above works them out, over 60 random transfers."""
    rng = np.random.default_rng(page * 1000 + walk)
    transfers = _random_transfers(rng, page, 60)
    want, walks, waited = _reference_walks(transfers, page, float(walk))
    w = _Pages(page, float(walk))
    got = [w.start(now, window) for now, window in transfers]
    assert got == want
    assert w.walks == walks
    assert w.waited == pytest.approx(waited)


@pytest.mark.parametrize("page", [64, 512, 4096])
def test_a_window_taken_as_a_run_of_pages_touches_exactly_those(page):
    """The walks' quick path (a window's pages as one run of numbers) takes a window only
    when no page between its first and last byte is skipped: its pages are then the
    general rule's; the random transfers above go down both paths."""
    rng = np.random.default_rng(page)
    w = _Pages(page, 1.0)
    spans = [(w._span(win), win) for _, win in _random_transfers(rng, page, 400)]
    quick = [(span, win) for span, win in spans if span is not None]
    assert 0 < len(quick) < len(spans)
    # two rows a page long with a gap of exactly one page between them skip a page;
    # a gap one byte shorter skips none
    assert w._span(("x", 0, 2, page, 2 * page, 1, 1)) is None
    skipped = w.pages.lines(("x", 0, 2, page, 2 * page, 1, 1))
    assert list(skipped) == [0, 2]
    assert w._span(("x", 0, 2, page, 2 * page - 1, 1, 1)) == range(0, 3)
    for span, win in quick:
        lines = w.pages.lines(win)
        pages = range(lines.start, lines.stop) if type(lines) is slice else lines.tolist()
        assert list(span) == list(pages), win


@pytest.mark.parametrize("walk", [0, 1, 300])
@pytest.mark.parametrize("pages", [1, 3, 8])
def test_a_page_is_walked_once_however_often_it_is_touched(walk, pages):
    """Touching the same pages again at the issue cycle, at the walk's end and later
    walks nothing more (a walk of 0 cycles too): the walks count the pages, the waits
    only the first touch's."""
    page = 4096
    w = _Pages(page, float(walk))
    window = _row("x", 0, pages * page)
    for now in (0, 0, walk, walk + 1, 10 * walk + 7):
        assert w.start(now, window) == (walk if now == 0 else now)
    assert w.walks == pages
    assert w.waited == 2 * walk


@pytest.mark.parametrize("walk", [100, 740])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_a_transfer_crosses_the_channel_once_its_pages_are_walked(walk, k):
    """k reads of b bytes issued at cycle 0, each on a page of its own, through a channel
    of 1 byte per cycle: none moves before its walk ends (the channel idles meanwhile),
    then the channel serves them in turn, the j-th ending at walk + j * b."""
    page, b = 4096, 64
    gm = GlobalMemory(
        SimpleNamespace(
            gm={
                "paths": ["GM_UB"],
                "bandwidth_gib_per_s": _gib(1.0),
                "first_touch": {"enabled": True, "page_bytes": page, "walk_cycles": walk},
            },
            clock_hz=CLOCK,
        )
    )
    assert gm.needs_window()  # the walks need the windows even with the L2 off
    for j in range(1, k + 1):
        assert gm.cost(0, _xfer("GM_UB", b, _row("x", j * page, b)), 10) == walk + j * b
    assert gm.summary(10_000)["first_touch"] == {"walks": k, "waited_cycles": k * walk}


@pytest.mark.parametrize("walk", [0, 50, 740])
def test_a_walk_delays_a_write_and_the_summary_counts_it(walk):
    """With the channels free and the ports wide, a transfer costs its own cycles plus the
    wait for its pages; a walk of 0 cycles still counts its pages in the summary."""
    page, own = 4096, 20
    ft = {"enabled": True, "page_bytes": page, "walk_cycles": walk}
    gm = GlobalMemory(_target(first_touch=ft), free=frozenset({"gm_bandwidth"}))
    assert gm.cost(0, _xfer("UB_GM", 2 * page, _row("y", 0, 2 * page)), own) == walk + own
    assert gm.cost(5, _xfer("GM_UB", 8, _row("y", page, 8)), own) == max(walk - 5, 0) + own
    assert gm.cost(walk, _xfer("GM_UB", 8, _row("y", page + 8, 8)), own) == own
    assert gm.summary(1000)["first_touch"] == {
        "walks": 2,
        "waited_cycles": walk + max(walk - 5, 0),
    }


# --- defaults, switches and the L2's §5.4 figures -------------------------------------------


def test_a_mechanism_table_without_enabled_is_off():
    """An ``[gm.l2]``, ``[gm.write_queue]`` or ``[gm.first_touch]`` table that does not say
    ``enabled = true`` switches nothing on."""
    l2 = {"line_bytes": 512, "capacity_bytes": 1 << 20, "bandwidth_gib_per_s": WIDE}
    ports = {k: v for k, v in _ports(1.0, 1).items() if k != "enabled"}
    ft = {"page_bytes": 4096, "walk_cycles": 1000}
    gm = GlobalMemory(_target(l2=l2, write_queue=ports, first_touch=ft))
    assert gm.l2 is None and gm.write_queue is None and gm.pages is None
    assert not gm.needs_window()
    assert gm.cost(0, _xfer("UB_GM", 4096, _row("y", 0, 4096)), 10) == 10
    assert set(gm.summary(100)) == {"hbm"}


def test_an_l2_without_a_line_size_has_512_byte_lines():
    """timing-model.md §5.4: 512-byte lines. n loads of 512 bytes at 512-byte offsets each
    bring in one line; one load over all of them then hits n lines."""
    for n in (1, 3, 10):
        l2 = {"enabled": True, "capacity_bytes": 1 << 20, "bandwidth_gib_per_s": WIDE}
        gm = GlobalMemory(_target(l2=l2))
        for i in range(n):
            gm.cost(0, _xfer("GM_UB", 512, _row("x", 512 * i, 512)), 10)
        assert (gm.l2.hits, gm.l2.misses) == (0, n)
        gm.cost(0, _xfer("GM_UB", 512 * n, _row("x", 0, 512 * n)), 10)
        assert (gm.l2.hits, gm.l2.misses) == (n, n)


@pytest.mark.parametrize("lines", [1, 4, 32, 256])
@pytest.mark.parametrize("own", [60, 400, 4000])
def test_apply_latency_without_figures_uses_those_of_the_reference(lines, own):
    """timing-model.md §5.4 with no figures given: a miss costs base + 150, a transfer
    whose lines all hit min(base, bytes / 256 + 50)."""
    l2 = {
        "enabled": True,
        "line_bytes": 512,
        "capacity_bytes": 1 << 20,
        "bandwidth_gib_per_s": WIDE,
        "apply_latency": True,
    }
    gm = GlobalMemory(_target(l2=l2))
    nbytes = 512 * lines
    assert gm.cost(0, _xfer("GM_UB", nbytes, _row("x", 0, nbytes)), own) == own + 150
    hit = min(own, nbytes // 256 + 50)  # bytes / 256 is whole here
    assert gm.cost(10**6, _xfer("GM_UB", nbytes, _row("x", 0, nbytes)), own) == hit


@pytest.mark.parametrize("capacity_bytes", [1, 511, 512, 1023])
def test_an_l2_of_at_most_one_line_holds_one_line(capacity_bytes):
    """A capacity under two lines holds one line (at least one, even under a line): a
    line re-read at once hits, two lines read in turn evict each other."""
    l2 = {
        "enabled": True,
        "line_bytes": 512,
        "capacity_bytes": capacity_bytes,
        "bandwidth_gib_per_s": WIDE,
    }
    gm = GlobalMemory(_target(l2=l2))
    for line in (0, 0, 1, 0, 1, 1):
        gm.cost(0, _xfer("GM_UB", 512, _row("x", 512 * line, 512)), 10)
    assert (gm.l2.hits, gm.l2.misses) == (2, 4)


def test_an_l2_access_is_a_read_unless_it_says_write():
    """``_L2.access(window)`` reads: the lines it brings in are clean, so a write over
    them then dirties every one."""
    for n in (1, 5):
        l2 = _L2({"line_bytes": 512, "capacity_bytes": 1 << 20})
        window = _row("x", 0, 512 * n)
        assert l2.access(window) == (0, n, 0)
        assert l2.access(window, write=True) == (n, n, n)
        assert l2.access(window, write=True) == (n, n, 0)


def _element_lines(window, line: int) -> list[int]:
    """The sorted lines of a window's elements, element by element."""
    _, base, rows, cols, rs, cs, isz = window
    return sorted(
        {(base + r * rs + c * cs) * isz // line for r in range(rows) for c in range(cols)}
    )


def _listed(got) -> list[int]:
    return list(range(got.start, got.stop)) if isinstance(got, slice) else [int(x) for x in got]


@pytest.mark.parametrize("isz", [1, 2, 4])
def test_the_lines_of_windows_at_the_edges_of_the_shortcuts(isz):
    """``_L2.lines`` against the lines of every element for the windows next to its
    shortcuts: one row or rows one stride apart but with a column stride of 2 or more
    (not a run of bytes), and byte runs whose last element starts a line (for bytes: their
    last byte is the first of a line)."""
    line = 512
    l2 = _L2({"line_bytes": line, "capacity_bytes": 1 << 20})
    windows = []
    for cs in (2, 3, 130, 256):
        for cols in (2, 5, 40):
            windows.append(("x", 7, 1, cols, 1000, cs, isz))  # one row, strided columns
            windows.append(("x", 3, 3, cols, cols, cs, isz))  # row stride == cols
            windows.append(("x", 0, 4, cols, 3 * cols * cs, cs, isz))  # both strided
    for last_line in (1, 2, 9):
        for n in (1, 2, 513, 1000):  # the last of n elements starts last_line
            first = last_line * line - (n - 1) * isz
            if first >= 0 and first % isz == 0:
                windows.append(("x", first // isz, 1, n, n, 1, isz))
                if n % 2 == 0:
                    windows.append(("x", first // isz, 2, n // 2, n // 2, 1, isz))
    assert len(windows) > 40
    for window in windows:
        assert _listed(l2.lines(window)) == _element_lines(window, line), window


@pytest.mark.parametrize("bpc", [0.01, 0.5, 1.0, 64.0])
def test_any_positive_bandwidth_is_a_shared_channel(bpc):
    """A ``[gm]`` table with GM paths and a bandwidth above zero, however narrow, is a
    shared channel (``active``): two reads of b bytes at one cycle end b / bandwidth
    apart."""
    t = _target()
    t.gm["bandwidth_gib_per_s"] = _gib(bpc)
    gm = GlobalMemory(t)
    assert gm.active
    b = 64
    ends = [gm.cost(0, _xfer("GM_UB", b), 1) for _ in range(2)]
    assert ends == [round(b / bpc), round(2 * b / bpc)]


@pytest.mark.parametrize("l2", [False, True])
@pytest.mark.parametrize("walks", [False, True])
def test_transfers_carry_their_window_when_the_l2_or_the_walks_need_it(l2, walks):
    """The L2 tracks lines, the walks pages: either one on needs the GM windows."""
    tables = {}
    if l2:
        tables["l2"] = {"enabled": True, "capacity_bytes": 1 << 20, "bandwidth_gib_per_s": WIDE}
    if walks:
        tables["first_touch"] = {"enabled": True, "page_bytes": 4096, "walk_cycles": 10}
    assert GlobalMemory(_target(**tables)).needs_window() == (l2 or walks)


@pytest.mark.parametrize("isz", [1, 2, 4])
def test_a_window_that_is_one_run_of_bytes_gives_a_range_of_lines(isz):
    """``_L2.lines`` keeps a window that is one contiguous run of bytes off numpy (its
    docstring): whole rows of a row-major array, one row, and whole columns of a
    column-major one (column stride = rows, row stride 1) give a ``slice``, the lines of
    their elements."""
    line = 512
    l2 = _L2({"line_bytes": line, "capacity_bytes": 1 << 20})
    for base in (0, 5, 300):
        for rows, cols in ((1, 7), (2, 50), (4, 128), (16, 300), (3, 1)):
            for window in (
                ("x", base, rows, cols, cols, 1, isz),  # whole rows
                ("x", base, 1, rows * cols, 10**6, 1, isz),  # one row
                ("x", base, rows, cols, 1, rows, isz),  # whole columns, column-major
            ):
                got = l2.lines(window)
                assert isinstance(got, slice), window
                assert _listed(got) == _element_lines(window, line), window
