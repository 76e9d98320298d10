"""The chip's shared mechanisms (``sim.engine.gm``, ``sim.engine.launch``) as relations.

Over families of core counts, block counts, port groupings, page sizes, walk times and
write-port capacities, never one shape: more contention (more cores on a write port, a
smaller capacity, more pages touched) never makes a run faster; making a mechanism free
(``simulate(..., free=...)``) never makes it slower; with every GM mechanism free, blocks
of equal work take one block's time per wave; the write ports wait writes only and only
from the cores on the port; a page's first touch costs one walk, later touches none; the
launch overhead is ``[chip.launch] overhead_us`` beside the device time, never in it. The
ports' processor sharing and the walks are checked against the rules of the module
docstring worked by hand.
"""

import json
import tomllib
from pathlib import Path
from types import SimpleNamespace

import attrs
import pytest
from cli_fixtures import one_line_error

import sim
from sim.base.errors import UserError
from sim.engine.gm import GlobalMemory, _Pages, _WritePorts
from sim.engine.launch import MECHANISMS
from sim.kernel.files import kernel_source
from sim.target import load_target

ROOT = Path(__file__).resolve().parent.parent
GM_FREE = ("gm_bandwidth", "gm_write_queue", "gm_first_touch")


def _writes(block_dim: int, rows: int = 32, n: int = 4):
    """Each block loads one rows x 256 f32 tile and stores it to n windows of its own."""
    k = sim.Kernel("writes", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * block_dim, 256))
    y = k.gm("y", "f32", (rows * n * block_dim, 256))
    t = k.tile("vec", "f32", rows, 256)
    r0 = k.block_idx * rows
    e = k.TLOAD(t, x[r0 : r0 + rows, :])
    for i in range(n):
        r0 = k.block_idx * (rows * n) + rows * i
        e = k.TSTORE(y[r0 : r0 + rows, :], t, e)
    return k


def _reads(block_dim: int, rows: int = 32, n: int = 4):
    """Each block streams n rows x 256 f32 tiles of its own from GM (no GM write)."""
    k = sim.Kernel("reads", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * n * block_dim, 256))
    t = k.tile("vec", "f32", rows, 256)
    for i in range(n):
        r0 = k.block_idx * (rows * n) + rows * i
        k.TLOAD(t, x[r0 : r0 + rows, :])
    return k


def _target(
    *,
    cores: int | None = None,
    capacity: float | None = None,
    per_port: int | None = None,
    hbm=None,
    l2=None,
    page: int | None = None,
    walk: float | None = None,
):
    tgt = load_target("a2a3")
    chip = dict(tgt.chip) if cores is None else {**tgt.chip, "cores": cores}
    gm = dict(tgt.gm)
    if capacity is not None:
        gm["write_queue"] = {**gm["write_queue"], "capacity_gib_per_s": capacity}
    if per_port is not None:
        gm["write_queue"] = {**gm["write_queue"], "cores_per_port": per_port}
    if page is not None:
        gm["first_touch"] = {**gm["first_touch"], "page_bytes": page}
    if walk is not None:
        gm["first_touch"] = {**gm["first_touch"], "walk_cycles": walk}
    if hbm is not None:
        gm["bandwidth_gib_per_s"] = hbm
    if l2 is not None:
        gm["l2"] = {**gm["l2"], "bandwidth_gib_per_s": l2}
    return attrs.evolve(tgt, chip=chip, gm=gm)


def _cycles(kernel, target="a2a3", **kw) -> int:
    return sim.simulate(kernel, target, functional=False, trace="none", **kw).total_cycles


@pytest.mark.parametrize("rows", [16, 64])
def test_more_cores_writing_never_finish_sooner(rows):
    """The same work per core on 1 .. 24 cores: never fewer cycles with more cores, more
    at 24 than at 1 (the writes share the path); with the GM mechanisms free, exactly one
    core's cycles whatever the count."""
    counts = (1, 2, 4, 8, 16, 24)
    shared = [_cycles(_writes(n, rows)) for n in counts]
    assert shared == sorted(shared)
    assert shared[-1] > shared[0]
    free = [_cycles(_writes(n, rows), free=GM_FREE) for n in counts]
    assert free == [free[0]] * len(counts)
    assert all(f <= s for f, s in zip(free, shared, strict=True))


