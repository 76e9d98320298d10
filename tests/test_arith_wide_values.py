"""Values at the edges of what the functional units' work types hold, through the builder
and ``sim.simulate``.

* u64 values at and above 2**63 (negative if read as int64) and the i64 extremes, in
  element-wise ops whose result depends on the reading: order (TMAX, TMIN), division,
  right shifts, and wrap-around.
* Integer scalars of the tile-scalar ops are cast to the element type like a C cast:
  a scalar that does not fit wraps (300 on u8 is 44), and a 64-bit scalar above 2**53
  keeps every bit (through a float64 it would be rounded).
* f16 row sums accumulate in f32 and round once to f16 (``sim.functional.reduce``): rows
  are chosen, by a search below, where that differs from an exact (or f64) sum.

References are plain Python integers wrapped by hand, or exact sums (``fractions``).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

import sim
from sim.isa.dtypes import dtype

R, C = 4, 64
U64_TOP = 1 << 63


def _wrap(v: int, name: str) -> int:
    dt = dtype(name)
    v &= (1 << dt.bits) - 1
    if dt.kind == "int" and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def _tile_of(values, name: str) -> np.ndarray:
    """``values`` (Python ints, cycled) as an R x C array of ``name``."""
    flat = list(itertools.islice(itertools.cycle(values), R * C))
    return np.array(flat, dtype=object).astype(dtype(name).np_type).reshape(R, C)


def _run_binary(op: str, name: str, a: np.ndarray, b: np.ndarray, target: str = "a5"):
    k = sim.Kernel(op.lower())
    ta, tb, tc = (k.tile("vec", name, R, C) for _ in range(3))
    k.TLOAD(ta, k.gm("a", name, (R, C), a))
    k.TLOAD(tb, k.gm("b", name, (R, C), b))
    k.instr(op, tc, ta, tb)
    k.TSTORE(k.gm("c", name, (R, C)), tc)
    return sim.simulate(k, target=target).output("c").reshape(R, C)


def _run_scalar(op: str, name: str, a: np.ndarray, s, target: str = "a5"):
    k = sim.Kernel(op.lower())
    ta, tc = k.tile("vec", name, R, C), k.tile("vec", name, R, C)
    k.TLOAD(ta, k.gm("a", name, (R, C), a))
    k.instr(op, tc, ta, s)
    k.TSTORE(k.gm("c", name, (R, C)), tc)
    return sim.simulate(k, target=target).output("c").reshape(R, C)


def _ints(arr: np.ndarray) -> list[int]:
    return [int(v) for v in arr.flat]


# ---- u64 at and above 2**63, i64 extremes ------------------------------------------------

U64_A = [U64_TOP, U64_TOP + 5, (1 << 64) - 1, 7, U64_TOP - 1, 0, (1 << 64) - 2, 3]
U64_B = [7, U64_TOP + 6, 3, U64_TOP, U64_TOP + 1, 9, 2, (1 << 64) - 1]
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I64_A = [I64_MIN, I64_MAX, I64_MIN, I64_MAX, -7, 7, I64_MIN + 1, 0]
I64_B = [-1, 1, 1, -1, 2, -2, I64_MAX, I64_MIN]


def _c_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@pytest.mark.parametrize(
    "name, op, ref",
    [
        ("u64", "TMAX", max),
        ("u64", "TMIN", min),
        ("u64", "TDIV", _c_div),
        ("u64", "TADD", lambda x, y: x + y),
        ("u64", "TMUL", lambda x, y: x * y),
        ("i64", "TMAX", max),
        ("i64", "TMIN", min),
        ("i64", "TDIV", _c_div),
        ("i64", "TADD", lambda x, y: x + y),
        ("i64", "TMUL", lambda x, y: x * y),
    ],
)
def test_64_bit_extremes_elementwise(name, op, ref):
    a_vals, b_vals = (U64_A, U64_B) if name == "u64" else (I64_A, I64_B)
    a, b = _tile_of(a_vals, name), _tile_of(b_vals, name)
    got = _run_binary(op, name, a, b)
    want = [_wrap(ref(x, y), name) for x, y in zip(_ints(a), _ints(b), strict=True)]
    assert _ints(got) == want


def test_u64_above_2_63_by_hand():
    """Read as int64, 2**63 + 5 would be negative: smaller than 7, and halved toward -inf."""
    a = _tile_of([U64_TOP + 5], "u64")
    assert _ints(_run_binary("TMAX", "u64", a, _tile_of([7], "u64")))[0] == U64_TOP + 5
    assert _ints(_run_binary("TMIN", "u64", a, _tile_of([7], "u64")))[0] == 7
    assert _ints(_run_binary("TDIV", "u64", a, _tile_of([2], "u64")))[0] == (U64_TOP + 5) // 2
    # logical shift: zeros come in from the left
    assert _ints(_run_binary("TSHR", "u64", a, _tile_of([1], "u64")))[0] == (U64_TOP + 5) >> 1


def test_i64_extremes_by_hand():
    assert (
        _ints(_run_binary("TADD", "i64", _tile_of([I64_MAX], "i64"), _tile_of([1], "i64")))[0]
        == I64_MIN
    )
    # INT_MIN / -1 wraps back to INT_MIN
    assert (
        _ints(_run_binary("TDIV", "i64", _tile_of([I64_MIN], "i64"), _tile_of([-1], "i64")))[0]
        == I64_MIN
    )
    # arithmetic shift: the sign comes in from the left
    assert (
        _ints(_run_binary("TSHR", "i64", _tile_of([I64_MIN], "i64"), _tile_of([62], "i64")))[0]
        == -2
    )


# ---- integer scalars: C-cast wrap, no float64 on the way -----------------------------------


@pytest.mark.parametrize(
    "target, name, op, values, s, ref",
    [
        # the scalar wraps to the element type first: 300 -> 44 on u8, 40000 -> -25536 on i16
        ("a5", "u8", "TADDS", [10, 250, 0, 255], 300, lambda x, s: x + 44),
        ("a5", "i16", "TADDS", [10, -10, 32767, -32768], 40000, lambda x, s: x - 25536),
        ("a2a3", "i16", "TADDS", [10, -10, 32767, -32768], 40000, lambda x, s: x - 25536),
        ("a2a3", "i32", "TADDS", [2**31 - 1, -(2**31), 0, 5], 1, lambda x, s: x + s),
        ("a2a3", "i32", "TMULS", [2**31 - 1, -(2**31), 3, -5], 2**31 - 1, lambda x, s: x * s),
        ("a5", "u32", "TADDS", [1, 0, 2**32 - 1, 2**31], 2**32 - 1, lambda x, s: x + s),
        ("a5", "u32", "TMAXS", [1, 0, 2**32 - 1, 2**31], 2**31 + 1, max),
        # above 2**53 a float64 would round the scalar (2**53 + 1 -> 2**53)
        ("a5", "i64", "TADDS", [0, 1, -1, I64_MAX], 2**53 + 1, lambda x, s: x + s),
        ("a5", "i64", "TADDS", [0, 1, -1, I64_MIN], -(2**62) - 1, lambda x, s: x + s),
        ("a5", "i64", "TMULS", [3, -3, 1, I64_MAX], 2**62 + 1, lambda x, s: x * s),
        ("a5", "i64", "TMAXS", [2**53, 2**53 + 2, -1, I64_MIN], 2**53 + 1, max),
        ("a5", "u64", "TADDS", [U64_TOP, 1, 0, (1 << 64) - 1], 2**53 + 1, lambda x, s: x + s),
        ("a5", "u64", "TMAXS", [U64_TOP, U64_TOP + 2, 5, 0], U64_TOP + 1, max),
        ("a5", "u64", "TMINS", [U64_TOP, U64_TOP + 2, 5, 0], U64_TOP + 1, min),
    ],
)
def test_integer_scalar_wraps_like_a_c_cast(target, name, op, values, s, ref):
    a = _tile_of(values, name)
    got = _run_scalar(op, name, a, s, target=target)
    cast = _wrap(s, name)
    want = [_wrap(ref(x, cast), name) for x in _ints(a)]
    assert _ints(got) == want


def test_texpands_keeps_every_bit_of_a_64_bit_scalar():
    for name, s in (("i64", 2**53 + 1), ("i64", I64_MIN + 1), ("u64", (1 << 64) - 1)):
        k = sim.Kernel("fill")
        t = k.tile("vec", name, R, C)
        k.TEXPANDS(t, s)
        k.TSTORE(k.gm("c", name, (R, C)), t)
        got = sim.simulate(k, target="a5").output("c")
        assert set(_ints(got)) == {_wrap(s, name)}, (name, s)


# ---- f16 row sums: f32 accumulation, one rounding ------------------------------------------


def _f16_rows_where_f32_differs_from_exact() -> list[list[float]]:
    """Rows of three f16 values (the rest zeros) whose sum in f32, in every order, rounds
    to another f16 than their exact sum does — a unit accumulating in f64 (or exactly)
    would round them the other way. Found by a search over powers of two."""
    rows = []
    for base, k1, k2 in itertools.product((1.0, 1.5, 1.25, 3.0), range(8, 14), range(12, 25)):
        vals = [base, 2.0**-k1, 2.0**-k2]
        exact = np.float16(float(sum(map(Fraction, vals))))  # one rounding of the exact sum
        # every summation order in f32 (each partial sum rounded to f32)
        in_f32 = set()
        for order in itertools.permutations(vals):
            acc = np.float32(0)
            for v in order:
                acc = np.float32(acc + np.float32(v))
            in_f32.add(np.float16(acc))
        if len(in_f32) == 1 and exact not in in_f32:
            rows.append(vals)
    return rows


def test_f16_row_sum_accumulates_in_f32():
    rows = _f16_rows_where_f32_differs_from_exact()
    assert len(rows) >= 2  # the search must have found cases, or the test tests nothing
    rows = rows[:R]
    cols = 16
    data = np.zeros((len(rows), cols), np.float16)
    for i, vals in enumerate(rows):
        data[i, : len(vals)] = vals
    want = []
    for vals in rows:
        acc = np.float32(0)
        for v in vals:
            acc = np.float32(acc + np.float32(v))
        want.append(np.float16(acc))
    for target in ("a2a3", "a5"):
        k = sim.Kernel("rowsum")
        t, d = k.tile("vec", "f16", len(rows), cols), k.tile("vec", "f16", len(rows), 16)
        k.TLOAD(t, k.gm("a", "f16", data.shape, data))
        k.TROWSUM(d, t)
        k.TSTORE(k.gm("c", "f16", (len(rows), 16)), d)
        got = sim.simulate(k, target=target).output("c").reshape(len(rows), 16)[:, 0]
        assert got.tolist() == [float(w) for w in want], target


# ---- float scalars: one rounding from the f64 value -----------------------------------------


@pytest.mark.parametrize(
    "target, name, s, want",
    [
        # just above the midpoint between 1 and the next value: rounds up. A detour through
        # f32 lands on the midpoint first (the 2**-30 is below f32's precision) and then
        # rounds to even, down to 1.
        ("a5", "bf16", 1 + 2**-8 + 2**-30, 1 + 2**-7),
        ("a5", "bf16", -(1 + 2**-8 + 2**-30), -(1 + 2**-7)),
        ("a5", "bf16", 3 * 2**-130 + 2**-160, 3 * 2**-130),  # a subnormal, exactly kept
        ("a5", "bf16", 1 + 2**-8, 1.0),  # exactly the midpoint: to even
        ("a5", "f16", 1 + 2**-11 + 2**-30, 1 + 2**-10),
        ("a2a3", "f16", 1 + 2**-11 + 2**-30, 1 + 2**-10),
    ],
)
def test_a_float_scalar_is_rounded_once_to_the_element_type(target, name, s, want):
    for op in ("TADDS", "TEXPANDS"):
        k = sim.Kernel("scalar_rounding")
        t = k.tile("vec", name, R, C)
        if op == "TADDS":
            zeros = np.zeros((R, C)).astype(dtype(name).np_type)
            k.TLOAD(t, k.gm("a", name, (R, C), zeros))
            k.TADDS(t, t, s)
        else:
            k.TEXPANDS(t, s)
        k.TSTORE(k.gm("c", name, (R, C)), t)
        got = sim.simulate(k, target=target).output("c").astype(np.float64)
        assert set(got.tolist()) == {want}, op


# ---- narrow floats in f32: TRSQRT over every f16 -------------------------------------------


def test_f16_trsqrt_is_computed_in_f32_and_rounded_once():
    """Every non-negative finite f16 through TRSQRT, the destination apart or over the source:
    1 / sqrt(x) evaluated in f32 and rounded once to f16 equals the f64 value rounded once
    (checked here for all of them), while sqrt and divide each rounded to f16 differ for
    about a quarter of them — so a unit that computed in f16 itself would be seen."""
    from sim.functional import execute
    from sim.functional.context import FnContext

    f16 = dtype("f16")
    bits = np.arange(0, 0x7C00, dtype=np.uint16)  # +0, subnormals .. largest finite
    x = bits.view(np.float16).reshape(-1, 64)
    with np.errstate(divide="ignore"):  # 1 / sqrt(+0) = inf
        want = np.array([1 / np.sqrt(float(v)) for v in x.flat]).astype(np.float16)
        native = (np.float16(1) / np.sqrt(x)).astype(np.float16)  # each step rounded to f16
    assert (native.ravel() != want).sum() > 1000  # the inputs tell the two apart
    for apart in (True, False):
        src = x.copy()
        dst = np.empty_like(src) if apart else src
        ctx = FnContext(op="TRSQRT", where="test", dtype=f16, dst=dst, srcs=(src,))
        ctx.dst_apart = apart
        execute(ctx)
        assert dst.ravel().tobytes() == want.tobytes(), apart


def _nearest(name: str, v: float) -> int:
    """The bits of ``v`` rounded once to ``name`` (to nearest, ties to even), found among the
    neighbours of a close guess by exact distance (``fractions``): no cast of the library
    under test decides it."""
    dt = dtype(name)
    ut = {8: np.uint8, 16: np.uint16, 32: np.uint32}[dt.bits]
    guess = int(np.array([np.float32(v)]).astype(dt.np_type).view(ut)[0])
    cands = []
    for b in (guess - 1, guess, guess + 1):
        c = float(np.array([b], ut).view(dt.np_type).astype(np.float64)[0])
        if np.isfinite(c) and (c > 0) == (v > 0):
            cands.append((abs(Fraction(c) - Fraction(v)), b & 1, b))
    return min(cands)[2]


def _scalar_samples(name: str, seed: int, n: int) -> list[float]:
    """f64 values of either sign, above and below 1: half of them a hair (2**-30 relative,
    below f32's precision) off the midpoint of two neighbours of ``name`` (where f64 -> f32
    -> ``name`` rounds twice and lands on the wrong side), half anywhere."""
    dt = dtype(name)
    ut = {8: np.uint8, 16: np.uint16, 32: np.uint32}[dt.bits]
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        sign = 1 if i % 2 else -1
        mag = float(np.exp2(rng.uniform(-5, 5)))
        if i % 4 < 2:
            out.append(sign * mag * (1 + float(rng.uniform(0, 2**-20))))
            continue
        b = int(np.array([np.float32(mag)]).astype(dt.np_type).view(ut)[0])
        lo, hi = (
            float(np.array([x], ut).view(dt.np_type).astype(np.float64)[0]) for x in (b, b + 1)
        )
        mid = (lo + hi) / 2
        out.append(sign * mid * (1 + (2**-30 if i % 8 < 4 else -(2**-30))))
    return out


@pytest.mark.parametrize("name", ["f32", "f16", "bf16", "f8e4m3", "f8e5m2"])
def test_float_scalars_of_either_sign_above_and_below_one_are_rounded_once(name):
    """A scalar operand is cast from its f64 value with one rounding, whatever its sign and
    size (for the formats reached through f32, a round-to-odd f32 first), for f32 itself
    straight to nearest."""
    from sim.functional.arith import scalar

    dt = dtype(name)
    ut = {8: np.uint8, 16: np.uint16, 32: np.uint32}[dt.bits]
    values = _scalar_samples(name, 11, 400)
    got = [int(np.asarray(scalar(dt, v)).reshape(1).view(ut)[0]) for v in values]
    want = [_nearest(name, v) for v in values]
    assert got == want
    # the samples tell one rounding from two: f64 -> f32 -> type differs on some of them
    twice = [int(np.array([np.float32(v)]).astype(dt.np_type).view(ut)[0]) for v in values]
    if name != "f32":
        assert twice != want


def test_an_f32_scalar_rounds_to_nearest_through_a_kernel():
    """f32 scalars one bit pattern apart from a round-to-odd cast: TADDS onto zeros stores
    the scalar rounded to nearest, as numpy's f64 -> f32 cast rounds it."""
    one = np.float32(1.0).view(np.uint32)
    # 1 + 3 ulp(f32) + 3/4 ulp: to nearest 1 + 4 ulp; truncated (1 + 3 ulp, odd) it stays
    s = 1 + 3 * 2.0**-23 + 0.75 * 2.0**-23
    k = sim.Kernel("f32_scalar")
    t = k.tile("vec", "f32", R, C)
    k.TLOAD(t, k.gm("a", "f32", (R, C), np.zeros((R, C), np.float32)))
    k.TADDS(t, t, s)
    k.TSTORE(k.gm("c", "f32", (R, C)), t)
    got = sim.simulate(k, target="a2a3").output("c").view(np.uint32)
    assert set(got.tolist()) == {int(one) + 4}
