"""Forms real compilers emit, rebuilt as small kernels from pto-ir-in-the-wild.md and
instructions-more.md: each one ran into a refusal or an unsupported op before."""

import shutil
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import SimulationError, UserError, VerifyError
from sim.engine.plausible import index_bounds
from sim.frontend import parse_file, parse_text, print_program
from sim.frontend.diagnostics import ParseError
from sim.placement.auto import plan_auto
from sim.target import models_dir

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


# --- constructs around the tile ops (instructions-more.md §3.6-§3.10) ------------------------


def test_tfillpad_expand_and_inplace_spellings_pad_with_the_destinations_value():
    x = np.random.default_rng(5).standard_normal((10, 50)).astype(np.float32)
    r = _run("tfillpad_forms", "a2a3", px=x)
    e = r.output("pe").reshape(32, 64)
    np.testing.assert_array_equal(e[:10, :50], x)
    assert np.isposinf(e[:10, 50:]).all() and np.isposinf(e[10:]).all()
    i = r.output("pi").reshape(16, 64)
    np.testing.assert_array_equal(i[:10, :50], x)
    assert np.isneginf(i[:10, 50:]).all() and np.isneginf(i[10:]).all()
    ops = r.trace[(r.trace["kind"] == "op") & (r.trace["opcode"] == "TFILLPAD")]
    expand, inplace = (int(c) for c in ops["duration_cycles"])
    # the expand form fills a 32x64 destination, the in-place one copies nothing
    assert expand > inplace
    small = parse_text(
        (DATA / "tfillpad_forms.pto")
        .read_text()
        .replace("32x64xf32, pad=2", "16x64xf32, pad=2")
        .replace("[%c32, %c64]", "[%c16, %c64]")
        .replace("32x64xf32>", "16x64xf32>")
    )
    r2 = sim.simulate(small, "a2a3", functional=False)
    ops2 = r2.trace[(r2.trace["kind"] == "op") & (r2.trace["opcode"] == "TFILLPAD")]
    assert int(ops2["duration_cycles"].iloc[0]) < expand  # 16 fewer rows to fill


def test_a_smaller_fillpad_destination_is_refused():
    text = (DATA / "tfillpad_forms.pto").read_text().replace("32x64xf32", "8x64xf32")
    text = text.replace("[%c32, %c64]", "[%c16, %c64]")
    with pytest.raises(VerifyError, match="dst.rows >= src.rows"):
        sim.simulate(parse_text(text), "a2a3", functional=False)


def test_addptr_validshape_regions_cast_and_fence_run_as_the_reference_describes():
    x = np.arange(2048, dtype=np.float32)
    r = _run("regions_and_casts", "a2a3", px=x)
    # addptr moved the view 1024 elements on; execute_region gave 2x, fusion_region 2x + x
    np.testing.assert_array_equal(r.output("py"), 3 * x[1024 : 1024 + 512])
    u = r.output("pu")
    assert u.dtype == np.uint32 and (u == 0xFFFFFFFF).all()  # -1 re-typed, bits kept
    barriers = r.trace[r.trace["kind"] == "barrier"]
    assert list(barriers["pipe"]).count("PIPE_ALL") == 1  # a vector kernel's fence
    assert any("dsb(DSB_DDR)" in w for w in r.warnings)


def test_the_constructs_print_back_and_parse_to_the_same_program():
    program = parse_file(DATA / "regions_and_casts.pto")
    again = parse_text(print_program(program))
    assert print_program(again) == print_program(program)
    text = print_program(program)
    assert "pto.addptr %px, %c1024" in text and "pto.get_validshape %a" in text
    assert text.count("pto.fence.barrier_all #pto.fence_scope<gm>") == 1


def test_a_fence_outside_a_vector_kernel_drains_mte2_mte3_and_fix():
    text = (DATA / "regions_and_casts.pto").read_text()
    text = text.replace(" attributes {pto.kernel_kind = #pto.kernel_kind<vector>}", "")
    program = parse_text(text)
    pipes = [st.pipe for st in program.main.body if type(st).__name__ == "Barrier"]
    assert pipes == ["PIPE_MTE2", "PIPE_MTE3", "PIPE_FIX"]
    # a fence is no hand-written sync: the kernel still runs in auto mode
    from sim.engine.mode import has_explicit_sync

    assert not has_explicit_sync(program)