@pytest.mark.parametrize("cores", [4, 12, 24])
def test_a_smaller_write_capacity_is_never_faster(cores):
    caps = (275.0, 550.0, 1100.0, 4400.0)
    got = [_cycles(_writes(cores), _target(capacity=c)) for c in caps]
    assert got == sorted(got, reverse=True)
    assert got[0] > got[-1]


@pytest.mark.parametrize("kernel", [_reads, _writes])
@pytest.mark.parametrize("cores", [8, 24])
def test_narrower_shared_channels_are_never_faster(kernel, cores):
    """The HBM channel (L2 off: every byte crosses it) and the L2 channel, each at four
    bandwidths, the write queue free (the relation of the channels alone: the module
    docstring says how a channel narrower than the write path lowers the queue's load):
    never fewer cycles with less bandwidth; at the narrowest the run is slower than at the
    widest (the channel binds), and freeing the channels gives the widest's cycles or
    fewer."""
    k = kernel(cores)
    q = "gm_write_queue"
    hbm = [_cycles(k, _target(hbm=b), l2=False, free=q) for b in (100.0, 400.0, 1490.0, 8000.0)]
    assert hbm == sorted(hbm, reverse=True) and hbm[0] > hbm[-1]
    assert _cycles(k, _target(hbm=100.0), l2=False, free=GM_FREE) <= hbm[-1]
    l2 = [_cycles(k, _target(l2=b), free=q) for b in (200.0, 800.0, 4096.0, 16000.0)]
    assert l2 == sorted(l2, reverse=True) and l2[0] > l2[-1]


@pytest.mark.parametrize("kernel", [_writes, _reads])
@pytest.mark.parametrize("cores", [1, 3, 8, 24])
def test_freeing_a_mechanism_is_never_slower(kernel, cores):
    """Each GM mechanism freed alone, then both: never more cycles than as is, and both
    free never more than either alone."""
    k = kernel(cores)
    as_is = _cycles(k)
    alone = {m: _cycles(k, free=m) for m in GM_FREE}
    both = _cycles(k, free=GM_FREE)
    assert all(c <= as_is for c in alone.values())
    assert both <= min(alone.values())


@pytest.mark.parametrize("cores", [8, 12, 24])
def test_the_write_ports_wait_writes_only(cores):
    """Loads alone: the ports never act. The same number of cores storing: they do."""
    assert _cycles(_reads(cores)) == _cycles(_reads(cores), free="gm_write_queue")
    assert _cycles(_writes(cores)) > _cycles(_writes(cores), free="gm_write_queue")
    r = sim.simulate(_writes(cores), functional=False, trace="none")
    assert r.memory["write_queue"]["writes"] == 4 * cores  # every store, no load


@pytest.mark.parametrize("per_port", [2, 4, 6])
def test_cores_on_other_ports_do_not_slow_a_port(per_port):
    """Ports of ``per_port`` cores (the channels and walks free, so the ports alone act):
    1, 2, 3 full ports of equally loaded cores take the same cycles; within one port,
    more cores never fewer cycles; one port of all the cores is never faster."""
    tgt = _target(per_port=per_port)
    free = ("gm_bandwidth", "gm_first_touch")
    full = [_cycles(_writes(per_port * n), tgt, free=free) for n in (1, 2, 3)]
    assert full == [full[0]] * 3
    within = [_cycles(_writes(n), tgt, free=free) for n in range(1, per_port + 1)]
    assert within == sorted(within)
    one_port = _target(per_port=3 * per_port)
    assert _cycles(_writes(3 * per_port), one_port, free=free) > full[-1]


def test_a_port_shares_its_capacity_with_the_writes_in_flight():
    """10 B/cycle ports of two cores, worked by hand from the rule: a write of b bytes
    starting at t with k - 1 writes still in flight on its port ends at the later of
    t + b k / 10 and its own end."""
    p = _WritePorts(10.0, 2)
    assert p.end(0, 1000, 0, 50) == 100  # alone on port 0: 1000 / 10
    assert p.end(0, 1000, 1, 50) == 200  # core 1 shares port 0 with it: k = 2
    assert p.end(0, 1000, 2, 50) == 100  # core 2: port 1, alone
    assert p.end(0, 10, 3, 500) == 500  # its own path is slower than its share
    # at 150 the first write is done, the second (to 200) still in flight: k = 2
    assert p.end(150, 1000, 0, 160) == 350
    # at 360 every write of port 0 is done; port 1's last ends at 500: k = 2 there
    assert p.end(360, 1000, 1, 370) == 460
    assert p.end(360, 1000, 2, 370) == 560
    assert p.n == 7 and p.bytes == 6010
    assert p.waited == pytest.approx((100 - 50) + (200 - 50) + 50 + 190 + 90 + 190)


