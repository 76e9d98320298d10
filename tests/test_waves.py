"""Blocks in waves: a launch of more blocks than cores (``sim.engine.waves``).

Over families of (blocks, cores) — the chip's core count changed on a copy of the a2a3
target — a block waits for the first free core: with equal blocks and no shared resource
the run takes ceil(blocks / cores) times one block's time; each block sees its own ids
and ``get_block_num`` = blocks; its FIFOs are its own; the trace and ``Result.blocks``
put each block on exactly one core, never two blocks at once on one core.
"""

import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

import sim
from sim.base.errors import UserError
from sim.target import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_flash_attention import HEAD, _program, _reference  # noqa: E402

PAIRS = [(1, 1), (2, 1), (3, 1), (5, 2), (7, 3), (9, 4), (24, 24), (25, 24), (49, 24)]


def _chip(cores: int):
    tgt = load_target("a2a3")
    return attrs.evolve(tgt, chip={**tgt.chip, "cores": cores})


def _compute(block_dim: int, n: int = 6):
    """Vector work only (no GM transfer): nothing shared between blocks."""
    k = sim.Kernel("compute", block_dim=block_dim)
    a, b = k.tile("vec", "f32", 32, 64), k.tile("vec", "f32", 32, 64)
    k.TEXPANDS(a, 1.0)
    for _ in range(n):
        k.TADD(b, a, a)
        k.TMUL(a, b, b)
    return k


