"""Forms real compilers emit, rebuilt as small kernels from pto-ir-in-the-wild.md and
instructions-more.md: each one ran into a refusal or an unsupported op before."""

from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import VerifyError
from sim.frontend import parse_file, parse_text
from sim.placement.auto import plan_auto

DATA = Path(__file__).resolve().parent / "data" / "real"


# --- auto placement of a kernel that asks for exactly the UB --------------------------------


def test_tiles_that_fill_the_ub_exactly_are_placed_without_the_bank_stagger():
    program = parse_file(DATA / "ub_exactly_full.pto")
    plan = plan_auto(program, "a2a3")
    addrs = {name: a[1] for name, a in plan.addresses.items()}
    # 64 + 64 + 56 KiB = the 184 KiB A2/A3 leaves to user tiles: packed, no gap
    assert sorted(addrs.values()) == [0, 0x10000, 0x20000]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 128)).astype(np.float32)
    y = rng.standard_normal((128, 128)).astype(np.float32)
    w = rng.standard_normal((112, 128)).astype(np.float32)
    r = sim.simulate(program, "a2a3", sync="auto", inputs={"px": x, "py": y, "pw": w})
    np.testing.assert_array_equal(r.output("pz").reshape(128, 128), x + y)


def test_the_bank_stagger_stays_where_it_fits():
    text = (DATA / "ub_exactly_full.pto").read_text()
    # the same kernel with a 16 KiB third tile leaves room: %b moves off %a's bank
    small = text.replace("112", "16").replace("v_row=16, v_col=128", "v_row=16, v_col=128")
    plan = plan_auto(parse_text(small), "a2a3")
    a, b = plan.addresses["a"][1], plan.addresses["b"][1]
    assert (a // 32) % 16 != (b // 32) % 16


# --- verifier: forms real compilers emit ----------------------------------------------------


def _run(name, target, **inputs):
    program = parse_file(DATA / f"{name}.pto")
    flat = {k: np.ascontiguousarray(v).reshape(-1) for k, v in inputs.items()}
    return sim.simulate(program, target, inputs=flat)


def test_a5_compare_into_an_i8_mask_and_select_on_i8_data_run_with_one_warning():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal((16, 64)).astype(np.float32)
    d = rng.integers(-100, 100, (16, 64)).astype(np.int8)
    r = _run("cmp_sels_i8_a5", "a5", pa=a, pb=b, pd=d)
    np.testing.assert_array_equal(r.output("pc").reshape(16, 64), np.where(a < b, d, np.int8(7)))
    warned = [w for w in r.warnings if "8-bit destination" in w]
    assert len(warned) == 1 and "TCMP" in warned[0] and "u32" in warned[0]
    assert not any("TSELS" in w for w in r.warnings)  # TSEL's A5 list has i8: no warning


def test_a5_tmax_with_a_smaller_source_iterates_over_the_destination_with_a_warning():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal((8, 64)).astype(np.float32)
    r = _run("tmax_valid_a5", "a5", pa=a, pb=b)
    np.testing.assert_array_equal(r.output("pc").reshape(8, 64), np.maximum(a[:8], b))
    assert any("different valid regions" in w and "TMAX" in w for w in r.warnings)
    # A2/A3 asserts equal valid regions (instructions.md §0): still an error there
    text = (DATA / "tmax_valid_a5.pto").read_text().replace('"a5"', '"a2a3"')
    with pytest.raises(VerifyError, match="valid region"):
        sim.simulate(parse_text(text), "a2a3", functional=False)


def test_a2a3_tpartmax_on_u16_is_unsigned_with_a_warning():
    a = np.arange(16 * 64, dtype=np.uint16).reshape(16, 64) * 60
    b = np.full((8, 64), 40000, np.uint16)
    r = _run("tpartmax_u16", "a2a3", pa=a, pb=b)
    want = a.copy()
    want[:8] = np.maximum(a[:8], b)  # 40000 > 32767: a signed max would keep a
    np.testing.assert_array_equal(r.output("pc").reshape(16, 64), want)
    assert any("takes u16" in w for w in r.warnings)


def test_a_destination_whose_dynamic_valid_region_was_never_set_takes_its_source():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    row = rng.standard_normal((16, 1)).astype(np.float32)
    r = _run("dyn_dst_never_set", "a2a3", px=x, pr=row)
    np.testing.assert_array_equal(r.output("py").reshape(16, 64), (x * np.float32(2)) * row)
    taken = [w for w in r.warnings if "was never set" in w]
    assert len(taken) == 2 and "TMULS" in taken[0] and "TROWEXPANDMUL" in taken[1]
