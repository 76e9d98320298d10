"""Ops real kernels use beyond the reference's entries: TCONCAT, TPART*,
TROWARGMAX/MIN, TCOLARGMAX/MIN, TROWPROD/TCOLPROD, T*EXPANDEXPDIF, TSELS, TXORS, TSORT32,
TMRGSORT, TINSERT, MGATHER. Each ``tests/data/wild/ops/*.pto`` kernel is checked, printed
back, run on both targets timing-only and functionally against numpy written from the
semantics the units state (ASSUMPTIONS where the reference is silent); the builder has a
method for each and the lowering costs grow with the geometry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sim
from sim.engine.run import simulate
from sim.frontend import check_program, parse_file, parse_text, print_program
from sim.isa.opcodes import OPCODES
from sim.target import load_target
from sim.timing import Shape, lower

OPS = Path(__file__).resolve().parent / "data" / "wild" / "ops"
NEW = (
    "TCONCAT",
    "TPARTADD",
    "TPARTMAX",
    "TPARTMIN",
    "TPARTMUL",
    "TROWARGMAX",
    "TROWARGMIN",
    "TCOLARGMAX",
    "TCOLARGMIN",
    "TROWPROD",
    "TCOLPROD",
    "TROWEXPANDEXPDIF",
    "TCOLEXPANDEXPDIF",
    "TSELS",
    "TXORS",
    "TSORT32",
    "TMRGSORT",
    "TINSERT",
    "MGATHER",
)
RNG = np.random.default_rng(7)


def _f32(*shape, lo=-4.0, hi=4.0):
    return RNG.uniform(lo, hi, shape).astype(np.float32)


def _run(name, target=None, **inputs):
    program = parse_file(OPS / f"{name}.pto")
    flat = {k: np.ascontiguousarray(v).reshape(-1) for k, v in inputs.items()}
    return simulate(program, target or _arch(program), inputs=flat)


def _arch(program):
    return dict(program.attrs).get("pto.target_arch", "a2a3")


@pytest.mark.parametrize("path", sorted(OPS.glob("*.pto")), ids=lambda p: p.stem)
@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_kernel_checks_round_trips_and_times_on_both_targets(path, target):
    program = parse_file(path)
    check_program(program, load_target(target))
    assert parse_text(print_program(program), "p.pto") == program
    r = simulate(program, target, functional=False)
    ops = r.trace[r.trace["kind"] == "op"]
    assert (ops["duration_cycles"] > 0).all()


def test_every_new_opcode_is_registered_spelled_and_a_builder_method():
    for name in NEW:
        spec = OPCODES[name]
        assert spec.ir_name == "pto." + name.lower()
        assert callable(getattr(sim.Kernel, name))
        for target in ("a2a3", "a5"):
            assert name in load_target(target).ops["ops"], (name, target)


def test_tconcat_joins_columns():
    a, b = _f32(16, 32), _f32(16, 32)
    r = _run("tconcat", pa=a, pb=b)
    assert np.array_equal(r.gm["pc"].reshape(16, 64), np.concatenate([a, b], axis=1))


@pytest.mark.parametrize(
    "op, fn",
    [
        ("tpartmax", np.maximum),
        ("tpartmin", np.minimum),
        ("tpartadd", np.add),
        ("tpartmul", np.multiply),
    ],
)
def test_tpart_ops_combine_where_both_are_valid(op, fn):
    text = (OPS / "tpartmax.pto").read_text().replace("pto.tpartmax", f"pto.{op}")
    a, b = _f32(16, 64), _f32(8, 32)
    r = simulate(parse_text(text, "k.pto"), "a2a3", inputs={"pa": a.ravel(), "pb": b.ravel()})
    want = a.copy()
    want[:8, :32] = fn(a[:8, :32], b)
    assert np.array_equal(r.gm["pc"].reshape(16, 64), want)


def test_arg_reductions_return_the_first_extreme_index():
    a = _f32(16, 64)
    a[3, 5] = a[3, 9] = 100.0  # a tie: the first one wins
    r = _run("trowargmax", pa=a)
    got = r.gm["pc"]
    assert got.dtype == np.uint32 and np.array_equal(got, np.argmax(a, axis=1))
    assert got[3] == 5
    r = _run("tcolargmin", pa=a)
    assert np.array_equal(r.gm["pc"], np.argmin(a, axis=0).astype(np.int32))


def test_row_and_column_products():
    a = _f32(8, 64, lo=0.9, hi=1.1)
    r = _run("tprod", pa=a)
    np.testing.assert_allclose(r.gm["pr"], np.prod(a.astype(np.float64), axis=1), rtol=1e-5)
    np.testing.assert_allclose(r.gm["pq"], np.prod(a.astype(np.float64), axis=0), rtol=1e-5)


def test_exp_of_broadcast_differences():
    a, m, n = _f32(16, 64), _f32(16, 1), _f32(1, 64)
    r = _run("texpdif", pa=a, pm=m, pn=n)
    np.testing.assert_allclose(r.gm["pr"].reshape(16, 64), np.exp(a - m), rtol=1e-6)
    np.testing.assert_allclose(r.gm["pq"].reshape(16, 64), np.exp(a - n), rtol=1e-6)


def test_tsels_picks_the_source_where_the_mask_bit_is_set_else_the_scalar():
    a = _f32(16, 64)
    m = RNG.integers(0, 256, (16, 8)).astype(np.uint8)
    r = _run("tsels", pa=a, pm=m)
    bits = np.unpackbits(m, axis=1, bitorder="little").astype(bool)
    assert np.array_equal(r.gm["pc"].reshape(16, 64), np.where(bits, a, np.float32(-2.5)))


def test_txors_flips_the_scalar_bits():
    a = RNG.integers(-(2**31), 2**31, (16, 64)).astype(np.int32)
    r = _run("txors", pa=a)
    assert np.array_equal(r.gm["pc"].reshape(16, 64), a ^ np.int32(0x55555555))


def _proposals(row_f32):
    raw = np.ascontiguousarray(row_f32).view(np.uint32).reshape(-1, 2)
    return raw[:, 0].view(np.float32), raw[:, 1]


def test_tsort32_sorts_each_32_block_descending_with_its_indices():
    a = _f32(4, 64)
    idx = np.arange(256, dtype=np.uint32).reshape(4, 64) + 1000
    r = _run("tsort32", pa=a, pi=idx)
    out = r.gm["pc"].reshape(4, 128)
    for i in range(4):
        vals, ids = _proposals(out[i])
        for b in (0, 32):
            block = a[i, b : b + 32]
            order = sorted(range(32), key=lambda k: -block[k])
            assert np.array_equal(vals[b : b + 32], block[order])
            assert np.array_equal(ids[b : b + 32], idx[i, b : b + 32][order])


def _runs(n_runs, per_run, rng):
    vals = -np.sort(-rng.uniform(-9, 9, (n_runs, per_run)).astype(np.float32), axis=1)
    ids = np.arange(n_runs * per_run, dtype=np.uint32).reshape(n_runs, per_run)
    raw = np.empty((n_runs, per_run, 2), np.uint32)
    raw[..., 0], raw[..., 1] = vals.view(np.uint32), ids
    return raw.reshape(-1).view(np.float32), vals.ravel(), ids.ravel()


def test_tmrgsort_merges_four_runs_and_two_lists():
    a, vals, ids = _runs(4, 32, RNG)  # 4 runs of 32 proposals = 256 f32
    x, xv, xi = _runs(1, 32, RNG)
    y, yv, yi = _runs(1, 32, RNG)
    r = _run("tmrgsort", pa=a, px=x, py=y)
    got_v, got_i = _proposals(r.gm["pc"])
    order = np.argsort(-vals, kind="stable")
    assert np.array_equal(got_v, vals[order]) and np.array_equal(got_i, ids[order])
    got_v, got_i = _proposals(r.gm["pz"])
    both_v, both_i = np.concatenate([xv, yv]), np.concatenate([xi, yi])
    order = np.argsort(-both_v, kind="stable")
    assert np.array_equal(got_v, both_v[order]) and np.array_equal(got_i, both_i[order])


def test_tinsert_writes_the_window():
    a, d = _f32(8, 32), _f32(16, 64)
    r = _run("tinsert", pa=a, pd=d)
    want = d.copy()
    want[8:16, 32:64] = a
    assert np.array_equal(r.gm["pd"].reshape(16, 64), want)


def test_mgather_reads_gm_elements_by_index():
    table = _f32(64, 64)
    idx = RNG.integers(0, 4096, (16, 64)).astype(np.int32)
    r = _run("mgather", pt=table, pi=idx)
    assert np.array_equal(r.gm["pc"].reshape(16, 64), table.ravel()[idx])


def _plan(op, dtype, rows, cols, target="a2a3", variant=""):
    shape = Shape(op, dtype, rows, cols, cols, rows, cols, dtype, variant)
    return lower(shape, "PIPE_V", load_target(target))


@pytest.mark.parametrize("target", ["a2a3", "a5"])
@pytest.mark.parametrize(
    "op, dtype",
    [
        ("TSORT32", "f32"),
        ("TMRGSORT", "f32"),
        ("TROWPROD", "f32"),
        ("TCOLPROD", "f32"),
        ("TCONCAT", "f32"),
        ("TPARTADD", "f16"),
        ("TROWARGMAX", "f32"),
        ("TCOLARGMIN", "f16"),
        ("TROWEXPANDEXPDIF", "f32"),
        ("TCOLEXPANDEXPDIF", "f32"),
        ("TSELS", "f32"),
        ("TXORS", "i32"),
    ],
)
def test_lowering_cost_grows_with_rows(op, dtype, target):
    assert (
        _plan(op, dtype, 32, 64, target).cold_cycles
        > _plan(op, dtype, 8, 64, target).cold_cycles
        > 0
    )


def test_tsort32_and_tmrgsort_cost_vbitsort_and_vmrgsort4_repeats():
    # timing-model.md §2.4: vbitsort 16·rep + 20, one repeat per 32 elements; vmrgsort4
    # 78·rep + 20, one repeat per four runs
    p = _plan("TSORT32", "f32", 4, 64)
    assert "vbitsort" in p.detail and p.repeats == 4 * 2
    assert _plan("TSORT32", "f32", 4, 96).repeats == 4 * 3
    assert _plan("TMRGSORT", "f32", 2, 256, variant="multi").repeats == 2
    assert "vmrgsort4" in _plan("TMRGSORT", "f32", 2, 256).detail