@pytest.mark.parametrize("blocks,cores", PAIRS)
def test_equal_blocks_take_one_block_time_per_wave(blocks, cores):
    tgt = _chip(cores)
    one = sim.simulate(_compute(1), tgt, functional=False).total_cycles
    r = sim.simulate(_compute(blocks), tgt, functional=False)
    waves = -(-blocks // cores)
    assert r.total_cycles == waves * one
    assert r.cores == min(blocks, cores)
    assert len(r.blocks) == blocks
    # block b < cores starts at 0 on core b; each later one where a core just freed
    for b, core, start, end in r.blocks:
        assert (start, end) == ((b // cores) * one, (b // cores + 1) * one)
        assert core == b % cores  # equal blocks: every core frees at once, in core order


def _stream(block_dim: int, rows: int = 64, n: int = 4):
    """Each block streams its own n 64 KiB tiles from GM (shares the GM channels)."""
    k = sim.Kernel("stream", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * n * block_dim, 256))
    t = k.tile("vec", "f32", rows, 256)
    for i in range(n):
        r0 = k.block_idx * (rows * n) + rows * i
        k.TLOAD(t, x[r0 : r0 + rows, :])
    return k


@pytest.mark.parametrize("blocks,cores", [(3, 1), (5, 2), (9, 4), (30, 8)])
def test_a_wave_is_never_faster_than_one_block_alone(blocks, cores):
    """With shared GM a wave can only take longer than a block alone; and more blocks on
    the same cores never finish sooner."""
    tgt = _chip(cores)
    one = sim.simulate(_stream(1), tgt, functional=False).total_cycles
    r = sim.simulate(_stream(blocks), tgt, functional=False)
    assert r.total_cycles >= -(-blocks // cores) * one
    fewer = sim.simulate(_stream(blocks - 1), tgt, functional=False)
    assert fewer.total_cycles <= r.total_cycles


def _ids(block_dim: int, rows: int = 8):
    """Block b copies x's rows of block b to y's rows of block ``block_num - 1 - b``: y
    is x with its blocks reversed only when every block ran once, with its own index and
    ``get_block_num`` the launch's block count."""
    k = sim.Kernel("ids", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * block_dim, 64))
    y = k.gm("y", "f32", (rows * block_dim, 64))
    t = k.tile("vec", "f32", rows, 64)
    src = k.block_idx * rows
    dst = (k.block_num - 1 - k.block_idx) * rows
    e = k.TLOAD(t, x[src : src + rows, :])
    k.TSTORE(y[dst : dst + rows, :], t, e)
    return k


@pytest.mark.parametrize("blocks,cores", [(2, 1), (5, 2), (9, 4), (26, 24)])
def test_blocks_see_their_own_ids_and_the_block_count(blocks, cores):
    r = sim.simulate(_ids(blocks), _chip(cores))
    x = r.output("x").reshape(blocks, -1)
    np.testing.assert_array_equal(r.output("y").reshape(blocks, -1), x[::-1])


@pytest.mark.parametrize("blocks,cores", [(3, 1), (5, 2)])
def test_fifos_are_per_block(blocks, cores):
    """Flash attention (cube<->vector FIFOs through GM on a2a3) in waves: every block's
    output is its own attention, to the float64 reference; a block's units are one
    group, on one core; a later block on a core runs as the first did."""
    s1 = 256
    tgt = _chip(cores)
    r = sim.simulate(_program(), tgt, inputs={"S1": s1, "S1_TILE": 128}, block_dim=blocks)
    got = r.output("o").reshape(-1, HEAD)
    want = _reference(r, blocks, s1)
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()
    t = r.trace
    assert (t.groupby("block")["core"].nunique() == 1).all()
    assert sorted(t.groupby("block")["unit"].nunique().unique()) == [3]  # AIC, AIV0, AIV1
    ops = t[t["kind"] == "op"]
    per_block = ops.groupby("block").size()
    assert per_block.nunique() == 1 and len(per_block) == blocks


@pytest.mark.parametrize("blocks,cores", [(5, 2), (9, 4), (30, 8)])
def test_the_trace_places_each_block_on_one_core_at_a_time(blocks, cores):
    r = sim.simulate(_stream(blocks), _chip(cores), functional=False)
    t = r.trace
    assert sorted(t["block"].unique()) == list(range(blocks))
    assert (t.groupby("block")["core"].nunique() == 1).all()
    spans = {b: (c, s, e) for b, c, s, e in r.blocks}
    for b, g in t.groupby("block"):
        core, start, end = spans[b]
        assert (g["core"] == core).all()
        assert g["start_cycle"].min() >= start and g["end_cycle"].max() <= end
    for core in range(cores):
        mine = sorted((s, e) for _, c, s, e in r.blocks if c == core)
        assert all(e0 <= s1 for (_, e0), (s1, _) in zip(mine, mine[1:], strict=False))
    assert max(e for *_, e in r.blocks) == r.total_cycles
    j = r.to_json()
    assert [(d["block"], d["core"]) for d in j["blocks"]] == [(b, c) for b, c, _, _ in r.blocks]
    assert f"blocks: {blocks} on {cores} cores, {-(-blocks // cores)} waves" in r.report()


@pytest.mark.parametrize("blocks", [0, -1, 65536, 100_000])
def test_block_dim_outside_the_runtime_limit_is_refused(blocks):
    with pytest.raises(UserError, match=r"^block_dim: expected 1\.\.65535 .* found -?\d+$"):
        sim.simulate(_compute(1), block_dim=blocks)


def test_the_cli_refuses_a_block_dim_past_the_limit_in_one_line(tmp_path):
    import subprocess

    path = Path(__file__).resolve().parent.parent / "examples" / "trelu.pto"
    p = subprocess.run(
        [sys.executable, "-m", "sim", "run", str(path), "--arg", "n=1", "--block-dim", "65536"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    assert len(p.stderr.strip().splitlines()) == 1 and "65535" in p.stderr


@pytest.mark.parametrize("blocks,cores", [(3, 2), (25, 24)])
def test_an_all_block_barrier_past_the_cores_is_refused(blocks, cores):
    k = sim.Kernel("barrier", block_dim=blocks)
    a = k.tile("vec", "f32", 8, 64)
    k.TEXPANDS(a, 1.0)
    k.syncall(mode="hard", core_type="aiv_only")
    k.TADD(a, a, a)
    with pytest.raises(UserError, match=r"pto\.syncall .*never frees"):
        sim.simulate(k, _chip(cores), functional=False)
    # within the cores it runs
    k2 = sim.Kernel("barrier", block_dim=cores)
    b = k2.tile("vec", "f32", 8, 64)
    k2.TEXPANDS(b, 1.0)
    k2.syncall(mode="hard", core_type="aiv_only")
    k2.TADD(b, b, b)
    assert sim.simulate(k2, _chip(cores), functional=False).total_cycles > 0


def test_a_deadlock_names_the_stuck_blocks_and_those_never_started():
    k = sim.Kernel("stuck", block_dim=3)
    x = k.gm("x", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 2)  # never set
    k.TADD(c, a, a)
    with pytest.raises(sim.DeadlockError) as info:
        sim.simulate(k, _chip(2), functional=False)
    text = str(info.value)
    assert "block 0 on core 0 AIV0" in text and "block 1 on core 1 AIV0" in text
    assert "1 of the 3 blocks never started" in text
    assert {(s["block"], s["core"]) for s in info.value.stuck} == {(0, 0), (1, 1)}


def _handshake(block_dim: int, rows: int = 16):
    """Each block's vector units store their rows, then set cross-core flag 3 (mode 2:
    to their core's cube); the cube waits for both, then loads the block's rows and
    stores them to z: z = x only when each cube heard its own block's vector units."""
    k = sim.Kernel("handshake", block_dim=block_dim)
    x = k.gm("x", "f32", (2 * rows * block_dim, 64))
    y = k.gm("y", "f32", (2 * rows * block_dim, 64))
    z = k.gm("z", "f32", (2 * rows * block_dim, 64))
    base = k.block_idx * (2 * rows)
    with k.vector():
        t = k.tile("vec", "f32", rows, 64)
        r0 = base + k.subblock_idx * rows
        e = k.TLOAD(t, x[r0 : r0 + rows, :])
        s = k.TSTORE(y[r0 : r0 + rows, :], t, e)
        k.sync_set("PIPE_MTE3", 3, s, mode=2)
    with k.cube():
        m = k.tile("mat", "f32", 2 * rows, 64)
        k.sync_wait("PIPE_MTE2", 3, mode=2)
        e = k.TLOAD(m, y[base : base + 2 * rows, :])
        k.TSTORE(z[base : base + 2 * rows, :], m, e)
    return k


@pytest.mark.parametrize("blocks,cores", [(3, 1), (5, 2), (26, 24)])
def test_cross_core_flags_are_per_block(blocks, cores):
    r = sim.simulate(_handshake(blocks), _chip(cores))
    np.testing.assert_array_equal(r.output("z"), r.output("x"))
    t = r.trace
    waits = t[(t["unit"] == "AIC") & (t["opcode"].astype(str).str.contains("sync.wait"))]
    spans = {b: (s, e) for b, _, s, e in r.blocks}
    assert len(waits) == blocks
    for _, w in waits.iterrows():
        start, end = spans[w["block"]]
        assert start <= w["start_cycle"] and w["end_cycle"] <= end


@pytest.mark.parametrize("blocks,cores", [(3, 1), (5, 2), (7, 3), (25, 24)])
def test_a_cores_figures_sum_the_blocks_it_ran_with_or_without_trace_rows(blocks, cores):
    tgt = _chip(cores)
    one = sim.simulate(_compute(1), tgt, functional=False).units[0]["pipes"]["PIPE_V"]
    runs = {
        trace: sim.simulate(_compute(blocks), tgt, functional=False, trace=trace)
        for trace in ("full", "none")
    }
    assert runs["full"].units == runs["none"].units
    units = runs["none"].units
    assert [u["core"] for u in units] == list(range(min(blocks, cores)))
    ran = {c: sum(1 for _, core, _, _ in runs["none"].blocks if core == c) for c in range(cores)}
    for u in units:
        v = u["pipes"]["PIPE_V"]
        assert v["busy_cycles"] == ran[u["core"]] * one["busy_cycles"]
        assert v["instructions"] == ran[u["core"]] * one["instructions"]