@pytest.mark.parametrize(
    "snippet, message",
    [
        ("pto.fence.barrier_all #pto.fence_scope<local_memory>", "has no lowering"),
        (
            "%bad = builtin.unrealized_conversion_cast %two : f32 to i16",
            "only scalars of one bit width",
        ),
    ],
)
def test_forms_without_a_lowering_are_refused_in_one_line(snippet, message):
    text = (DATA / "regions_and_casts.pto").read_text()
    text = text.replace("    pto.fence.barrier_all #pto.fence_scope<gm>\n", f"    {snippet}\n")
    with pytest.raises(ParseError, match=message):
        parse_text(text)


# --- TAXPY, TSCATTER, TCONCATIDX (instructions-more.md §3.3-§3.5) ----------------------------


def _more_ops_inputs(rng):
    a = rng.standard_normal((16, 64)).astype(np.float32)
    c = rng.standard_normal((16, 64)).astype(np.float32)
    s = rng.standard_normal((8, 16)).astype(np.float32)
    i = rng.permutation(256)[:128].astype(np.int32).reshape(8, 16)
    i[0, 1] = i[0, 0]  # a repeated index: the later element wins
    k0 = (np.arange(8, dtype=np.int32) * 4 * 4).reshape(8, 1)  # bytes of i32: 0, 4, ... 28 cols
    k1 = np.full((8, 1), 10 * 4, np.int32)
    return dict(pa=a, pc=c, ps=s, pi=i, p0=k0, p1=k1)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_taxpy_tscatter_and_tconcatidx_compute_what_the_reference_states(target):
    inp = _more_ops_inputs(np.random.default_rng(6))
    r = _run("axpy_scatter_concatidx", target, **inp)
    a, c = inp["pa"], inp["pc"]
    want_c = (a * np.float32(0.5)).astype(np.float32) + c
    np.testing.assert_array_equal(r.output("pc").reshape(16, 64), want_c)
    d = np.zeros(256, np.float32)
    for k, v in zip(inp["pi"].ravel(), inp["ps"].ravel(), strict=True):
        d[k] = v
    np.testing.assert_array_equal(r.output("pd"), d)
    e = np.full((8, 64), -1.0, np.float32)
    x0, x1 = a[:8], a[8:]
    for row in range(8):
        n0 = row * 4
        e[row, :n0] = x0[row, :n0]
        e[row, n0 : n0 + 10] = x1[row, :10]
    np.testing.assert_array_equal(r.output("pe").reshape(8, 64), e)


def test_the_costs_follow_the_references_decompositions():
    r = sim.simulate(parse_file(DATA / "axpy_scatter_concatidx.pto"), "a2a3", functional=False)
    ops = r.trace[r.trace["kind"] == "op"].set_index("opcode")["duration_cycles"]
    assert int(ops["TAXPY"]) == 38  # §4 worked example: one vaxpy of 16 repeats, 6 + 2*16
    # zero fill of 1 KiB 24 + 4, flags 4, and the scalar loop: 128 elements at 13 cycles
    assert int(ops["TSCATTER"]) == 24 + 4 + 4 + 128 * 13
    assert int(ops["TCONCATIDX"]) == 24 + 8 * (4 + 1 + 1 + 4)  # 24 + sum(4 + r0 + r1 + 4 cfg)


# --- --inputs plausible: index-like inputs inside the ranges the kernel uses -----------------

WILD = DATA.parent / "wild"


@pytest.mark.parametrize(
    "path, bounds",
    [
        # load_scalar * 16 as a row offset of 16-row windows of a 256-row tensor: 0..15
        (WILD / "index_table.pto", {"idx": 16}),
        # MGATHER from a 64x64 view: element offsets 0..4095
        (WILD / "ops" / "mgather.pto", {"pi": 4096}),
        # TSCATTER into 16x16; TCONCATIDX counts in bytes of i32 up to 64 columns
        (DATA / "axpy_scatter_concatidx.pto", {"pi": 256, "p0": 257, "p1": 257}),
    ],
    ids=lambda x: getattr(x, "stem", ""),
)
def test_index_bounds_read_the_ranges_the_program_uses(path, bounds):
    assert index_bounds(parse_file(path)) == bounds


@pytest.mark.parametrize(
    "path",
    [WILD / "index_table.pto", WILD / "ops" / "mgather.pto", DATA / "axpy_scatter_concatidx.pto"],
)
def test_plausible_inputs_run_kernels_that_random_inputs_stop_and_are_deterministic(path):
    program = parse_file(path)
    target = dict(program.attrs).get("pto.target_arch", "a2a3")
    with pytest.raises(SimulationError, match="--inputs plausible"):
        sim.simulate(program, target)
    a = sim.simulate(program, target, inputs="plausible")
    b = sim.simulate(program, target, fill="plausible")
    for name in a.gm:
        np.testing.assert_array_equal(a.gm[name], b.gm[name])
    c = sim.simulate(program, target, fill="plausible", seed=1)
    assert any(not np.array_equal(a.gm[n], c.gm[n]) for n in a.gm)  # the seed still counts