def test_a_page_is_walked_at_its_first_touch_only():
    """Pages of 4096 bytes, walks of 100 cycles, worked by hand: a transfer moves once
    every page it touches is translated; a page under walk is waited for, a walked one
    costs nothing; pages are per GM array."""
    w = _Pages(4096, 100.0)
    f16 = 2
    # (array, base element, rows, cols, row stride, col stride, itemsize)
    assert w.start(0, ("a", 0, 1, 4096, 4096, 1, f16)) == 100  # pages 0 and 1
    assert w.start(50, ("a", 2048, 1, 4096, 4096, 1, f16)) == 150  # 1 walking, 2 new
    assert w.start(300, ("a", 0, 1, 6144, 6144, 1, f16)) == 300  # 0 .. 2 all walked
    assert w.start(300, ("b", 0, 1, 16, 16, 1, f16)) == 400  # another array's page 0
    # 4 rows 16 KiB apart: pages 0, 4, 8, 12 of "c"; then 4 .. 8 (5, 6, 7 new)
    assert w.start(0, ("c", 0, 4, 64, 8192, 1, f16)) == 100
    assert w.start(20, ("c", 8192, 1, 10240, 10240, 1, f16)) == 120
    assert w.walks == 2 + 1 + 1 + 4 + 3
    assert w.waited == pytest.approx(100 + 100 + 100 + 100 + 100)


@pytest.mark.parametrize("cores", [2, 8])
@pytest.mark.parametrize("walk", [100.0, 1000.0])
def test_first_touches_cost_one_walk_per_page_entry(cores, walk):
    """Each block loads one tile and stores four (the other mechanisms free): with pages
    larger than the arrays, the load waits one walk and the first store one (every later
    store hits walked pages): two walks in all; with pages smaller than a tile every
    transfer enters new pages: five. Never faster with longer walks or smaller pages."""
    free = ("gm_bandwidth", "gm_write_queue")
    base = _cycles(_writes(cores), free=(*free, "gm_first_touch"))
    big = _cycles(_writes(cores), _target(walk=walk), free=free)
    small = _cycles(_writes(cores), _target(walk=walk, page=4096), free=free)
    assert big - base == round(2 * walk)
    assert small - base == round(5 * walk)
    longer = _cycles(_writes(cores), _target(walk=2 * walk, page=4096), free=free)
    assert longer >= small >= big >= base


