"""One IR, two directions: ``parse_text(print_program(p)) == p`` for every example, for
programs built with the Python builder and for programs using every statement kind."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.frontend import parse_file, parse_text, print_program
from sim.isa.program import (
    Alloc,
    Arith,
    Barrier,
    Call,
    Const,
    For,
    Function,
    GmPtr,
    If,
    Instr,
    MakeTensorView,
    PartitionView,
    PartView,
    PipeOp,
    Program,
    RawAttr,
    Return,
    Scalar,
    ScalarOp,
    Section,
    SetFlag,
    SetValidShape,
    Subview,
    TensorView,
    WaitFlag,
    Yield,
)
from sim.isa.tile import Tile, TileType

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.pto"))


def roundtrip(p: Program) -> Program:
    text = print_program(p)
    q = parse_text(text, "printed.pto")
    assert q == p, text
    assert print_program(q) == text  # the printed form is a fixed point
    return q


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_round_trip(path):
    roundtrip(parse_file(path))


def _load_builder(path: Path):
    spec = importlib.util.spec_from_file_location(f"rt_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def test_builder_example_round_trips():
    kernel = _load_builder(ROOT / "examples" / "relu_sub.py")
    roundtrip(kernel.program())
    assert print_program(kernel) == print_program(kernel.program())


def test_builder_kernel_with_many_features_round_trips():
    k = sim.Kernel("misc")
    g = k.gm("a", "f32", (16, 64))
    o = k.gm("o", "f16", (16, 64))
    m8 = k.gm("m", "u8", (16, 64))
    a = k.tile("vec", "f32", 16, 64)
    c = k.tile("vec", "f16", 16, 64)
    d = k.tile("vec", "f32", 16, 64, valid=(None, None), addr=0x4000)
    mk = k.tile("vec", "u8", 16, 64)
    acc = k.tile("acc", "f32", 16, 16, blayout="col_major", slayout="row_major", fractal=1024)
    e = k.TLOAD(a, g)
    e = k.TCVT(c, a, e, rmode="RINT")
    k.set_valid(d, 8, 32)
    k.TADDS(d, a, 1.5, e)
    e3 = k.TCMPS(mk, a, 0.0, e, cmpMode="gt")
    k.TEXPANDS(a, -2, isBinary=True)
    k.TASSIGN(d, 0x8000)
    k.set_flag("V", "MTE3", 3)
    k.wait_flag("V", "MTE3", 3)
    k.pipe_barrier("ALL")
    k.TSTORE(o, c, e)
    k.TSTORE(m8, mk, e3)
    k.TEXPANDS(acc, 0.0)
    p = roundtrip(k.program())
    assert p.main.args == (GmPtr("a", "f32"), GmPtr("o", "f16"), GmPtr("m", "u8"))


def test_builder_views_become_pointer_arguments_and_views():
    k = sim.Kernel("views")
    g = k.gm("x", "f32", (64, 64))
    t = k.tile("vec", "f32", 16, 64)
    k.TLOAD(t, g[16:32, :])
    k.TSTORE(g[32:48, :], t)
    text = print_program(k)
    assert "func.func @views(%x: !pto.ptr<f32>)" in text
    assert "pto.make_tensor_view %x, shape = [64, 64], strides = [64, 1]" in text
    assert "pto.partition_view %x_tv, offsets = [16, 0], sizes = [16, 64]" in text
    roundtrip(k.program())


TB = TileType("vec", "f32", 16, 64)
DYN = TileType("vec", "f16", 32, 128, None, None, pad=1)


def _every_statement_kind() -> Program:
    n, s = Scalar("n"), Scalar("s", "f32")
    p, q = GmPtr("p", "f32"), GmPtr("q", "i32")
    c0, c1 = Scalar("c0"), Scalar("c1")
    a, b, dyn = Tile("a", TB), Tile("b", TB), Tile("d", DYN)
    tv = TensorView("tv", "f32", (None, 64))
    pv = PartView("pv", "f32", (16, 64))
    i, acc, acc2 = Scalar("i"), Scalar("acc"), Scalar("acc2")
    r0, r1 = Scalar("r#0"), Scalar("r#1", "f32")
    cond = Scalar("cond", "i1")
    helper = Function(
        "helper",
        (Scalar("x"), Tile("t", TB)),
        (
            Arith(Scalar("y"), "arith.muli", (Scalar("x"), Scalar("x"))),
            Return((Scalar("y"),)),
        ),
        private=True,
        result_types=("index",),
    )
    decl = Function("ext", (Scalar("arg0", "i32"),), (), private=True)
    body = (
        Arith(c0, "arith.constant", (Const(0),)),
        Arith(c1, "arith.constant", (Const(1),)),
        Arith(Scalar("big", "f32"), "arith.constant", (Const(1e20, "f32"),)),
        Arith(Scalar("inf", "f32"), "arith.constant", (Const(math.inf, "f32"),)),
        Arith(Scalar("t", "i1"), "arith.constant", (Const(True, "i1"),)),
        Arith(cond, "arith.cmpi", (n, c0), {"predicate": "sgt"}),
        Arith(Scalar("sel"), "arith.select", (cond, n, c1)),
        Arith(Scalar("w", "i32"), "arith.index_cast", (n,)),
        Arith(Scalar("neg", "f32"), "arith.negf", (s,)),
        Arith(Scalar("ov"), "arith.addi", (n, c1), {"flags": RawAttr("overflow<nsw>")}),
        MakeTensorView(tv, p, (n, Const(64)), (Const(64), c1), "dn"),
        PartitionView(pv, tv, (c0, c0), (Const(16), Const(64))),
        Alloc(a),
        Alloc(b, Const(4096, "i64")),
        Alloc(dyn, Const(65536, "i64"), n, Scalar("c1")),
        SetValidShape(dyn, Const(3), c1),
        Instr("TLOAD", (a,), (pv,)),
        Instr("TADDS", (b,), (a, s)),
        Instr("TDIVS", (b,), (Const(2.5, "f32"), a)),
        Instr(
            "TCVT",
            (b,),
            (a,),
            {
                "rmode": "CAST_RINT",
                "sat": True,
                "k": 3,
                "f": 0.25,
                "raw": RawAttr("#pto<st_phase final>"),
                "u": RawAttr("unit"),
                "name": 'x"y',
            },
        ),
        SetFlag("PIPE_MTE2", "PIPE_V", 0),
        WaitFlag("PIPE_MTE2", "PIPE_V", 0),
        SetFlag("PIPE_V", "PIPE_MTE3", n),
        WaitFlag("PIPE_V", "PIPE_MTE3", n),
        Barrier("PIPE_ALL"),
        For(
            i,
            c0,
            n,
            c1,
            (
                Arith(acc2, "arith.addi", (acc, i)),
                Yield((acc2,)),
            ),
            (acc,),
            (c0,),
            (Scalar("total"),),
        ),
        For(Scalar("j", "i32"), Const(0, "i32"), Const(4, "i32"), Const(1, "i32"), ()),
        If(cond, (Instr("TRELU", (a,), (a,)),), ()),
        If(cond, (Yield((c0, s)),), (Yield((c1, Scalar("neg", "f32"))),), (r0, r1)),
        Call("helper", (n, a), (Scalar("h"),)),
        Call("ext", (Scalar("w", "i32"),), ()),
        Section(
            "vector",
            (
                ScalarOp((Scalar("bid", "i64"),), "pto.get_block_idx"),
                ScalarOp((Scalar("bn", "i32"),), "pto.get_block_num"),
            ),
        ),
        Section("cube", ()),
        ScalarOp((Scalar("ld", "i32"),), "pto.load_scalar", (q, c0)),
        ScalarOp((), "pto.store_scalar", (Scalar("ld", "i32"), q, c1)),
        Subview(Tile("sv", TileType("vec", "f32", 8, 64)), a, (c0, c0), (8, 64), (n, n)),
        Subview(Tile("ss", TileType("vec", "f32", 8, 64)), a, (c1, c0), (8, 64), (), "pto.subset"),
        PipeOp(
            (Scalar("buf", "i32"),),
            "pto.reserve_buffer",
            (),
            {"name": "c2v", "size": 8192, "location": RawAttr("#pto.address_space<mat>")},
        ),
        PipeOp(
            (), "pto.aic_initialize_pipe", (("c2v_consumer_buf", Scalar("buf", "i32")),), {"id": 0}
        ),
        PipeOp((), "pto.tpush_to_aiv", (a,), {"split": 1}),
        PipeOp((Tile("popped", TB),), "pto.tpop_from_aic", (), {"split": 1}),
        PipeOp((), "pto.tfree_from_aic", (), {"split": 1}),
        Instr("TSTORE", (pv,), (b,)),
    )
    main = Function(
        "main", (p, q, n, s), body, attrs={"pto.kernel_kind": RawAttr("#pto.kernel_kind<vector>")}
    )
    return Program(
        (decl, helper, main), "main", {"pto.target_arch": "a5", "pto.device-spec": "Ascend950"}
    )


def test_every_statement_kind_round_trips():
    p = _every_statement_kind()
    q = roundtrip(p)
    assert q.entry == "main"
    assert q.main.body[3].operands[0].value == math.inf


def test_multi_results_print_as_the_mlir_group_form():
    text = print_program(_every_statement_kind())
    assert "%r:2 = scf.if %cond -> (index, f32) {" in text
    assert "%total = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {" in text
    assert "scf.for %j = 0 to 4 step 1 : i32 {" in text
    assert "func.func private @ext(i32)" in text
    assert (
        "func.func private @helper(%x: index, %t: !pto.tile_buf<vec, 16x64xf32>) -> index {" in text
    )
    assert "pto.set_flag_dyn[<PIPE_V>, <PIPE_MTE3>, %n]" in text
    assert "0x7F800000 : f32" in text


def test_float_literals_round_trip_exactly():
    values = [0.1, 1e-45, 3.4028234663852886e38, -0.0, 1.0e20, 2.5, 1 / 3]
    body = tuple(
        Arith(Scalar(f"v{i}", "f64"), "arith.constant", (Const(v, "f64"),))
        for i, v in enumerate(values)
    )
    p = Program((Function("k", (), body),), "k")
    q = roundtrip(p)
    got = [st.operands[0].value for st in q.main.body]
    assert got == values and math.copysign(1, got[3]) == -1


def test_printed_examples_simulate_like_the_originals():
    path = ROOT / "examples" / "tdivs.pto"
    x = np.random.default_rng(0).uniform(1, 2, (16, 64)).astype(np.float32)
    a = sim.simulate(parse_file(path), "a2a3", inputs={"px": x})
    b = sim.simulate(parse_text(print_program(parse_file(path))), "a2a3", inputs={"px": x})
    assert a.total_cycles == b.total_cycles
    np.testing.assert_array_equal(a.output("pq"), b.output("pq"))
