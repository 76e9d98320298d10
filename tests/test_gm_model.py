"""The chip's global-memory model (``sim.engine.gm``) against its documented rules.

Each figure here is derived from the window sizes and the rules of the module docstring
(the shared channel served in start order, the write-back LRU L2 of ``line_bytes`` lines
holding ``capacity_bytes``, the write-back charged when a clean or absent line is first
dirtied, the §5.4 latencies with ``apply_latency``), never by running the model's own
arithmetic again: over families of core counts, window sizes and capacities.

Most tests drive ``GlobalMemory`` directly with small stand-in targets and transfers (a
transfer is an item whose plan holds DMA items and whose ``gm`` is its GM window); the
kernel tests run the same rules through ``sim.simulate`` on the a2a3 target.
"""

from types import SimpleNamespace

import pytest

import sim
from sim.engine.gm import GlobalMemory
from sim.target import load_target

LINE = 512
CLOCK = 1.0e9


def _target(*, cap_lines=1 << 20, hbm_gib=64.0, l2_gib=256.0, l2=True, **l2_extra):
    """A stand-in target: a clock and a ``[gm]`` table (what ``GlobalMemory`` reads)."""
    gm = {"paths": ["GM_UB", "UB_GM", "GM_L1", "L0C_GM"], "bandwidth_gib_per_s": hbm_gib}
    if l2:
        gm["l2"] = {
            "enabled": True,
            "line_bytes": LINE,
            "capacity_bytes": cap_lines * LINE,
            "bandwidth_gib_per_s": l2_gib,
            **l2_extra,
        }
    return SimpleNamespace(gm=gm, clock_hz=CLOCK)


def _bpc(gib: float) -> float:
    """Bytes per cycle of a GiB/s figure at the stand-in clock."""
    return gib * 2**30 / CLOCK


