"""The whole chip: SPMD blocks, cube/vector units, cube<->vector FIFOs, shared GM.

programming-model.md §2.1: a physical core is 1 AIC + 2 AIV, each with its own pipes;
``block_dim`` cores run one kernel; cube -> vector data goes through a FIFO.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hang_guard import hang_guard

import sim
from sim.base.errors import DeadlockError, UserError
from sim.target import load_target

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_hang():
    with hang_guard(60):
        yield


def _scale_rows(block_dim, rows=16, cols=64):
    """Every block scales its own rows of x by 2."""
    k = sim.Kernel("rows", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * block_dim, cols))
    y = k.gm("y", "f32", (rows * block_dim, cols))
    t = k.tile("vec", "f32", rows, cols)
    r0 = k.block_idx * rows
    e = k.TLOAD(t, x[r0 : r0 + rows, :])
    e = k.TMULS(t, t, 2.0, e)
    k.TSTORE(y[r0 : r0 + rows, :], t, e)
    return k


def test_every_block_works_on_its_own_rows():
    r = sim.simulate(_scale_rows(4))
    x = r.output("x").reshape(64, 64)
    np.testing.assert_array_equal(r.output("y").reshape(64, 64), 2 * x)
    assert sorted(set(zip(r.trace["core"], r.trace["unit"], strict=True))) == [
        (c, "AIV0") for c in range(4)
    ]


def test_one_block_has_the_single_unit_timeline():
    one = sim.simulate(_scale_rows(1))
    # a launch of one unit is not costed by the GM model, so it walks no page on its first
    # touch; with the walks free, the four cores' small transfers do not saturate GM and
    # each core runs as if alone
    four = sim.simulate(_scale_rows(4), free="gm_first_touch")
    t0 = four.trace[four.trace["core"] == 0].reset_index(drop=True)
    assert t0["end_cycle"].tolist() == one.trace["end_cycle"].tolist()
    assert four.total_cycles == one.total_cycles


def _c2v(block_dim=2, M=32, N=64, split=1, slots=2, target="a2a3"):
    """C = 2 * A @ B: the cube multiplies, both vector units scale their half and store."""
    k = sim.Kernel("c2v", block_dim=block_dim)
    a = k.gm("a", "f16", (block_dim * M, 32))
    b = k.gm("b", "f16", (32, N))
    out = k.gm("out", "f32", (block_dim * M, N))
    part = M // 2 if split == 1 else M
    c2v = k.fifo("c2v", "f32", part, N, split=split, slots=slots)
    row = k.block_idx * M
    with k.cube():
        ma = k.tile("mat", "f16", M, 32, blayout="col_major", slayout="row_major")
        mb = k.tile("mat", "f16", 32, N, blayout="col_major", slayout="row_major")
        left = {"blayout": "col_major"} if target == "a5" else {}  # A5 L0A is nZ
        la = k.tile("left", "f16", M, 32, slayout="row_major", **left)
        rb = k.tile("right", "f16", 32, N, slayout="col_major")
        acc = k.tile("acc", "f32", M, N, blayout="col_major", slayout="row_major", fractal=1024)
        e1 = k.TLOAD(ma, a[row : row + M, :])
        e2 = k.TLOAD(mb, b)
        e3 = k.TEXTRACT(la, ma, 0, 0, e1)
        e4 = k.TMOV(rb, mb, e2)
        e5 = k.TMATMUL(acc, la, rb, e3, e4)
        k.tpush(c2v, acc, e5)
    with k.vector():
        t = k.tpop(c2v)
        r = k.tile("vec", "f32", part, N)
        e = k.TMULS(r, t, 2.0)
        k.tfree(c2v)
        vrow = row + k.subblock_idx * part if split == 1 else row
        k.TSTORE(out[vrow : vrow + part, :], r, e)
    return k


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_cube_to_vector_fifo_moves_the_data(target):
    r = sim.simulate(_c2v(target=target), target)
    A = r.output("a").reshape(64, 32).astype(np.float32)
    B = r.output("b").reshape(32, 64).astype(np.float32)
    np.testing.assert_allclose(r.output("out").reshape(64, 64), 2 * A @ B, rtol=1e-3, atol=1e-2)
    units = set(zip(r.trace["core"], r.trace["unit"], strict=True))
    assert units == {(c, u) for c in range(2) for u in ("AIC", "AIV0", "AIV1")}
    pipes = r.trace.groupby("unit")["pipe"].agg(set)
    assert "PIPE_V" not in pipes["AIC"] and "PIPE_M" not in pipes["AIV0"]


def test_a2a3_fifo_goes_through_gm_and_a5_through_fixpipe_to_ub():
    ops = {t: sim.simulate(_c2v(1, target=t), t).trace for t in ("a2a3", "a5")}
    push = {t: df[df["opcode"] == "TPUSH"] for t, df in ops.items()}
    assert push["a2a3"]["operands"].str.contains("L0C_GM").all()
    assert push["a5"]["operands"].str.contains("L0C_UB").all()
    assert (ops["a2a3"]["opcode"] == "TPOP").sum() == 2  # each AIV reads its half from GM
    assert (ops["a5"]["opcode"] == "TPOP").sum() == 0  # A5: the data is already in UB


def test_consumer_waits_for_the_push_and_the_producer_for_a_free_slot():
    tr = sim.simulate(_c2v(1)).trace
    push_end = int(tr.loc[tr["opcode"] == "TPUSH", "end_cycle"].iloc[0])
    pops = tr[(tr["opcode"] == "TPOP")]
    assert (pops["start_cycle"] >= push_end).all()


def _pingpong(pushes, frees_after, slots):
    """The cube pushes ``pushes`` tiles; the vector unit pops them all, then frees."""
    k = sim.Kernel("pp", block_dim=1)
    f = k.fifo("c2v", "f32", 16, 64, slots=slots)
    with k.cube():
        acc = k.tile("acc", "f32", 16, 64, blayout="col_major", slayout="row_major", fractal=1024)
        for _ in range(pushes):
            k.tpush(f, acc)
    with k.vector():
        for i in range(pushes):
            k.tpop(f)
            if i >= frees_after:
                k.tfree(f)
    return k


def test_producer_blocks_when_every_slot_is_full_and_deadlock_names_core_unit_flag():
    sim.simulate(_pingpong(4, 0, 2))  # freed as popped: runs
    with pytest.raises(DeadlockError) as info:
        sim.simulate(_pingpong(3, 5, 2))  # never freed: the third push waits
    msg = str(info.value)
    assert "core 0 AIC PIPE_S (dispatch) waits for flag fifo 0 AIC->AIV0 free slot" in msg
    assert any(s["unit"] == "AIC" and s["core"] == 0 for s in info.value.stuck)


def test_pop_without_push_deadlocks_on_both_vector_units():
    k = sim.Kernel("nopush", block_dim=2)
    f = k.fifo("c2v", "f32", 16, 64)
    with k.vector():
        k.tpop(f)
    with pytest.raises(DeadlockError) as info:
        sim.simulate(k)
    msg = str(info.value)
    for c in (0, 1):
        for u in ("AIV0", "AIV1"):
            assert f"core {c} {u} PIPE_S (dispatch) waits for flag fifo 0 AIC->{u} full slot" in msg


def test_vector_to_cube_fifo_stacks_the_halves():
    k = sim.Kernel("v2c", block_dim=1)
    x = k.gm("x", "f32", (32, 64))
    y = k.gm("y", "f32", (32, 64))
    f = k.fifo("v2c", "f32", 32, 64, split=1)
    with k.vector():
        t = k.tile("vec", "f32", 16, 64)
        r0 = k.subblock_idx * 16
        e = k.TLOAD(t, x[r0 : r0 + 16, :])
        k.tpush(f, t, e)
    with k.cube():
        m = k.tpop(f)
        k.TSTORE(y, m)
        k.tfree(f)
    r = sim.simulate(k)
    np.testing.assert_array_equal(r.output("y"), r.output("x"))


def _loads(block_dim, n=8, rows=64, cols=256):
    """Every block streams n 64 KiB tiles from its own part of GM."""
    k = sim.Kernel("stream", block_dim=block_dim)
    x = k.gm("x", "f32", (rows * n * block_dim, cols))
    t = k.tile("vec", "f32", rows, cols)
    base = k.block_idx * (rows * n)
    for i in range(n):
        r0 = base + i * rows
        k.TLOAD(t, x[r0 : r0 + rows, :])
    return k


def test_cores_share_gm_bandwidth():
    tgt = load_target("a2a3")
    one = sim.simulate(_loads(1), functional=False)
    many = sim.simulate(_loads(24), functional=False)
    hbm = tgt.gm["bandwidth_gib_per_s"] * 2**30 / tgt.clock_hz
    nbytes = 24 * 8 * 64 * 256 * 4
    # first touch misses the L2: every byte crosses the HBM channel, so the run takes at
    # least bytes / channel bandwidth, longer than one core alone takes
    assert nbytes / hbm > one.total_cycles  # the chip cannot keep every core's pace
    assert many.total_cycles >= int(nbytes / hbm)
    assert many.memory["hbm"]["bytes"] == nbytes
    assert many.memory["hbm"]["utilization"] > 0.9


def test_l2_hits_spare_hbm_and_can_be_switched_off():
    k = sim.Kernel("reread", block_dim=4)
    x = k.gm("x", "f32", (64, 256))
    t = k.tile("vec", "f32", 64, 256)
    for _ in range(3):
        k.TLOAD(t, x)  # every core reads the same 64 KiB three times
    on = sim.simulate(k, functional=False)
    off = sim.simulate(k, functional=False, l2=False)
    assert on.memory["hbm"]["bytes"] == 64 * 256 * 4  # one miss of every line
    assert on.memory["l2"]["hit_rate"] == pytest.approx(11 / 12, abs=1e-4)
    assert off.memory["hbm"]["bytes"] == 12 * 64 * 256 * 4
    assert "l2" not in off.memory


def test_block_dim_past_the_runtime_limit_is_a_user_error():
    """More blocks than cores run in waves (tests/test_waves.py); past the runtime's
    65 535 blocks, or below 1, the launch is refused."""
    for n in (65536, 0):
        with pytest.raises(UserError, match=r"block_dim: expected 1\.\.65535"):
            sim.simulate(_scale_rows(1), block_dim=n)
    with pytest.raises(UserError, match="block_dim"):
        sim.Kernel("k", block_dim=0)


def test_tokens_cannot_cross_sections():
    k = sim.Kernel("x", block_dim=1)
    with k.cube():
        acc = k.tile("acc", "f32", 16, 64, blayout="col_major", slayout="row_major", fractal=1024)
        m = k.tile("mat", "f32", 16, 64, blayout="col_major", slayout="row_major")
        e = k.TLOAD(m, k.gm("g", "f32", (16, 64)))
    with k.vector():
        t = k.tile("vec", "f32", 16, 64)
        with pytest.raises(UserError, match="cannot be waited on in section.vector"):
            k.TADDS(t, t, 1.0, e)
    assert acc is not None


def test_report_and_json_give_per_unit_pipes_and_opcode_shares():
    r = sim.simulate(_c2v(2))
    j = r.to_json()
    assert j["block_dim"] == 2
    units = {(u["core"], u["unit"]): u for u in j["units"]}
    assert set(units) == {(c, u) for c in range(2) for u in ("AIC", "AIV0", "AIV1")}
    aic = units[(0, "AIC")]
    total = j["total_cycles"]
    mm = r.trace[
        (r.trace["core"] == 0) & (r.trace["unit"] == "AIC") & (r.trace["opcode"] == "TMATMUL")
    ]
    assert aic["opcodes"]["TMATMUL"]["busy_cycles"] == int(mm["duration_cycles"].sum())
    assert aic["opcodes"]["TMATMUL"]["ratio"] == round(mm["duration_cycles"].sum() / total, 4)
    assert aic["pipes"]["PIPE_M"]["busy_cycles"] == int(mm["duration_cycles"].sum())
    assert j["opcodes"]["TMATMUL"]["units"] == 2
    text = r.report()
    assert "core 1   AIV1" in text and "TMULS" in text


def test_cli_block_dim(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    kernel = str(Path(__file__).resolve().parent.parent / "examples" / "trelu.pto")
    run = [sys.executable, "-m", "sim", "run", kernel, "--arg", "n=64", "--json"]
    one = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)
    # the page walks of the first touches free: a launch of one unit walks none (sim.engine.gm)
    four = subprocess.run(
        run + ["--block-dim", "4", "--free", "gm_first_touch"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert one.returncode == 0 and four.returncode == 0, four.stderr
    j1, j4 = json.loads(one.stdout), json.loads(four.stdout)
    assert j4["block_dim"] == 4 and {u["core"] for u in j4["units"]} == {0, 1, 2, 3}
    assert j4["total_cycles"] < j1["total_cycles"]  # the rows are split over 4 blocks
    bad = subprocess.run(run + ["--block-dim", "0"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("ptosim: error:")


@pytest.mark.parametrize("block_dim", [1, 3])
@pytest.mark.parametrize("rows", [8, 16])
def test_ideal_sync_keeps_a_fifo_pop_behind_its_push(block_dim, rows):
    """Ideal sync frees the flags and barriers, not a cube<->vector FIFO's slots: a pop
    needs its push's data (it was an IndexError traceback from sim.whatif, then a refusal).
    The cube's pop still waits for the vector units' TLOAD and push, and its data are the
    pushed rows."""
    k = sim.Kernel("v2c", block_dim=block_dim)
    x = k.gm("x", "f32", (2 * rows * block_dim, 64))
    f = k.fifo("v2c", "f32", 2 * rows, 64, split=1)
    with k.vector():
        t = k.tile("vec", "f32", rows, 64)
        r0 = k.block_idx * (2 * rows) + k.subblock_idx * rows
        e = k.TLOAD(t, x[r0 : r0 + rows, :])
        k.tpush(f, t, e)
    with k.cube():
        k.tpop(f)
        k.tfree(f)
    real = sim.simulate(k, functional=False)
    ideal = sim.simulate(k, functional=False, ideal_sync=True)
    assert 0 < ideal.total_cycles <= real.total_cycles
    tr = ideal.trace
    ops = tr[tr["kind"] == "op"]
    pushes = ops[(ops["opcode"] == "TPUSH") & (ops["unit"] != "AIC")]
    pops = ops[(ops["opcode"] == "TPOP") & (ops["unit"] == "AIC")]
    assert len(pops) == block_dim and len(pushes) == 2 * block_dim
    for core in range(block_dim):
        pushed = pushes[pushes["core"] == core]["end_cycle"].max()
        assert pops[pops["core"] == core]["start_cycle"].min() >= pushed


def test_whatif_runs_flash_attention_pto():
    """The what-if study on a FIFO kernel: ideal sync neither breaks nor slows it."""
    df = sim.whatif(
        sim.parse_file(str(ROOT / "examples" / "flash_attention.pto")),
        inputs={"S1": 512, "S1_TILE": 128},
        block_dim=1,
        functional=False,
    )
    assert df.loc["ideal sync", "total_cycles"] <= df.loc["as-is", "total_cycles"]
    assert df.loc["both", "total_cycles"] <= df.loc["infinite bandwidth", "total_cycles"]