def test_plausible_fill_keeps_given_inputs_and_float_arguments():
    program = parse_file(DATA / "axpy_scatter_concatidx.pto")
    inp = _more_ops_inputs(np.random.default_rng(8))
    r = sim.simulate(program, "a2a3", inputs={"pi": inp["pi"].ravel()}, fill="plausible")
    np.testing.assert_array_equal(r.gm["pi"], inp["pi"].ravel())
    assert r.gm["pa"].dtype == np.float32 and (r.gm["pa"] < 0).any()  # floats stay random
    k0 = r.gm["p0"]
    assert k0.min() >= 0 and k0.max() < 257


def test_the_command_line_takes_inputs_plausible(cli):
    path = WILD / "index_table.pto"
    code, _, err = cli("run", path)
    assert code != 0 and "--inputs plausible" in err
    code, out, err = cli("run", path, "--inputs", "plausible", "--json")
    assert code == 0, err
    code, _, err = cli("run", path, "--inputs", "nonsense")
    assert code == 2 and "invalid choice" in err


# --- memref GM arguments and FP4 pairs (instructions-more.md §3.10) -------------------------


def test_gm_memref_arguments_are_their_whole_tensor():
    x = np.random.default_rng(9).standard_normal((16, 64)).astype(np.float32)
    program = parse_file(DATA / "memref_gm_args.pto")
    assert [type(a).__name__ for a in program.main.args] == ["GmPtr", "GmPtr"]
    r = sim.simulate(program, "a2a3", inputs={"src": x.ravel()})
    np.testing.assert_array_equal(r.output("dst").reshape(16, 64), np.abs(x))
    again = parse_text(print_program(program))
    assert print_program(again) == print_program(program)


@pytest.mark.parametrize(
    "arg, message",
    [
        ("memref<16x64xf32, strided<[64, 1], offset: 8>, #pto.address_space<gm>>", "memref"),
        ("memref<?x64xf32, #pto.address_space<gm>>", "memref"),
    ],
)
def test_other_gm_memrefs_are_refused(arg, message):
    text = (DATA / "memref_gm_args.pto").read_text()
    text = text.replace("memref<16x64xf32, #pto.address_space<gm>>", arg)
    with pytest.raises(ParseError, match=f"unsupported type '{message}"):
        parse_text(text)


def test_fp4_pairs_move_as_bytes_on_a5_and_compute_is_refused():
    data = np.random.default_rng(10).integers(0, 256, 16 * 32).astype(np.uint8)
    program = parse_file(DATA / "fp4_copy_a5.pto")
    r = sim.simulate(program, "a5", inputs={"pa": data})
    np.testing.assert_array_equal(r.output("pb"), data)
    assert "!pto.f4E1M2x2" in print_program(program)
    text = (DATA / "fp4_copy_a5.pto").read_text()
    tb = text[text.index("!pto.tile_buf<loc=vec") : text.index("pad=0>") + 6]
    bad = text.replace(
        "    pto.tstore", f"    pto.tabs ins(%t : {tb}) outs(%t : {tb})\n    pto.tstore", 1
    )
    with pytest.raises(VerifyError, match="f4e1m2x2"):
        sim.simulate(parse_text(bad), "a5")


def test_set_quant_vector_and_scalar_are_one_cycle_config_writes_with_a_warning():
    program = parse_file(DATA / "set_quant.pto")
    r = sim.simulate(program, "a2a3", functional=False)
    assert r.total_cycles == 2 and r.pipes["PIPE_S"]["busy_cycles"] == 2
    warned = [w for w in r.warnings if "quantisation it sets up is not modelled" in w]
    assert len(warned) == 2
    text = print_program(program)
    assert "pto.set_quant_vector(%fp : !pto.tile_buf<scaling, 1x16xi64>) {id = 1}" in text
    assert print_program(parse_text(text)) == text
    bad = (DATA / "set_quant.pto").read_text().replace("scaling, 1x16xi64", "vec, 4x16xi64")
    with pytest.raises(ParseError, match="must be a Scaling tile"):
        parse_text(bad)


# --- TQUANT (instructions-more.md §3.1) -----------------------------------------------------