def test_gm_hands_the_port_share_to_writes_and_reports_its_mean():
    """A stand-in chip with 10 B/cycle write ports of two cores (given in GiB/s at a 1 GHz
    clock), channels too wide to matter and no L2: each store costs the later of its own
    10 cycles and its share of its port; a load neither waits nor counts; the summary's
    mean is theirs."""
    clock = 1.0e9
    target = SimpleNamespace(
        clock_hz=clock,
        gm={
            "paths": ["GM_UB", "UB_GM"],
            "bandwidth_gib_per_s": 1.0e9,
            "write_queue": {
                "enabled": True,
                "capacity_gib_per_s": 10.0 * clock / 2**30,
                "cores_per_port": 2,
            },
        },
    )

    def xfer(path, nbytes):
        item = SimpleNamespace(kind="dma", name=path, bytes=nbytes)
        plan = SimpleNamespace(items=(item,), bytes=nbytes)
        return SimpleNamespace(plan=plan, gm=None)

    gm = GlobalMemory(target)
    got = [
        gm.cost(0, xfer("UB_GM", 50), 10, 0),  # 5 cycles of port: its own 10
        gm.cost(0, xfer("UB_GM", 500), 10, 1),  # port 0 with the first: 500 * 2 / 10
        gm.cost(0, xfer("GM_UB", 8000), 10, 0),  # a load: no port
        gm.cost(0, xfer("UB_GM", 500), 10, 2),  # port 1, alone: 50
        gm.cost(5, xfer("UB_GM", 300), 10, 0),  # port 0: both earlier writes in flight
    ]
    assert got == [10, 100, 10, 50, 300 * 3 // 10]
    waits = [0, 90, 40, 80]
    assert gm.summary(2000)["write_queue"] == {
        "writes": 4,
        "mean_wait_cycles": round(sum(waits) / 4, 1),
    }


def _launch_us() -> float:
    with open(ROOT / "models" / "a2a3" / "machine.toml", "rb") as f:
        return float(tomllib.load(f)["chip"]["launch"]["overhead_us"])


@pytest.mark.parametrize("blocks", [1, 5, 24, 30])
def test_launch_is_beside_device_time(blocks):
    """The launch overhead is the machine.toml figure in cycles, once per call whatever
    the block count; it never enters the device time, and freeing it zeroes it only."""
    clock = load_target("a2a3").clock_hz
    launch = round(_launch_us() * 1e-6 * clock)
    assert launch > 0
    r = sim.simulate(_writes(blocks), functional=False, trace="none")
    assert r.launch_cycles == launch
    assert r.with_launch_cycles == r.total_cycles + launch == r.device_cycles + launch
    free = sim.simulate(_writes(blocks), functional=False, trace="none", free="launch")
    assert (free.launch_cycles, free.total_cycles) == (0, r.total_cycles)
    j = r.to_json()
    assert (j["device_cycles"], j["launch_cycles"], j["with_launch_cycles"]) == (
        r.total_cycles,
        launch,
        r.total_cycles + launch,
    )
    assert f"launch overhead: {launch} cycles" in r.report()


@pytest.mark.parametrize("blocks,cores", [(5, 2), (9, 4), (25, 24), (49, 24)])
def test_waves_stay_ceil_blocks_over_cores_under_contention(blocks, cores):
    """Equal blocks that share the write path: no core runs more than ceil(blocks / cores)
    blocks, and the run never beats that many waves of one block alone."""
    tgt = _target(cores=cores)
    waves = -(-blocks // cores)
    one = _cycles(_writes(1), tgt)
    r = sim.simulate(_writes(blocks), tgt, functional=False, trace="none")
    per_core = [sum(1 for b in r.blocks if b[1] == c) for c in range(cores)]
    assert max(per_core) == waves
    assert r.total_cycles >= waves * one
    free = sim.simulate(_writes(blocks), tgt, functional=False, trace="none", free=GM_FREE)
    assert free.total_cycles == waves * one
    assert free.total_cycles <= r.total_cycles


def test_an_unknown_mechanism_is_refused_naming_the_known_ones():
    with pytest.raises(UserError, match="no shared mechanism 'l3'") as e:
        sim.simulate(_writes(1), functional=False, free="l3")
    assert all(m in str(e.value) for m in MECHANISMS)


FA_PY = ROOT / "examples" / "flash_attention.py"


@pytest.mark.parametrize("cores", [2, 4])
def test_the_cli_frees_a_mechanism(cli, cores):
    """``run --free`` gives simulate(free=...)'s cycles; repeated, the mechanisms add up;
    ``compare --free`` frees it in both runs."""
    args = ("--timing-only", "--json", "--arg", "s1=512", "--arg", f"cores={cores}")
    k = kernel_source(str(FA_PY))(s1=512, cores=cores)
    want = {
        free: sim.simulate(k, functional=False, trace="none", free=free)
        for free in ((), ("gm_first_touch",), ("gm_first_touch", "launch"))
    }
    for free, r in want.items():
        flags = [x for m in free for x in ("--free", m)]
        code, out, err = cli("run", FA_PY, *args, *flags)
        assert code == 0, err
        got = json.loads(out)
        assert (got["device_cycles"], got["launch_cycles"]) == (r.total_cycles, r.launch_cycles)
    assert want[("gm_first_touch",)].total_cycles < want[()].total_cycles
    code, out, err = cli("compare", FA_PY, *args, "--free", "gm_first_touch")
    assert code == 0, err
    assert json.loads(out)["manual"]["total_cycles"] == want[("gm_first_touch",)].total_cycles


def test_the_cli_refuses_an_unknown_mechanism_in_one_line(cli):
    code, _, err = cli("run", FA_PY, "--timing-only", "--free", "l3")
    one_line_error(code, err, "no shared mechanism 'l3'", "gm_write_queue", "launch")
