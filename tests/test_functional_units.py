"""Functional units against independent references.

References are written per element in plain Python (ints, floats, ``%``, ``math.fmod``,
hand-built bit packing) or by enumerating every value of a 16-bit float type, so they
share no code path with the numpy implementation. Every unit writes into a sub-view of a
larger buffer, and every test checks the bytes around that view are untouched.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from sim.base.errors import SimulationError
from sim.functional import KERNELS, execute
from sim.functional.context import FnContext
from sim.isa.dtypes import dtype

RNG = np.random.default_rng(1234)
SENTINEL = 0xA5

# ---- harness ------------------------------------------------------------------------


def framed(shape, np_type):
    """A (view, buffer) pair: the view sits inside a buffer filled with SENTINEL bytes."""
    rows, cols = shape
    buf = np.zeros((rows + 2, cols + 3), dtype=np_type)
    buf.view(np.uint8)[...] = SENTINEL
    return buf[1 : rows + 1, 1 : cols + 1], buf


def embed(a):
    """``a`` copied into the middle of a bigger buffer, returned as a strided view."""
    view, _ = framed(a.shape, a.dtype)
    view[...] = a
    return view


def assert_only_view_written(buf, view):
    outside = np.ones(buf.shape, dtype=bool)
    rows, cols = view.shape
    outside[1 : rows + 1, 1 : cols + 1] = False
    assert (buf.view(np.uint8).reshape(buf.shape + (-1,))[outside] == SENTINEL).all()


def run(op, dt, srcs=(), shape=None, out_dtype=None, **kw):
    """Execute ``op`` with framed sources and destination; returns a copy of dst."""
    dt = dtype(dt)
    srcs = tuple(embed(np.asarray(s)) for s in srcs)
    shape = shape if shape is not None else srcs[0].shape
    dst, buf = framed(shape, out_dtype or dt.np_type)
    execute(FnContext(op=op, where=f"test {op}", dtype=dt, dst=dst, srcs=srcs, **kw))
    assert_only_view_written(buf, dst)
    return dst.copy()


def wrap(v: int, dt) -> int:
    dt = dtype(dt)
    v &= (1 << dt.bits) - 1
    if dt.is_signed and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def int_values(dt, shape=(3, 5)):
    """Random values of an integer type, led by its edge values (as many as fit)."""
    info = np.iinfo(dtype(dt).np_type)
    size = shape[0] * shape[1]
    edges = [info.min, info.max, 0, 1, -1 if info.min < 0 else 2][:size]
    body = RNG.integers(info.min, info.max, size=size - len(edges), endpoint=True, dtype=np.int64)
    return np.array(edges + body.tolist(), dtype=np.int64).astype(info.dtype).reshape(shape)


def float_values(dt, shape=(3, 5), positive=False):
    v = RNG.normal(0, 4, size=shape)
    v = np.abs(v) + 0.1 if positive else v
    return v.astype(dtype(dt).np_type)


def elementwise_ref(fn, dt, *arrays):
    """Apply a Python function per element; results wrapped (ints) or rounded (floats)."""
    dt = dtype(dt)
    out = np.empty(arrays[0].shape, dtype=dt.np_type)
    for idx in np.ndindex(out.shape):
        args = [(int if dt.is_int else float)(a[idx]) for a in arrays]
        r = fn(*args)
        out[idx] = wrap(int(r), dt) if dt.is_int else np.float64(r).astype(dt.np_type)
    return out


def same(got, want):
    """Bit-exact equality (also for NaN and signed zeros of floats)."""
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


INT_TYPES = ["i32", "i16", "i8", "u32", "u16", "u8"]
FLOAT_TYPES = ["f32", "f16", "bf16"]


def py_div(a, b):
    if isinstance(a, int):
        q = abs(a) // abs(b)
        return q if (a < 0) == (b < 0) else -q
    try:
        return a / b
    except ZeroDivisionError:
        return math.copysign(math.inf, a) * math.copysign(1, b) if a else math.nan


# ---- registry -----------------------------------------------------------------------

REQUIRED = """TADD TSUB TMUL TDIV TMAX TMIN TABS TNEG TRELU TEXP TLOG TSQRT TRSQRT TRECIP
TREM TFMOD TADDS TSUBS TMULS TDIVS TMAXS TMINS TREMS TFMODS TEXPANDS TCVT""".split()


def test_required_ops_have_units():
    assert set(REQUIRED) <= set(KERNELS)


def test_unknown_op_is_a_simulation_error():
    ctx = FnContext(op="TFOO", where="instr #3", dtype=dtype("f32"), dst=np.zeros((1, 1)))
    with pytest.raises(SimulationError, match=r"instr #3: no functional unit for TFOO"):
        execute(ctx)


# ---- tile-tile arithmetic -----------------------------------------------------------

BINARY = {
    "TADD": lambda a, b: a + b,
    "TSUB": lambda a, b: a - b,
    "TMUL": lambda a, b: a * b,
    "TMAX": max,
    "TMIN": min,
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dt", INT_TYPES + FLOAT_TYPES)
def test_binary(op, dt):
    make = int_values if dtype(dt).is_int else float_values
    a, b = make(dt), make(dt)
    same(run(op, dt, (a, b)), elementwise_ref(BINARY[op], dt, a, b))


@pytest.mark.parametrize("dt", ["i32", "i16", "u32", "i8", "f32", "f16"])
def test_tdiv(dt):
    if dtype(dt).is_int:
        a, b = int_values(dt), int_values(dt)
        b[b == 0] = 3
    else:
        a, b = float_values(dt), float_values(dt, positive=True)
    same(run("TDIV", dt, (a, b)), elementwise_ref(py_div, dt, a, b))


def test_int_wraparound_edges():
    i32max = np.iinfo(np.int32).max
    i32min = np.iinfo(np.int32).min
    same(run("TADD", "i32", ([[i32max]], [[1]])), np.array([[i32min]], np.int32))
    same(run("TMUL", "i32", ([[65536]], [[65536]])), np.array([[0]], np.int32))
    same(run("TSUB", "u8", ([[0]], [[1]])), np.array([[255]], np.uint8))
    same(run("TADD", "i8", ([[127]], [[1]])), np.array([[-128]], np.int8))
    same(run("TNEG", "i32", ([[i32min, 5]],)), np.array([[i32min, -5]], np.int32))
    same(run("TABS", "i16", ([[-32768, -3]],)), np.array([[-32768, 3]], np.int16))
    same(
        run("TDIV", "i32", ([[i32min, -7, 7]], [[-1, 2, -2]])),
        np.array([[i32min, -3, -3]], np.int32),
    )


def test_f16_overflow_and_bf16_rounding():
    got = run(
        "TADD",
        "f16",
        (np.array([[60000, -60000]], np.float16), np.array([[60000, -60000]], np.float16)),
    )
    same(got, np.array([[np.inf, -np.inf]], np.float16))
    bf = ml_dtypes.bfloat16
    # 1 + 2**-8 is the midpoint between 1 and 1 + 2**-7: ties to even gives 1.
    # 1 + 3 * 2**-9 lies above the midpoint and rounds up.
    got = run("TADD", "bf16", (np.array([[1, 1]], bf), np.array([[2**-8, 3 * 2**-9]], bf)))
    same(got, np.array([[1, 1 + 2**-7]], bf))


def test_float_division_by_zero_is_ieee():
    a = np.array([[1, -1, 0]], np.float32)
    b = np.zeros((1, 3), np.float32)
    same(run("TDIV", "f32", (a, b)), np.array([[np.inf, -np.inf, np.nan]], np.float32))


def test_taddc_tsubc():
    a, b, c = int_values("i16"), int_values("i16"), int_values("i16")
    same(run("TADDC", "i16", (a, b, c)), elementwise_ref(lambda x, y, z: x + y + z, "i16", a, b, c))
    same(run("TSUBC", "i16", (a, b, c)), elementwise_ref(lambda x, y, z: x - y + z, "i16", a, b, c))
    # Two roundings: (2048 + 1) rounds to 2048 in f16 before 1 is added again.
    f = [np.array([[2048]], np.float16), np.array([[1]], np.float16), np.array([[1]], np.float16)]
    same(run("TADDC", "f16", f), np.array([[2048]], np.float16))


# ---- unary --------------------------------------------------------------------------

UNARY = {
    "TEXP": (math.exp, False),
    "TLOG": (math.log, True),
    "TSQRT": (math.sqrt, True),
    "TRSQRT": (lambda x: 1 / math.sqrt(x), True),
    "TRECIP": (lambda x: 1 / x, True),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dt", FLOAT_TYPES)
def test_float_unary(op, dt):
    fn, positive = UNARY[op]
    a = float_values(dt, positive=positive) / (4 if op == "TEXP" else 1)
    a = a.astype(dtype(dt).np_type)
    got = run(op, dt, (a,))
    want = elementwise_ref(fn, dt, a)
    eps = float(ml_dtypes.finfo(dtype(dt).np_type).eps)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2 * eps)


@pytest.mark.parametrize(
    "op, x, want",
    [
        ("TLOG", 0.0, -math.inf),
        ("TLOG", -1.0, math.nan),
        ("TSQRT", -1.0, math.nan),
        ("TRSQRT", 0.0, math.inf),
        ("TRECIP", 0.0, math.inf),
        ("TRECIP", -0.0, -math.inf),
        ("TEXP", 100.0, math.inf),
        ("TEXP", -math.inf, 0.0),
    ],
)
def test_unary_invalid_inputs_follow_ieee(op, x, want):
    same(run(op, "f32", (np.array([[x]], np.float32),)), np.array([[want]], np.float32))


def test_float_only_unary_rejects_integers():
    with pytest.raises(SimulationError, match="TEXP needs a floating-point element type"):
        run("TEXP", "i32", (np.ones((1, 2), np.int32),))


@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "i16"])
def test_trelu_tabs_tneg(dt):
    make = int_values if dtype(dt).is_int else float_values
    a = make(dt)
    same(run("TRELU", dt, (a,)), elementwise_ref(lambda x: max(x, 0), dt, a))
    same(run("TABS", dt, (a,)), elementwise_ref(abs, dt, a))
    same(run("TNEG", dt, (a,)), elementwise_ref(lambda x: -x, dt, a))


def test_trecip_integer_is_c_division():
    same(run("TRECIP", "i32", ([[1, -1, 2, -5]],)), np.array([[1, -1, 0, 0]], np.int32))


# ---- tile-scalar --------------------------------------------------------------------

SCALAR = {
    "TADDS": lambda a, s: a + s,
    "TSUBS": lambda a, s: a - s,
    "TMULS": lambda a, s: a * s,
    "TMAXS": max,
    "TMINS": min,
}


@pytest.mark.parametrize("op", sorted(SCALAR))
@pytest.mark.parametrize("dt", ["i32", "i16", "u8", "f32", "f16", "bf16"])
def test_tile_scalar(op, dt):
    if dtype(dt).is_int:
        a, s = int_values(dt), 100
    else:
        a, s = float_values(dt), -1.25
    same(run(op, dt, (a,), scalars=(s,)), elementwise_ref(lambda x: SCALAR[op](x, s), dt, a))


def test_scalar_is_cast_to_element_type_with_wraparound():
    same(run("TADDS", "u8", ([[1]],), scalars=(300,)), np.array([[45]], np.uint8))


@pytest.mark.parametrize("dt, s", [("f32", 2.5), ("bf16", 0.1), ("i8", -3), ("u16", 65535)])
def test_texpands(dt, s):
    np_type = dtype(dt).np_type
    got = run("TEXPANDS", dt, shape=(2, 3), scalars=(s,))
    same(got, np.full((2, 3), np.array(s).astype(np_type)))


def test_tsubs_negate_via_float_quirk():
    s = 2**24 + 1  # -(float)s rounds to -2**24
    a = np.array([[0, 10]], np.int32)
    plain = run("TSUBS", "i32", (a,), scalars=(s,))
    quirky = run("TSUBS", "i32", (a,), scalars=(s,), quirks=frozenset({"tsubs_negate_via_float"}))
    same(plain, np.array([[-s, 10 - s]], np.int32))
    same(quirky, np.array([[-(2**24), 10 - 2**24]], np.int32))
    f = np.array([[1.5]], np.float32)
    same(
        run("TSUBS", "f32", (f,), scalars=(0.25,), quirks=frozenset({"tsubs_negate_via_float"})),
        np.array([[1.25]], np.float32),
    )


@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "i16"])
@pytest.mark.parametrize("scalar_first", [False, True])
def test_tdivs_both_forms(dt, scalar_first):
    if dtype(dt).is_int:
        a, s = int_values(dt), -7
        a[a == 0] = 5
    else:
        a, s = float_values(dt, positive=True), -3.0
    fn = (lambda x: py_div(s, x)) if scalar_first else (lambda x: py_div(x, s))
    got = run("TDIVS", dt, (a,), scalars=(s,), scalar_first=scalar_first)
    same(got, elementwise_ref(fn, dt, a))


def _tdivs_inplace(a, s, quirks):
    """TDIVS with dst and src the same view, as when the kernel writes in place."""
    view, buf = framed(a.shape, np.float32)
    view[...] = a
    execute(
        FnContext(
            op="TDIVS",
            where="t",
            dtype=dtype("f32"),
            dst=view,
            srcs=(view,),
            scalars=(s,),
            inplace=True,
            quirks=quirks,
        )
    )
    assert_only_view_written(buf, view)
    return view.copy()


def test_tdivs_inplace_reciprocal_quirk():
    quirk = frozenset({"tdivs_inplace_reciprocal"})
    a = np.arange(1, 301, dtype=np.float32).reshape(10, 30)
    true_div = np.array([[np.float32(float(x) / 3.0) for x in row] for row in a])
    factor = np.float32(1) / np.float32(3)
    by_recip = np.array([[np.float32(float(x) * float(factor)) for x in row] for row in a])
    assert (true_div != by_recip).any()  # the test data separates the two behaviours
    same(_tdivs_inplace(a, 3.0, quirk), by_recip)
    same(_tdivs_inplace(a, 3.0, frozenset()), true_div)
    # Out of place, the quirk does not apply: the hardware uses vector_dup + vdiv.
    same(run("TDIVS", "f32", (a,), scalars=(3.0,), quirks=quirk), true_div)
    with np.errstate(invalid="ignore"):
        zero = _tdivs_inplace(np.array([[2.0, -2.0, 0.0]], np.float32), 0.0, quirk)
    same(zero, np.array([[np.inf, -np.inf, np.nan]], np.float32))


# ---- integer division by zero -------------------------------------------------------

ZERO_DIV_CASES = [
    ("TDIV", dict(srcs=([[4, 5, 6], [7, 8, 9]], [[1, 1, 1], [1, 1, 0]]))),
    ("TREM", dict(srcs=([[4, 5, 6], [7, 8, 9]], [[1, 1, 1], [1, 1, 0]]))),
    ("TFMOD", dict(srcs=([[4, 5, 6], [7, 8, 9]], [[1, 1, 1], [1, 1, 0]]))),
    ("TRECIP", dict(srcs=([[1, 1, 1], [1, 1, 0]],))),
    ("TDIVS", dict(srcs=([[1, 1, 1], [1, 1, 0]],), scalars=(9,), scalar_first=True)),
]


@pytest.mark.parametrize("op, kw", ZERO_DIV_CASES, ids=[c[0] for c in ZERO_DIV_CASES])
def test_int_division_by_zero(op, kw):
    srcs = tuple(np.array(s, np.int32) for s in kw["srcs"])
    rest = {k: v for k, v in kw.items() if k != "srcs"}
    with pytest.raises(SimulationError, match=r"integer division by zero at element \(1, 2\)"):
        run(op, "i32", srcs, **rest)
    got = run(op, "i32", srcs, strict=False, **rest)
    assert got[1, 2] == 0
    assert (got[:, :2] == run(op, "i32", tuple(s[:, :2] for s in srcs), **rest)).all()


@pytest.mark.parametrize("op", ["TDIVS", "TREMS", "TFMODS"])
def test_int_division_by_zero_scalar(op):
    a = np.array([[3, -4]], np.int16)
    message = r"integer division by zero at element \(0, 0\): 3 / 0"
    with pytest.raises(SimulationError, match=message):
        run(op, "i16", (a,), scalars=(0,))
    same(run(op, "i16", (a,), scalars=(0,), strict=False), np.zeros((1, 2), np.int16))


# ---- remainders ---------------------------------------------------------------------


def py_fmod(a, b):
    if isinstance(a, int):
        return int(math.copysign(abs(a) % abs(b), a))
    return math.fmod(a, b)


def test_remainder_signs_by_hand():
    a = np.array([[-7, 7, -7, 7]], np.int32)
    b = np.array([[3, -3, -3, 3]], np.int32)
    same(run("TREM", "i32", (a, b)), np.array([[2, -2, -1, 1]], np.int32))
    same(run("TFMOD", "i32", (a, b)), np.array([[-1, 1, -1, 1]], np.int32))
    f = a.astype(np.float32), b.astype(np.float32)
    same(run("TREM", "f32", f), np.array([[2, -2, -1, 1]], np.float32))
    same(run("TFMOD", "f32", f), np.array([[-1, 1, -1, 1]], np.float32))


@pytest.mark.parametrize("dt", ["i32", "i16", "i8", "u16", "f32", "f16"])
def test_trem_tfmod(dt):
    if dtype(dt).is_int:
        a, b = int_values(dt, (4, 6)), int_values(dt, (4, 6))
        b[b == 0] = 7
    else:
        a = float_values(dt, (4, 6)) * 10
        b = float_values(dt, (4, 6))
        a, b = a.astype(dtype(dt).np_type), b.astype(dtype(dt).np_type)
    same(run("TREM", dt, (a, b)), elementwise_ref(lambda x, y: x % y, dt, a, b))
    same(run("TFMOD", dt, (a, b)), elementwise_ref(py_fmod, dt, a, b))


@pytest.mark.parametrize(
    "dt, s", [("i32", 3), ("i32", -3), ("i16", 5), ("f32", 2.5), ("f32", -2.5), ("f16", 0.75)]
)
def test_trems_tfmods(dt, s):
    if dtype(dt).is_int:
        a = np.arange(-12, 12).reshape(4, 6).astype(dtype(dt).np_type)
    else:
        a = (float_values(dt, (4, 6)) * 5).astype(dtype(dt).np_type)
    same(run("TREMS", dt, (a,), scalars=(s,)), elementwise_ref(lambda x: x % s, dt, a))
    same(run("TFMODS", dt, (a,), scalars=(s,)), elementwise_ref(lambda x: py_fmod(x, s), dt, a))


A2 = frozenset({"trem_i32_via_f32", "trem_i32_clobbers_src1", "trems_i32_via_f32"})


def test_trem_i32_range_check_and_non_strict_result():
    a = np.array([[5, -7], [2**24, 2**24 + 3]], np.int32)
    b = np.array([[3, 3], [7, 2**24 - 1]], np.int32)
    with pytest.raises(SimulationError, match=r"at element \(1, 1\): src0 = 16777219"):
        run("TREM", "i32", (a, b), quirks=A2)
    got = run("TREM", "i32", (a, b), quirks=A2, strict=False)
    # 2**24 + 3 becomes 2**24 + 4 in f32; 2**24 - 1 is exact: remainder 5.
    same(got, np.array([[2, 2, 2**24 % 7, 5]], np.int32).reshape(2, 2))
    # Without the quirk the integer remainder is exact.
    same(run("TREM", "i32", (a, b)), np.array([[2, 2], [2**24 % 7, 4]], np.int32))


def test_trem_i32_clobbers_src1():
    a = np.array([[7, -7, 9]], np.int32)
    b_values = np.array([[3, 2, -4]], np.int32)
    b, b_buf = framed(b_values.shape, np.int32)
    b[...] = b_values
    dst, dst_buf = framed(a.shape, np.int32)
    execute(
        FnContext(op="TREM", where="t", dtype=dtype("i32"), dst=dst, srcs=(embed(a), b), quirks=A2)
    )
    same(dst, np.array([[1, 1, -3]], np.int32))
    same(b.view(np.float32), b_values.astype(np.float32))
    assert_only_view_written(b_buf, b)
    assert_only_view_written(dst_buf, dst)


def test_trem_without_clobber_quirk_leaves_src1():
    b = np.array([[3, 2]], np.int32)
    view = embed(b)
    execute(
        FnContext(
            op="TREM",
            where="t",
            dtype=dtype("i32"),
            dst=np.zeros((1, 2), np.int32),
            srcs=(embed(np.array([[5, 5]], np.int32)), view),
        )
    )
    same(view, b)


def test_trems_i32_range_check():
    a = np.array([[1, 2]], np.int32)
    with pytest.raises(SimulationError, match=r"scalar = 16777217"):
        run("TREMS", "i32", (a,), scalars=(2**24 + 1,), quirks=A2)
    with pytest.raises(SimulationError, match=r"at element \(0, 1\): src = -16777217"):
        run("TREMS", "i32", (np.array([[1, -(2**24) - 1]], np.int32),), scalars=(3,), quirks=A2)
    same(run("TREMS", "i32", (a,), scalars=(2**24 + 1,)), a)


# ---- TCVT ---------------------------------------------------------------------------

TIES = [2.5, -2.5, 0.5, -0.5, 1.5, 2.4, -2.6, 3.0]
TIE_RESULTS = {
    "RINT": [2, -2, 0, 0, 2, 2, -3, 3],
    "NONE": [2, -2, 0, 0, 2, 2, -3, 3],
    "ROUND": [3, -3, 1, -1, 2, 2, -3, 3],
    "FLOOR": [2, -3, 0, -1, 1, 2, -3, 3],
    "CEIL": [3, -2, 1, 0, 2, 3, -2, 3],
    "TRUNC": [2, -2, 0, 0, 1, 2, -2, 3],
    "ODD": [3, -3, 1, -1, 1, 3, -3, 3],
}


def cvt(src, src_dt, dst_dt, **attrs):
    src = np.asarray(src, dtype=dtype(src_dt).np_type)
    return run("TCVT", dst_dt, (src,), src_dtypes=(dtype(src_dt),), attrs=attrs)


@pytest.mark.parametrize("mode", sorted(TIE_RESULTS))
@pytest.mark.parametrize("src_dt", ["f32", "f16", "bf16"])
def test_tcvt_float_to_int_modes(mode, src_dt):
    same(cvt([TIES], src_dt, "i32", round=mode), np.array([TIE_RESULTS[mode]], np.int32))


@pytest.mark.parametrize("mode", ["RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "NONE"])
def test_tcvt_f32_to_f32_rounds_to_integral(mode):
    want = TIES if mode == "NONE" else TIE_RESULTS[mode]
    same(cvt([TIES], "f32", "f32", round=mode), np.array([want], np.float32))


def test_tcvt_saturation_vs_wraparound():
    v = [[40000.0, -40000.0, 1.0, np.nan]]
    same(cvt(v, "f32", "i16", round="RINT"), np.array([[-25536, 25536, 1, 0]], np.int16))
    same(cvt(v, "f32", "i16", round="RINT", sat=False), np.array([[-25536, 25536, 1, 0]], np.int16))
    same(cvt(v, "f32", "i16", round="RINT", sat=True), np.array([[32767, -32768, 1, 0]], np.int16))
    h = [[300.0, -1.0, np.inf, 255.0]]
    same(cvt(h, "f16", "u8", round="TRUNC"), np.array([[44, 255, 255, 255]], np.uint8))
    same(cvt(h, "f16", "u8", round="TRUNC", sat=True), np.array([[255, 0, 255, 255]], np.uint8))
    same(cvt([[200.0, -200.0]], "f16", "i8", round="RINT"), np.array([[-56, 56]], np.int8))
    same(
        cvt([[np.inf, -np.inf, 3e9]], "f32", "i32", round="RINT"),
        np.array([[2**31 - 1, -(2**31), 2**31 - 1]], np.int32),
    )


def test_tcvt_int_to_int():
    v = [[70000, -70000, 5]]
    same(cvt(v, "i32", "i16"), np.array([[wrap(70000, "i16"), wrap(-70000, "i16"), 5]], np.int16))
    same(cvt(v, "i32", "i16", sat=True), np.array([[32767, -32768, 5]], np.int16))
    same(cvt([[2**40, -1]], "i64", "i32"), np.array([[0, -1]], np.int32))
    same(cvt([[2**40, -1]], "i64", "i32", sat=True), np.array([[2**31 - 1, -1]], np.int32))
    same(cvt([[300, -5]], "i16", "u8"), np.array([[255, 0]], np.uint8))  # default: saturate


def all_values(np_type):
    """Every finite value of a 16-bit float type, sorted, as float64."""
    bits = np.arange(2**16, dtype=np.uint32).astype(np.uint16)
    with np.errstate(invalid="ignore"):
        values = bits.view(np_type).astype(np.float64)
    return np.unique(values[np.isfinite(values)])


def reference_round(x: float, table, mode: str, max_ulp: float) -> float:
    """Round ``x`` to the sorted finite values ``table`` by enumeration (IEEE overflow)."""
    i = int(np.searchsorted(table, x))
    if i < len(table) and table[i] == x:
        return x
    lo = table[i - 1] if i > 0 else -math.inf
    hi = table[i] if i < len(table) else math.inf
    # For overflow IEEE rounding treats inf as the value max + ulp; inf's pattern is even.
    edge = table[-1] + max_ulp
    below = x - (-edge if math.isinf(lo) else lo)
    above = (edge if math.isinf(hi) else hi) - x
    zero = int(np.searchsorted(table, 0.0))
    lo_odd = not math.isinf(lo) and (i - 1 - zero) % 2 == 1
    if mode == "FLOOR":
        return lo
    if mode == "CEIL":
        return hi
    if mode == "TRUNC":
        return lo if x > 0 else hi
    if mode == "ODD":
        return lo if lo_odd else hi
    if below != above:
        return lo if below < above else hi
    if mode == "ROUND":
        return hi if x > 0 else lo
    return hi if lo_odd else lo


def narrowing_inputs(np_type):
    """Values between neighbours, exact ties, odd/even neighbours, overflow, denormals."""
    tiny = float(ml_dtypes.finfo(np_type).smallest_subnormal)
    top = float(ml_dtypes.finfo(np_type).max)
    eps = float(ml_dtypes.finfo(np_type).eps)
    hand = [
        1 + eps / 2,
        1 + 3 * eps / 2,
        1 + eps / 4,
        1 + eps / 2 + eps / 2**10,
        3 * tiny / 2,
        tiny / 2,
        tiny / 3,
        top * (1 + eps / 4),
        top * (1 + eps / 2),
        top * (1 + eps),
        0.1,
        1 / 3,
        2.0 / 3,
    ]
    hand += [-v for v in hand]
    rand = RNG.normal(0, 100, size=64).tolist()
    with np.errstate(over="ignore"):
        x = np.array(hand + rand, dtype=np.float64).astype(np.float32)
    return x[np.isfinite(x)]  # bf16's top * (1 + eps) is beyond f32


@pytest.mark.parametrize("mode", ["RINT", "ROUND", "FLOOR", "CEIL", "TRUNC", "ODD", "NONE"])
@pytest.mark.parametrize("dst_dt", ["f16", "bf16"])
def test_tcvt_f32_narrowing_by_enumeration(mode, dst_dt):
    np_type = dtype(dst_dt).np_type
    x = narrowing_inputs(np_type)
    table = all_values(np_type)
    max_ulp = table[-1] - table[-2]
    ref_mode = "RINT" if mode == "NONE" else mode
    want = [reference_round(float(v), table, ref_mode, max_ulp) for v in x]
    got = cvt(x.reshape(1, -1), "f32", dst_dt, round=mode, sat=False)
    same(got, np.array([want], dtype=np.float64).astype(np_type))
    top = table[-1]
    saturated = [math.copysign(top, w) if math.isinf(w) else w for w in want]
    got_sat = cvt(x.reshape(1, -1), "f32", dst_dt, round=mode)  # default: saturating
    same(got_sat, np.array([saturated], dtype=np.float64).astype(np_type))


def test_tcvt_f32_to_f16_tie_by_hand():
    x = [[1 + 2**-11, -(1 + 2**-11), 1 + 3 * 2**-11]]
    up, down = 1 + 2**-10, 1.0
    cases = {
        "RINT": [down, -down, 1 + 2**-9],
        "ROUND": [up, -up, 1 + 2**-9],
        "FLOOR": [down, -up, up],
        "CEIL": [up, -down, 1 + 2**-9],
        "TRUNC": [down, -down, up],
        "ODD": [up, -up, up],
    }
    for mode, want in cases.items():
        same(cvt(x, "f32", "f16", round=mode), np.array([want], np.float16))


def test_tcvt_float_specials_and_saturation():
    v = [[1e6, -1e6, np.inf, -np.inf, np.nan]]
    same(
        cvt(v, "f32", "f16", round="RINT"),
        np.array([[65504, -65504, np.inf, -np.inf, np.nan]], np.float16),
    )
    same(
        cvt(v, "f32", "f16", round="RINT", sat=False),
        np.array([[np.inf, -np.inf, np.inf, -np.inf, np.nan]], np.float16),
    )
    same(
        cvt(v, "f32", "f16", round="TRUNC", sat=False),
        np.array([[65504, -65504, np.inf, -np.inf, np.nan]], np.float16),
    )


def test_tcvt_int_to_float_directed():
    x = [[2**24 + 1, -(2**24 + 1), 2**24 + 3]]
    cases = {
        "RINT": [2**24, -(2**24), 2**24 + 4],
        "ROUND": [2**24 + 2, -(2**24 + 2), 2**24 + 4],
        "FLOOR": [2**24, -(2**24 + 2), 2**24 + 2],
        "CEIL": [2**24 + 2, -(2**24), 2**24 + 4],
        "TRUNC": [2**24, -(2**24), 2**24 + 2],
        "ODD": [2**24 + 2, -(2**24 + 2), 2**24 + 2],
    }
    for mode, want in cases.items():
        same(cvt(x, "i32", "f32", round=mode), np.array([want], np.float32))


def test_tcvt_int_to_bf16_rounds_once():
    # ml_dtypes would round through f32 (to 2**24); the true nearest is 2**24 + 2**17.
    got = cvt([[2**24 + 2**16 + 1]], "i32", "bf16", round="RINT")
    same(got, np.array([[2**24 + 2**17]], ml_dtypes.bfloat16))


def test_tcvt_i32_to_f16_overflow_saturates_by_default():
    same(cvt([[70000, -70000]], "i32", "f16"), np.array([[65504, -65504]], np.float16))


@pytest.mark.parametrize("src_dt", ["f16", "bf16"])
def test_tcvt_widening_is_exact(src_dt):
    values = all_values(dtype(src_dt).np_type)[::97].reshape(1, -1)
    got = cvt(values.astype(dtype(src_dt).np_type), src_dt, "f32", round="FLOOR")
    same(got, values.astype(np.float32))


def test_tcvt_accepts_cpp_mode_spelling():
    same(cvt([[2.5]], "f32", "i32", round="CAST_ROUND"), np.array([[3]], np.int32))
    same(cvt([[2.5]], "f32", "i32", round="floor"), np.array([[2]], np.int32))


def test_tcvt_unknown_mode():
    with pytest.raises(SimulationError, match="unknown TCVT rounding mode 'HALF'"):
        cvt([[1.0]], "f32", "i32", round="HALF")


# ---- compare / select ---------------------------------------------------------------


def pack_by_hand(bits):
    rows, cols = len(bits), len(bits[0])
    out = np.zeros((rows, (cols + 7) // 8), np.uint8)
    for i in range(rows):
        for j in range(cols):
            if bits[i][j]:
                out[i, j // 8] |= 1 << (j % 8)
    return out


CMP = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


def small_ints(shape, np_type):
    return RNG.integers(-3, 4, size=shape).astype(np_type)


@pytest.mark.parametrize("mode", sorted(CMP))
@pytest.mark.parametrize("dt", ["f32", "f16", "i32"])
def test_tcmp(mode, dt):
    np_type = dtype(dt).np_type
    a, b = small_ints((3, 13), np_type), small_ints((3, 13), np_type)
    want = pack_by_hand([[CMP[mode](a[i, j], b[i, j]) for j in range(13)] for i in range(3)])
    got = run(
        "TCMP", "u8", (a, b), shape=(3, 2), src_dtypes=(dtype(dt), dtype(dt)), attrs={"cmp": mode}
    )
    same(got, want)


def test_tcmp_nan():
    a = np.array([[np.nan, 1.0]], np.float32)
    b = np.array([[np.nan, np.nan]], np.float32)
    for mode, want in [("eq", 0), ("ne", 0b11), ("lt", 0), ("ge", 0)]:
        got = run(
            "TCMP", "u8", (a, b), shape=(1, 1), src_dtypes=(dtype("f32"),) * 2, attrs={"cmp": mode}
        )
        same(got, np.array([[want]], np.uint8))


def test_tcmp_i32_eq_only_quirk():
    a = np.array([[1, 2, 3]], np.int32)
    b = np.array([[2, 2, 2]], np.int32)
    kw = dict(shape=(1, 1), src_dtypes=(dtype("i32"),) * 2, attrs={"cmp": "lt"})
    same(run("TCMP", "u8", (a, b), **kw), np.array([[0b001]], np.uint8))
    same(
        run("TCMP", "u8", (a, b), quirks=frozenset({"tcmp_i32_eq_only"}), **kw),
        np.array([[0b010]], np.uint8),
    )
    # f32 is unaffected by the quirk.
    same(
        run(
            "TCMP",
            "u8",
            (a.astype(np.float32), b.astype(np.float32)),
            quirks=frozenset({"tcmp_i32_eq_only"}),
            shape=(1, 1),
            src_dtypes=(dtype("f32"),) * 2,
            attrs={"cmp": "lt"},
        ),
        np.array([[0b001]], np.uint8),
    )


def test_tcmps_scalar_and_tile_forms():
    a = np.arange(-5, 15, dtype=np.float32).reshape(2, 10)
    want = pack_by_hand([[x > 2.0 for x in row] for row in a])
    kw = dict(shape=(2, 2), attrs={"cmp": "gt"})
    same(run("TCMPS", "u8", (a,), scalars=(2.0,), src_dtypes=(dtype("f32"),), **kw), want)
    first = np.full((2, 10), 99, np.float32)
    first[0, 0] = 2.0
    same(run("TCMPS", "u8", (a, first), src_dtypes=(dtype("f32"),) * 2, **kw), want)
    with pytest.raises(SimulationError, match="unknown compare mode 'bogus'"):
        run(
            "TCMPS",
            "u8",
            (a,),
            scalars=(2.0,),
            src_dtypes=(dtype("f32"),),
            shape=(2, 2),
            attrs={"cmp": "bogus"},
        )


@pytest.mark.parametrize("dt", ["f32", "i16", "bf16"])
def test_tsel(dt):
    np_type = dtype(dt).np_type
    a, b = small_ints((3, 11), np_type), small_ints((3, 11), np_type) + 10
    mask = RNG.integers(0, 256, size=(3, 2)).astype(np.uint8)
    want = np.array(
        [
            [a[i, j] if (mask[i, j // 8] >> (j % 8)) & 1 else b[i, j] for j in range(11)]
            for i in range(3)
        ],
        dtype=np_type,
    )
    same(run("TSEL", dt, (mask, a, b), shape=(3, 11)), want)


# ---- bitwise ------------------------------------------------------------------------

LOGIC = {"TAND": lambda a, b: a & b, "TOR": lambda a, b: a | b, "TXOR": lambda a, b: a ^ b}


@pytest.mark.parametrize("op", sorted(LOGIC))
@pytest.mark.parametrize("dt", ["i32", "i16", "u8", "i8"])
def test_logic(op, dt):
    a, b = int_values(dt), int_values(dt)
    same(run(op, dt, (a, b)), elementwise_ref(LOGIC[op], dt, a, b))
    same(run("TNOT", dt, (a,)), elementwise_ref(lambda x: ~x, dt, a))


def test_logic_on_float_bits():
    a = np.array([[-1.5, 2.0]], np.float32)
    got = run("TAND", "f32", (a, np.full((1, 2), 0x7FFFFFFF, np.uint32).view(np.float32)))
    same(got, np.array([[1.5, 2.0]], np.float32))


def test_shifts():
    same(run("TSHR", "i8", ([[-128, -1, 64]], [[1, 7, 3]])), np.array([[-64, -1, 8]], np.int8))
    same(run("TSHR", "u8", ([[128, 255, 64]], [[1, 7, 3]])), np.array([[64, 1, 8]], np.uint8))
    same(
        run("TSHL", "i16", ([[0x4000, 3, -1]], [[1, 2, 15]])),
        np.array([[-32768, 12, -32768]], np.int16),
    )
    same(run("TSHL", "u32", ([[0x80000001]], [[1]])), np.array([[2]], np.uint32))


def test_scalar_bitwise_forms():
    a = int_values("i16")
    want = elementwise_ref(lambda x: x & 0x0F0F, "i16", a)
    same(run("TANDS", "i16", (a,), scalars=(0x0F0F,)), want)
    same(run("TORS", "u8", ([[0x10, 0x01]],), scalars=(0x81,)), np.array([[0x91, 0x81]], np.uint8))
    same(run("TSHLS", "i8", ([[3, 64]],), scalars=(1,)), np.array([[6, -128]], np.int8))
    same(run("TSHRS", "i32", ([[-8, 8]],), scalars=(2,)), np.array([[-2, 2]], np.int32))
    with pytest.raises(SimulationError, match=r"shift count 9 at element \(0, 0\)"):
        run("TSHRS", "u8", ([[1, 2]],), scalars=(9,))


def test_shift_count_out_of_range():
    a, counts = np.array([[5, -5, 5]], np.int32), np.array([[1, 40, 32]], np.int32)
    with pytest.raises(SimulationError, match=r"shift count 40 at element \(0, 1\)"):
        run("TSHR", "i32", (a, counts))
    same(run("TSHR", "i32", (a, counts), strict=False), np.array([[2, -1, 0]], np.int32))
    same(run("TSHL", "i32", (a, counts), strict=False), np.array([[10, 0, 0]], np.int32))


# ---- reductions and broadcasts ------------------------------------------------------


@pytest.mark.parametrize("dt", ["f32", "f16", "i32", "i16"])
def test_row_reductions(dt):
    make = int_values if dtype(dt).is_int else float_values
    src = make(dt, (4, 9))
    rows = [[(int if dtype(dt).is_int else float)(x) for x in row] for row in src]
    if dtype(dt).is_int:
        sums = [wrap(sum(r), dt) for r in rows]
    else:
        sums = [math.fsum(r) for r in rows]
    got = run("TROWSUM", dt, (src,), shape=(4, 1))
    want = np.array(sums, dtype=np.float64).astype(dtype(dt).np_type).reshape(4, 1)
    if dtype(dt).is_int:
        same(got, want)
    else:
        np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-3, atol=1e-2)
    maxima = np.array([[max(r)] for r in rows]).astype(src.dtype)
    minima = np.array([[min(r)] for r in rows]).astype(src.dtype)
    same(run("TROWMAX", dt, (src,), shape=(4, 1)), maxima)
    same(run("TROWMIN", dt, (src,), shape=(4, 1)), minima)


@pytest.mark.parametrize("dt", ["f32", "f16", "i16"])
def test_col_reductions(dt):
    make = int_values if dtype(dt).is_int else float_values
    src = make(dt, (5, 7))
    cols = [[src[i, j] for i in range(5)] for j in range(7)]
    # Sequential sum, each step rounded (or wrapped) to the element type.
    seq = elementwise_ref(lambda *col: 0, dt, src[:1])
    for j, col in enumerate(cols):
        acc = col[0]
        for x in col[1:]:
            acc = elementwise_ref(lambda p, q: p + q, dt, np.array([[acc]]), np.array([[x]]))[0, 0]
        seq[0, j] = acc
    same(run("TCOLSUM", dt, (src,), shape=(1, 7)), seq)
    same(run("TCOLMAX", dt, (src,), shape=(1, 7)), np.array([[max(c) for c in cols]], src.dtype))
    same(run("TCOLMIN", dt, (src,), shape=(1, 7)), np.array([[min(c) for c in cols]], src.dtype))


def test_tcolsum_order_sequential_vs_binary():
    src = np.array([[2048], [1], [1], [1], [1]], np.float16)
    # Sequential: 2048 + 1 ties back to 2048 four times. Pairwise: (2048+1) + (1+1), + 1.
    same(run("TCOLSUM", "f16", (src,), shape=(1, 1)), np.array([[2048]], np.float16))
    same(
        run("TCOLSUM", "f16", (src,), shape=(1, 1), attrs={"isBinary": True}),
        np.array([[2052]], np.float16),
    )


def test_row_and_col_expand():
    col = np.array([[1], [2], [3]], np.int16)
    same(run("TROWEXPAND", "i16", (col,), shape=(3, 4)), np.repeat(col, 4, axis=1))
    row = np.array([[1.5, 2.5, 3.5]], np.float32)
    same(run("TCOLEXPAND", "f32", (row,), shape=(2, 3)), np.repeat(row, 2, axis=0))


EXPAND_OPS = {
    "ADD": lambda a, b: a + b,
    "SUB": lambda a, b: a - b,
    "MUL": lambda a, b: a * b,
    "DIV": py_div,
    "MAX": max,
    "MIN": min,
}


@pytest.mark.parametrize("name", sorted(EXPAND_OPS))
@pytest.mark.parametrize("dt", ["f32", "i32"])
def test_expand_ops(name, dt):
    make = int_values if dtype(dt).is_int else float_values
    a = make(dt, (3, 5))
    col = make(dt, (3, 1))
    col[col == 0] = 3
    want = elementwise_ref(EXPAND_OPS[name], dt, a, np.repeat(col, 5, axis=1))
    same(run(f"TROWEXPAND{name}", dt, (a, col)), want)
    row = make(dt, (1, 5))
    row[row == 0] = 3
    want = elementwise_ref(EXPAND_OPS[name], dt, a, np.repeat(row, 3, axis=0))
    same(run(f"TCOLEXPAND{name}", dt, (a, row)), want)


def test_rowexpanddiv_int_zero_names_destination_element():
    a = np.ones((3, 4), np.int32)
    col = np.array([[1], [0], [1]], np.int32)
    with pytest.raises(SimulationError, match=r"at element \(1, 0\)"):
        run("TROWEXPANDDIV", "i32", (a, col))


# ---- activations --------------------------------------------------------------------


def test_tprelu_tlrelu():
    a = np.array([[-2.0, 0.0, 3.0, np.nan]], np.float32)
    slope = np.array([[0.5, 0.5, 0.5, 0.5]], np.float32)
    same(run("TPRELU", "f32", (a, slope)), np.array([[-1.0, 0.0, 3.0, np.nan]], np.float32))
    same(
        run("TLRELU", "f16", (a.astype(np.float16),), scalars=(0.25,)),
        np.array([[-0.5, 0.0, 3.0, np.nan]], np.float16),
    )