def _tquant_inputs():
    x = np.random.default_rng(11).uniform(-80, 80, (32, 64)).astype(np.float32)
    x[0, :4] = [1.25, -2.6, 300.0, 0.5]  # §3.1's worked example row, fp = 2
    x[1, :2] = [0.25, 0.75]  # ties: 0.5 -> 0, 1.5 -> 2
    f = np.random.default_rng(12).uniform(0.5, 3, (32, 1)).astype(np.float32)
    f[0, 0], f[1, 0] = 2.0, 2.0
    return x, f


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_tquant_int8_sym_rounds_ties_to_even_and_saturates(target):
    x, f = _tquant_inputs()
    r = _run("tquant", target, px=x, pf=f)
    q = r.output("pq").reshape(32, 64)
    assert list(q[0, :4]) == [2, -5, 127, 1]  # the reference's worked example
    assert list(q[1, :2]) == [0, 2]
    y = (x * f).astype(np.float32)
    np.testing.assert_array_equal(q, np.clip(np.rint(y), -128, 127).astype(np.int8))
    s = r.output("ps").reshape(32, 64)
    if target == "a2a3":  # A2/A3 works in place on src: its bytes no longer hold x
        f16 = s.view(np.float16).reshape(-1)
        np.testing.assert_array_equal(f16[:64], np.rint(y[0]).astype(np.float16))
        assert not np.array_equal(s, x)
    else:  # A5 leaves src untouched
        np.testing.assert_array_equal(s, x)


def test_tquant_asym_needs_an_offset_and_a_u8_destination():
    text = (DATA / "tquant.pto").read_text().replace("INT8_SYM", "INT8_ASYM")
    with pytest.raises(SimulationError, match="INT8_ASYM takes a u8 destination and offset"):
        sim.simulate(parse_text(text), "a2a3", inputs={"px": np.zeros(2048, np.float32)})


def test_tquant_costs_the_references_instruction_sequence():
    r = sim.simulate(parse_file(DATA / "tquant.pto"), "a2a3", functional=False, detail="cce")
    op = r.trace[(r.trace["kind"] == "op") & (r.trace["opcode"] == "TQUANT")].iloc[0]
    names = [p.split("(")[0] for p in str(op["cce"]).split("; ")]
    bar = "pipe_barrier"
    assert names == ["vbrcb", bar, "vmul", bar, "vconv", bar, "cfg x1", "vconv", bar, "vconv", bar]
    assert "vmul(rep=32)" in op["cce"] and "vconv(rep=16)" in op["cce"]  # R = 32, Rep = 32


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "pto.tscatter ins(%s, %i : !pto.tile_buf<vec, 8x16xf32>, !pto.tile_buf<vec, 8x16xi32>)",
            "pto.tscatter ins(%s, {maskPattern = #pto.mask_pattern<P0101>} : "
            '!pto.tile_buf<vec, 8x16xf32>, "row")',
            "the mask form of pto.tscatter",
        ),
        ("pto.taxpy ins(%a, %half", "pto.tquant.mx ins(%a, %half", "microscaling"),
    ],
)
def test_forms_of_the_new_ops_that_are_not_modelled_are_refused_with_the_reason(old, new, message):
    text = (DATA / "axpy_scatter_concatidx.pto").read_text()
    assert old in text
    with pytest.raises(ParseError, match=message):
        parse_text(text.replace(old, new))


# --- talloc_to_aiv of a GM slot (A2/A3: FIFO data through GM) --------------------------------


def test_a_fifo_slot_taken_as_a_gm_view_is_stored_into_pushed_and_popped():
    rng = np.random.default_rng(13)
    a = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
    b = rng.uniform(-1, 1, (32, 32)).astype(np.float16)
    program = parse_file(DATA / "talloc_gm_slot.pto")
    r = sim.simulate(program, "a2a3", inputs={"pa": a.ravel(), "pb": b.ravel()})
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(r.output("pc").reshape(32, 32), want, rtol=1e-5, atol=1e-5)
    t = r.trace[r.trace["kind"] == "op"]
    store = t[t["opcode"] == "TSTORE"]
    slot_written = int(store[store["pipe"] == "PIPE_FIX"]["end_cycle"].max())
    pops = t[t["opcode"] == "TPOP"]
    assert len(pops) == 2 and (pops["start_cycle"] >= slot_written).all()  # after the store
    assert print_program(parse_text(print_program(program))) == print_program(program)


def test_a_gm_slot_on_a_target_with_on_chip_fifos_is_refused(tmp_path):
    local = tmp_path / "local"
    shutil.copytree(models_dir() / "a2a3", local)
    text = (local / "machine.toml").read_text()
    (local / "machine.toml").write_text(
        text.replace('fifo_data_path = "gm"', 'fifo_data_path = "local"')
    )
    program = parse_file(DATA / "talloc_gm_slot.pto")
    with pytest.raises(UserError, match="needs FIFO data through GM"):
        sim.simulate(program, str(local), functional=False)