def _xfer(path: str, array: str, first_byte: int, nbytes: int, *, extra=()):
    """A transfer of ``nbytes`` contiguous bytes of GM array ``array`` from byte
    ``first_byte`` (f32 elements, one row) over DMA path ``path``; ``extra`` adds
    (kind, name, bytes) items of the same plan."""
    items = [SimpleNamespace(kind="dma", name=path, bytes=nbytes)]
    items += [SimpleNamespace(kind=k, name=n, bytes=b) for k, n, b in extra]
    plan = SimpleNamespace(items=tuple(items), bytes=sum(i.bytes for i in items))
    window = (array, first_byte // 4, 1, nbytes // 4, nbytes // 4, 1, 4)
    return SimpleNamespace(plan=plan, gm=window)


def _load(array, line0, nlines):
    return _xfer("GM_UB", array, line0 * LINE, nlines * LINE)


def _store(array, line0, nlines):
    return _xfer("UB_GM", array, line0 * LINE, nlines * LINE)


# --- load then store of one window ---------------------------------------------------------


@pytest.mark.parametrize("cores", [1, 2, 4])
@pytest.mark.parametrize("lines", [1, 3, 16])
def test_load_then_store_of_one_window_costs_its_bytes_twice_on_hbm(cores, lines):
    """Each core loads its window (every line misses: its bytes cross HBM) and stores it
    back (present and clean: dirtied, so its write-back crosses HBM once); a second
    store and a second load of the same window cost HBM nothing."""
    gm = GlobalMemory(_target())
    w = lines * LINE
    for c in range(cores):
        gm.cost(0, _load("x", c * lines, lines), 10)
    for c in range(cores):
        gm.cost(0, _store("x", c * lines, lines), 10)
    assert gm.hbm.bytes == 2 * cores * w
    assert gm.l2_channel.bytes == 2 * cores * w
    assert (gm.l2.hits, gm.l2.misses) == (cores * lines, cores * lines)
    for c in range(cores):
        gm.cost(0, _store("x", c * lines, lines), 10)
        gm.cost(0, _load("x", c * lines, lines), 10)
    assert gm.hbm.bytes == 2 * cores * w  # dirty and resident: nothing more reaches HBM
    assert gm.l2_channel.bytes == 4 * cores * w  # every transfer crosses the L2 channel
    assert (gm.l2.hits, gm.l2.misses) == (3 * cores * lines, cores * lines)


def _load_store(block_dim, rows, cols, dtype):
    """Each block loads its own rows x cols window and stores the tile back to it."""
    k = sim.Kernel("load_store", block_dim=block_dim)
    x = k.gm("x", dtype, (rows * block_dim, cols))
    t = k.tile("vec", dtype, rows, cols)
    r0 = k.block_idx * rows
    e = k.TLOAD(t, x[r0 : r0 + rows, :])
    k.TSTORE(x[r0 : r0 + rows, :], t, e)
    return k


@pytest.mark.parametrize(
    "block_dim,rows,cols,dtype", [(2, 64, 256, "f32"), (4, 16, 128, "f16"), (8, 4, 512, "f32")]
)
def test_load_then_store_on_the_chip(block_dim, rows, cols, dtype):
    """The same rule through a run: windows of whole lines, one per block."""
    w = rows * cols * (4 if dtype == "f32" else 2)
    assert w % LINE == 0  # no line is shared by two blocks' windows
    r = sim.simulate(_load_store(block_dim, rows, cols, dtype), functional=False)
    assert r.memory["hbm"]["bytes"] == 2 * block_dim * w
    assert r.memory["l2"]["bytes"] == 2 * block_dim * w
    assert r.memory["l2"]["hit_rate"] == 0.5  # the stores find every line the load brought


# --- capacity --------------------------------------------------------------------------------


@pytest.mark.parametrize("cap", [4, 16, 64])
@pytest.mark.parametrize("per", [1, 2])
def test_working_sets_under_at_and_past_the_l2_capacity(cap, per):
    """Stream a working set twice, ``per`` lines per load: a set of at most ``cap`` lines
    stays resident (the second pass hits every line); one more line and LRU streaming
    evicts each line before its reuse (the second pass misses every line)."""
    for size in (cap - per, cap, cap + per, 2 * cap):
        gm = GlobalMemory(_target(cap_lines=cap))
        for _ in range(2):
            for line0 in range(0, size, per):
                gm.cost(0, _load("x", line0, per), 10)
        second_hits = size if size <= cap else 0
        assert (gm.l2.hits, gm.l2.misses) == (second_hits, 2 * size - second_hits), size
        assert gm.hbm.bytes == (2 * size - second_hits) * LINE


@pytest.mark.parametrize("cap", [8, 32])
def test_a_reused_line_is_most_recent(cap):
    """Re-reading line 0 after every other line keeps it resident through a stream of
    any length; the lines streamed past the capacity since their use are gone."""
    gm = GlobalMemory(_target(cap_lines=cap))
    for line in range(1, 3 * cap):
        gm.cost(0, _load("x", 0, 1), 10)
        gm.cost(0, _load("x", line, 1), 10)
    hits = gm.l2.hits
    assert hits == 3 * cap - 2  # every re-read of line 0 after the first
    gm.cost(0, _load("x", 1, 1), 10)  # long evicted
    assert gm.l2.hits == hits
    gm.cost(0, _load("x", 3 * cap - 1, 1), 10)  # brought in last
    assert gm.l2.hits == hits + 1


# --- write path and read path ------------------------------------------------------------


@pytest.mark.parametrize("lines", [1, 4, 12])
def test_write_path_charges_each_dirtying_once(lines):
    """A write of absent lines, a rewrite of dirty resident lines and a write over lines
    a read brought in (clean): HBM sees the first and the last; the read path would
    charge only misses."""
    w = lines * LINE
    gm = GlobalMemory(_target())
    gm.cost(0, _store("y", 0, lines), 10)
    assert gm.hbm.bytes == w
    gm.cost(0, _store("y", 0, lines), 10)
    assert gm.hbm.bytes == w  # dirty and resident
    gm.cost(0, _load("z", 0, lines), 10)
    assert gm.hbm.bytes == 2 * w  # the read misses
    gm.cost(0, _store("z", 0, lines), 10)
    assert gm.hbm.bytes == 3 * w  # all hit, but clean: each line is dirtied now
    gm.cost(0, _load("y", 0, lines), 10)
    assert gm.hbm.bytes == 3 * w  # a read of written lines hits


@pytest.mark.parametrize("cap", [4, 8])
def test_an_evicted_dirty_line_is_written_again_after_a_reread(cap):
    """A dirty line's write-back was charged when it was dirtied: evicting it costs
    nothing more, a read that brings it back finds it clean, so writing it again
    charges again; a line read back while still resident and dirty is not charged
    again when rewritten."""
    gm = GlobalMemory(_target(cap_lines=cap))
    gm.cost(0, _store("y", 0, 1), 10)  # 1 line, dirtied
    for line in range(cap):  # evicts y's line
        gm.cost(0, _load("x", line, 1), 10)
    before = gm.hbm.bytes
    assert before == (1 + cap) * LINE
    gm.cost(0, _load("y", 0, 1), 10)  # a miss: brought back clean
    gm.cost(0, _store("y", 0, 1), 10)  # dirtied again
    assert gm.hbm.bytes == before + 2 * LINE
    gm.cost(0, _load("y", 0, 1), 10)  # a hit of the dirty line
    gm.cost(0, _store("y", 0, 1), 10)
    assert gm.hbm.bytes == before + 2 * LINE


def test_a_read_partly_hitting_pays_hbm_for_its_missing_lines_only():
    """A window of n lines of which h are resident: (n - h) / n of its bytes cross HBM,
    the whole window crosses the L2 channel."""
    for n in (2, 5, 8):
        for h in range(1, n):
            gm = GlobalMemory(_target())
            gm.cost(0, _load("x", 0, h), 10)
            gm.cost(0, _load("x", 0, n), 10)
            assert gm.hbm.bytes == h * LINE + (n - h) * LINE
            assert gm.l2_channel.bytes == (h + n) * LINE
            assert (gm.l2.hits, gm.l2.misses) == (h, n)


def test_only_gm_paths_count_and_gm_writes_are_the_paths_to_gm():
    """A plan's GM bytes are its DMA items on the ``[gm] paths``; it writes when one of
    them ends in GM (UB->GM, L0C->GM), whatever else the plan holds."""
    gm = GlobalMemory(_target())
    on_chip = ("dma", "UB_L1", 4 * LINE), ("vec", "GM_UB", 8 * LINE)
    gm.cost(0, _xfer("GM_UB", "x", 0, 2 * LINE, extra=on_chip), 10)
    assert gm.l2_channel.bytes == 2 * LINE
    assert gm.hbm.bytes == 2 * LINE
    gm.cost(0, _xfer("L0C_GM", "x", 0, 2 * LINE), 10)  # a write: dirties clean lines
    assert gm.hbm.bytes == 4 * LINE
    gm.cost(0, _xfer("GM_L1", "x", 0, 2 * LINE), 10)  # a read: hits
    assert gm.hbm.bytes == 4 * LINE
    gm.cost(0, _xfer("UB_L1", "x", 0, 2 * LINE), 10)  # no GM path: not a GM transfer
    assert gm.l2_channel.bytes == 6 * LINE


def test_a_transfer_without_a_window_misses_on_both_paths():
    """With no GM window the L2 cannot tell its lines: every byte of a read or a write
    crosses HBM."""
    gm = GlobalMemory(_target())
    for path in ("GM_UB", "UB_GM", "GM_UB"):
        t = _xfer(path, "x", 0, 3 * LINE)
        t.gm = None
        gm.cost(0, t, 10)
    assert gm.hbm.bytes == 9 * LINE


def test_with_the_l2_off_every_byte_crosses_hbm():
    gm = GlobalMemory(_target(), l2=False)
    assert gm.l2 is None and not gm.needs_window()
    for path in ("GM_UB", "UB_GM", "GM_UB", "UB_GM"):
        gm.cost(0, _xfer(path, "x", 0, 4 * LINE), 10)
    assert gm.hbm.bytes == 16 * LINE
    assert set(gm.summary(100)) == {"hbm"}


# --- the shared channel ----------------------------------------------------------------------


@pytest.mark.parametrize("l2", [False, True])
@pytest.mark.parametrize("n", [1, 3, 8])
def test_transfers_of_one_cycle_are_served_one_after_the_other(l2, n):
    """n transfers starting at cycle 100 on a 1 GiB/s HBM (1.07 B/cycle at 1 GHz): the
    k-th ends when k transfers' bytes have crossed it, rounded to the cycle; a transfer
    whose own path is slower than its turn keeps its own cost."""
    gm = GlobalMemory(_target(hbm_gib=1.0, l2_gib=1.0e6), l2=l2)
    nbytes = 4 * LINE
    per = nbytes / _bpc(1.0)
    for k in range(1, n + 1):
        cost = gm.cost(100, _load("x", 4 * k, 4), 10)
        assert cost == int(k * per + 0.5)
    gm2 = GlobalMemory(_target(hbm_gib=1.0, l2_gib=1.0e6), l2=l2)
    slow = int(per * 5)
    assert gm2.cost(100, _load("x", 0, 4), slow) == slow


def test_a_transfer_after_the_channel_is_free_is_not_queued():
    gm = GlobalMemory(_target(hbm_gib=1.0, l2_gib=1.0e6))
    per = 4 * LINE / _bpc(1.0)
    gm.cost(0, _load("x", 0, 4), 10)
    later = int(per) + 1000
    assert gm.cost(later, _load("x", 4, 4), 10) == int(per + 0.5)


def test_the_l2_channel_bounds_hits_too():
    """Hits cost no HBM but still cross the L2 channel: with a slow L2 channel, n
    re-reads of one resident window at one cycle end one L2 turn after the other."""
    gm = GlobalMemory(_target(hbm_gib=1.0e6, l2_gib=1.0))
    gm.cost(0, _load("x", 0, 2), 10)
    per = 2 * LINE / _bpc(1.0)
    t0 = 10_000_000
    for k in range(1, 5):
        assert gm.cost(t0, _load("x", 0, 2), 10) == int(k * per + 0.5)


@pytest.mark.parametrize("l2", [False, True])
@pytest.mark.parametrize("nbytes_lines,total", [(4, 1000), (16, 777), (64, 100_000)])
def test_utilisation_is_busy_time_over_the_run(l2, nbytes_lines, total):
    """Each channel's utilisation is the cycles its bytes take at its bandwidth over the
    run's cycles, to 4 decimals; the hit rate the hits over the lines touched."""
    hbm_gib, l2_gib = 8.0, 32.0
    gm = GlobalMemory(_target(hbm_gib=hbm_gib, l2_gib=l2_gib), l2=l2)
    for _ in range(3):
        gm.cost(0, _load("x", 0, nbytes_lines), 10)
    s = gm.summary(total)
    w = nbytes_lines * LINE
    hbm_bytes = w if l2 else 3 * w
    assert s["hbm"] == {
        "bytes": hbm_bytes,
        "utilization": round(hbm_bytes / _bpc(hbm_gib) / total, 4),
    }
    if l2:
        assert s["l2"] == {
            "bytes": 3 * w,
            "utilization": round(3 * w / _bpc(l2_gib) / total, 4),
            "hit_rate": round(2 / 3, 4),
        }
    assert gm.summary(0)["hbm"]["utilization"] == 0.0


def test_the_chip_channel_is_the_targets_bandwidth():
    """On a2a3 the HBM channel moves ``[gm] bandwidth_gib_per_s`` at the target clock: 24
    cores streaming distinct data fill it, and its utilisation is its bytes' time at that
    bandwidth over the run."""
    tgt = load_target("a2a3")
    bpc = tgt.gm["bandwidth_gib_per_s"] * 2**30 / tgt.clock_hz
    for cores in (8, 24):
        k = sim.Kernel("stream", block_dim=cores)
        x = k.gm("x", "f32", (64 * 6 * cores, 256))
        t = k.tile("vec", "f32", 64, 256)
        for i in range(6):
            r0 = k.block_idx * (64 * 6) + 64 * i
            k.TLOAD(t, x[r0 : r0 + 64, :])
        r = sim.simulate(k, functional=False)
        nbytes = cores * 6 * 64 * 256 * 4
        assert r.memory["hbm"]["bytes"] == nbytes
        want = round(nbytes / bpc / r.total_cycles, 4)
        assert r.memory["hbm"]["utilization"] == pytest.approx(want, abs=1e-4)


# --- the L2 latencies (apply_latency) --------------------------------------------------------


@pytest.mark.parametrize("lines", [1, 4, 32])
@pytest.mark.parametrize("own", [40, 400, 4000])
def test_apply_latency_replaces_the_path_cost(lines, own):
    """With ``apply_latency`` (timing-model.md §5.4): a transfer with a missing line costs
    its path cost plus ``miss_extra_cycles``; one whose lines all hit costs
    min(path cost, bytes / hit_bytes_per_cycle + hit_fixed_cycles) — shorter than its
    path when that is cheaper. The channels are fast enough never to be the bound."""
    tgt = _target(
        hbm_gib=1.0e6,
        l2_gib=1.0e6,
        apply_latency=True,
        hit_fixed_cycles=30,
        hit_bytes_per_cycle=64,
        miss_extra_cycles=120,
    )
    gm = GlobalMemory(tgt)
    nbytes = lines * LINE
    assert gm.cost(0, _load("x", 0, lines), own) == own + 120
    hit = min(own, nbytes / 64 + 30)
    assert gm.cost(1_000_000, _load("x", 0, lines), own) == int(hit + 0.5)
    # one line missing is a miss
    assert gm.cost(2_000_000, _load("x", 0, lines + 1), own) == own + 120
    # a write whose lines are resident hits too
    assert gm.cost(3_000_000, _store("x", 0, lines), own) == int(hit + 0.5)


def test_without_apply_latency_the_path_cost_stands():
    gm = GlobalMemory(_target(hbm_gib=1.0e6, l2_gib=1.0e6))
    for t0, own in ((0, 333), (10_000, 333), (20_000, 77)):
        assert gm.cost(t0, _load("x", 0, 8), own) == own  # a miss, then hits


@pytest.mark.parametrize("cap", [4, 16])
def test_hits_bring_nothing_in(cap):
    """Re-reading resident lines any number of times evicts none of them: only lines
    brought in age the others."""
    gm = GlobalMemory(_target(cap_lines=cap))
    for line in range(cap):
        gm.cost(0, _load("x", line, 1), 10)
    for _ in range(3 * cap):
        gm.cost(0, _load("x", 0, 1), 10)
    for line in range(cap):
        gm.cost(0, _load("x", line, 1), 10)
    assert (gm.l2.hits, gm.l2.misses) == (4 * cap, cap)


@pytest.mark.parametrize("cap", [4, 8])
def test_rewriting_an_evicted_dirty_line_charges_again(cap):
    """A dirty line evicted (its write-back charged when dirtied) and written again with
    no read between: a new dirtying, charged again."""
    gm = GlobalMemory(_target(cap_lines=cap))
    gm.cost(0, _store("y", 0, 2), 10)
    for line in range(cap):
        gm.cost(0, _load("x", line, 1), 10)
    gm.cost(0, _store("y", 0, 2), 10)
    assert gm.hbm.bytes == (2 + cap + 2) * LINE


def _strided(path: str, array: str, rows: int, row_stride_lines: int):
    """``rows`` rows of one line each, ``row_stride_lines`` lines apart (f32): a window
    that is not one run of bytes, so its lines are an array, not a range."""
    nbytes = rows * LINE
    plan = SimpleNamespace(items=(SimpleNamespace(kind="dma", name=path, bytes=nbytes),))
    window = (array, 0, rows, LINE // 4, row_stride_lines * LINE // 4, 1, 4)
    return SimpleNamespace(plan=plan, gm=window)


@pytest.mark.parametrize("cap", [8, 32])
def test_a_strided_window_reread_after_eviction_is_clean(cap):
    """The rule of the contiguous case above for a strided window (its lines an array):
    the re-read brings its lines back clean, so writing them again charges them again."""
    rows = 4
    gm = GlobalMemory(_target(cap_lines=cap))
    gm.cost(0, _strided("UB_GM", "y", rows, 8), 10)  # 4 lines dirtied
    assert gm.hbm.bytes == rows * LINE
    for line in range(cap):  # evicts them
        gm.cost(0, _load("x", line, 1), 10)
    before = gm.hbm.bytes
    gm.cost(0, _strided("GM_UB", "y", rows, 8), 10)  # misses: read from HBM, clean
    assert gm.hbm.bytes == before + rows * LINE
    gm.cost(0, _strided("UB_GM", "y", rows, 8), 10)  # dirtied again: charged again
    assert gm.hbm.bytes == before + 2 * rows * LINE


def test_a_gm_table_without_a_bandwidth_shares_nothing():
    """No ``bandwidth_gib_per_s`` (or zero): no shared channel, each transfer its own cost."""
    for gib in (None, 0.0):
        t = _target(l2=False)
        if gib is None:
            del t.gm["bandwidth_gib_per_s"]
        else:
            t.gm["bandwidth_gib_per_s"] = gib
        assert not GlobalMemory(t).active
    assert GlobalMemory(_target(l2=False)).active
