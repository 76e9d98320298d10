"""The chip's shared mechanisms (``sim.engine.gm``, ``sim.engine.launch``) as relations.

Over families of core counts, block counts, window sizes and write-path capacities, never
one shape: more contention (more cores writing, a smaller write capacity) never makes a
run faster; making a mechanism free (``simulate(..., free=...)``) never makes it slower;
with every GM mechanism free, blocks of equal work take one block's time per wave; the
write queue waits writes only; the launch overhead is ``[chip.launch] overhead_us`` beside
the device time, never in it. The queue's wait is checked against the M/D/1 formula of the
module docstring worked by hand.
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
from sim.engine.gm import GlobalMemory, _LoadQueue
from sim.engine.launch import MECHANISMS
from sim.kernel.files import kernel_source
from sim.target import load_target

ROOT = Path(__file__).resolve().parent.parent
GM_FREE = ("gm_bandwidth", "gm_write_queue")


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


def _target(*, cores: int | None = None, capacity: float | None = None, hbm=None, l2=None):
    tgt = load_target("a2a3")
    chip = dict(tgt.chip) if cores is None else {**tgt.chip, "cores": cores}
    gm = dict(tgt.gm)
    if capacity is not None:
        gm["write_queue"] = {**gm["write_queue"], "capacity_gib_per_s": capacity}
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


@pytest.mark.parametrize("cores", [2, 8, 24])
def test_the_write_queue_waits_writes_only(cores):
    """Loads alone: the queue never acts. The same number of cores storing: it does."""
    assert _cycles(_reads(cores)) == _cycles(_reads(cores), free="gm_write_queue")
    assert _cycles(_writes(cores)) > _cycles(_writes(cores), free="gm_write_queue")
    r = sim.simulate(_writes(cores), functional=False, trace="none")
    assert r.memory["write_queue"]["writes"] == 4 * cores  # every store, no load


def test_the_queue_wait_is_the_md1_wait_of_the_windowed_load():
    """Capacity 10 B/cycle, window 1000 cycles (10 000 bytes), max load 0.9. Worked by
    hand from the rule: service = bytes / 10; wait = service * rho / (2 (1 - rho))."""
    q = _LoadQueue(10.0, 1000.0, 0.9)
    assert q.wait(0, 5000) == 0.0  # an idle path
    assert q.wait(0, 1000) == pytest.approx(100 * 0.5 / (2 * 0.5))  # 5000 B: rho 0.5
    # half-way into the next window: half of the last window's 6000 B still count
    assert q.wait(1500, 1000) == pytest.approx(100 * 0.3 / (2 * 0.7))
    # two windows on: the path has forgotten it all
    assert q.wait(3600, 2000) == 0.0
    # a load past capacity is capped at max_load
    q.wait(3600, 50_000)
    assert q.wait(3600, 1000) == pytest.approx(100 * 0.9 / (2 * 0.1))
    assert q.n == 6


def _window_reference(requests, bpc, w, max_load):
    """The waits of ``requests`` [(cycle, bytes)] from per-window byte sums: windows are
    [i w, (i + 1) w); the load at t is this window's bytes so far plus the previous
    window's times the part of it still inside the last w cycles, over w * bpc."""
    sums: dict[int, float] = {}
    out = []
    for t, n in requests:
        i = t // w
        frac = (t - i * w) / w
        rho = min((sums.get(i, 0.0) + sums.get(i - 1, 0.0) * (1 - frac)) / (w * bpc), max_load)
        out.append(n / bpc * rho / (2 * (1 - rho)))
        sums[i] = sums.get(i, 0.0) + n
    return out


def test_the_windowed_load_follows_per_window_sums():
    """Requests at window boundaries, inside windows, after gaps of one and of several
    windows: each wait is the reference's (windows of 1000 cycles, 10 B/cycle)."""
    requests = [
        (0, 4000),
        (999, 1000),
        (1000, 2000),  # on a boundary: the window rolls
        (1500, 500),
        (1999, 3000),
        (2000, 100),
        (2700, 2500),
        (5200, 800),  # two idle windows: nothing of before counts
        (5900, 4000),
        (6100, 700),
        (6100, 9000),
        (6800, 100),  # past capacity: capped
        (7000, 100),
    ]
    q = _LoadQueue(10.0, 1000.0, 0.9)
    got = [q.wait(t, n) for t, n in requests]
    assert got == pytest.approx(_window_reference(requests, 10.0, 1000, 0.9))
    assert q.waited == pytest.approx(sum(got)) and q.n == len(requests)


def test_gm_hands_the_queue_wait_to_writes_and_reports_its_mean():
    """A stand-in chip with a 10 B/cycle write path (given in GiB/s at a 1 GHz clock) and
    channels too wide to matter: each store costs its own 10 cycles plus the wait worked
    by hand; a load neither waits nor counts; the summary's mean is theirs."""
    clock = 1.0e9
    target = SimpleNamespace(
        clock_hz=clock,
        gm={
            "paths": ["GM_UB", "UB_GM"],
            "bandwidth_gib_per_s": 1.0e9,
            "write_queue": {
                "enabled": True,
                "capacity_gib_per_s": 10.0 * clock / 2**30,
                "window_cycles": 1000,
                "max_load": 0.9,
            },
        },
    )

    def xfer(path, nbytes):
        item = SimpleNamespace(kind="dma", name=path, bytes=nbytes)
        plan = SimpleNamespace(items=(item,), bytes=nbytes)
        return SimpleNamespace(plan=plan, gm=None)

    gm = GlobalMemory(target)
    waits = [0.0, 100 * 0.5 / (2 * 0.5), 100 * 0.3 / (2 * 0.7)]
    got = [
        gm.cost(0, xfer("UB_GM", 5000), 10),
        gm.cost(0, xfer("UB_GM", 1000), 10),
        gm.cost(0, xfer("GM_UB", 8000), 10),  # a load: no wait, no load on the path
        gm.cost(1500, xfer("UB_GM", 1000), 10),
    ]
    assert got == [10, round(10 + waits[1]), 10, round(10 + waits[2])]
    assert gm.summary(2000)["write_queue"] == {
        "writes": 3,
        "mean_wait_cycles": round(sum(waits) / 3, 1),
    }
    assert round(sum(waits) / 3, 1) != round(sum(waits) / 3, 2)  # the rounding is seen


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
        for free in ((), ("gm_write_queue",), ("gm_write_queue", "launch"))
    }
    for free, r in want.items():
        flags = [x for m in free for x in ("--free", m)]
        code, out, err = cli("run", FA_PY, *args, *flags)
        assert code == 0, err
        got = json.loads(out)
        assert (got["device_cycles"], got["launch_cycles"]) == (r.total_cycles, r.launch_cycles)
    assert want[("gm_write_queue",)].total_cycles < want[()].total_cycles
    code, out, err = cli("compare", FA_PY, *args, "--free", "gm_write_queue")
    assert code == 0, err
    assert json.loads(out)["manual"]["total_cycles"] == want[("gm_write_queue",)].total_cycles


def test_the_cli_refuses_an_unknown_mechanism_in_one_line(cli):
    code, _, err = cli("run", FA_PY, "--timing-only", "--free", "l3")
    one_line_error(code, err, "no shared mechanism 'l3'", "gm_write_queue", "launch")
