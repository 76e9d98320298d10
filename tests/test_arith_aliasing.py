"""Tile-tile ops whose destination is one of their own sources, through the builder and
``sim.simulate``.

``TSUB(a, a, b)`` writes ``a - b`` over ``a`` while reading it; ``TSUB(b, a, b)`` writes
it over ``b``. The functional units take a shorter path when the destination is not apart
from the sources (``sim.functional.arith.compute_into``), so every element-wise family is
run here with the destination aliasing src0 and, separately, src1, on every element type
the reference's type table lists for the op on each target, with operands where their
order changes the result (``a - b``, ``a / b``, ``a << b``, never ``a == b``).

References are computed per element in plain Python: integers exactly and wrapped to the
element type by hand, floats in f64 (exact for +, -, * of these values; one division)
and rounded once to the element type — for +, -, *, / an f64 intermediate carries more
than twice the precision of f32, f16 and bf16, so that rounding equals the native one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import sim
from sim.isa.dtypes import dtype

R, C = 4, 64  # 256 elements: a whole number of 32-byte blocks for every element type

# Ops and element types from the reference's data-type table (instructions.md §2).
_ARITH_A2A3 = ["i32", "i16", "f16", "f32"]
_ARITH_A5 = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32"]
_LOGIC = ["i8", "u8", "i16", "u16", "i32", "u32"]
TYPES = {
    "a2a3": {
        "TADD": _ARITH_A2A3,
        "TSUB": _ARITH_A2A3,
        "TMUL": _ARITH_A2A3,
        "TMAX": _ARITH_A2A3,
        "TMIN": _ARITH_A2A3,
        "TDIV": ["f16", "f32"],
        "TAND": _LOGIC,
        "TOR": _LOGIC,
        "TXOR": _LOGIC,
        "TSHL": _LOGIC,
        "TSHR": _LOGIC,
    },
    "a5": {
        "TADD": _ARITH_A5,
        # the TSUB page of the reference omits bf16, i64 and u64 (its table lists them:
        # a conflict the verifier resolves to the page)
        "TSUB": [t for t in _ARITH_A5 if t not in ("bf16", "i64", "u64")],
        "TMUL": [t for t in _ARITH_A5 if t not in ("i8", "u8")],
        "TMAX": _ARITH_A5,
        "TMIN": _ARITH_A5,
        "TDIV": ["i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32"],
        "TAND": _LOGIC,
        "TOR": _LOGIC,
        "TXOR": _LOGIC,
        "TSHL": _LOGIC + ["i64", "u64"],
        "TSHR": _LOGIC + ["i64", "u64"],
    },
}


def _wrap(v: int, dt) -> int:
    """``v`` wrapped to ``dt`` (two's complement), by hand."""
    v &= (1 << dt.bits) - 1
    if dt.kind == "int" and v >= 1 << (dt.bits - 1):
        v -= 1 << dt.bits
    return v


def _c_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


INT_REF = {
    "TADD": lambda x, y: x + y,
    "TSUB": lambda x, y: x - y,
    "TMUL": lambda x, y: x * y,
    "TDIV": _c_div,
    "TMAX": max,
    "TMIN": min,
    "TSHL": lambda x, y: x << y,
    "TSHR": lambda x, y: x >> y,  # Python >> is arithmetic on negatives, C's on signed
}
BITS_REF = {"TAND": lambda x, y: x & y, "TOR": lambda x, y: x | y, "TXOR": lambda x, y: x ^ y}
FLOAT_REF = {
    "TADD": lambda x, y: x + y,
    "TSUB": lambda x, y: x - y,
    "TMUL": lambda x, y: x * y,
    "TDIV": lambda x, y: x / y,
    "TMAX": max,
    "TMIN": min,
}


def _int_operands(dt, op, rng):
    """(src0, src1) of ``op`` on integer type ``dt``: src0 led by the type's edge values,
    src1 never equal to src0 lane by lane, non-zero for TDIV, a count in [0, bits) for
    the shifts."""
    info = np.iinfo(dt.np_type)
    n = R * C
    lo, hi = int(info.min), int(info.max)
    edges = [lo, hi, 0, 1, hi - 1, lo + 1]
    body = [
        int(v) for v in rng.integers(lo, hi, size=n - len(edges), endpoint=True, dtype=dt.np_type)
    ]
    a = edges + body
    if op in ("TSHL", "TSHR"):
        b = [int(v) for v in rng.integers(1, dt.bits, size=n)]
    else:
        b = [int(v) for v in rng.integers(lo, hi, size=n, endpoint=True, dtype=dt.np_type)]
        b[: len(edges)] = [1, hi, hi, -1 if lo < 0 else hi, lo, 2][: len(edges)]
        b = [y if y != 0 or op != "TDIV" else 3 for y in b]
        b = [y if y != x else y ^ 1 for x, y in zip(a, b, strict=True)]  # order must matter
        if op == "TDIV":
            b = [y if y != 0 else 3 for y in b]
    return a, b


def _float_operands(dt, op, rng):
    n = R * C
    a = rng.normal(0, 8, n)
    b = rng.uniform(0.5, 8, n) * rng.choice([-1.0, 1.0], n)
    a, b = (np.asarray(v).astype(dt.np_type) for v in (a, b))
    a = np.where(a == b, a + dt.np_type.type(1), a).astype(dt.np_type)
    return [float(x) for x in a], [float(y) for y in b]


def _expected(op, dt, a, b) -> np.ndarray:
    if dt.is_float:
        got = [FLOAT_REF[op](x, y) for x, y in zip(a, b, strict=True)]
        return np.array(got, dtype=np.float64).astype(dt.np_type)
    if op in BITS_REF:
        m = (1 << dt.bits) - 1
        got = [_wrap(BITS_REF[op](x & m, y & m), dt) for x, y in zip(a, b, strict=True)]
    else:
        got = [_wrap(INT_REF[op](x, y), dt) for x, y in zip(a, b, strict=True)]
    return np.array(got, dtype=object).astype(dt.np_type)


def _array(values, dt) -> np.ndarray:
    if dt.is_float:
        return np.array(values, dtype=np.float64).astype(dt.np_type).reshape(R, C)
    return np.array(values, dtype=object).astype(dt.np_type).reshape(R, C)


def _cases():
    by = {}
    for target, ops in TYPES.items():
        for op, types in ops.items():
            for t in types:
                by.setdefault((target, t), []).append(op)
    return [(target, t, tuple(ops)) for (target, t), ops in sorted(by.items())]


@pytest.mark.parametrize(
    "target, dt_name, ops", _cases(), ids=lambda v: str(v) if isinstance(v, str) else ""
)
def test_binary_ops_with_dst_aliasing_either_source(target, dt_name, ops):
    """One kernel per element type: each op over src0, over src1 and into a third tile."""
    dt = dtype(dt_name)
    rng = np.random.default_rng(sum(map(ord, f"{target}{dt_name}")))
    k = sim.Kernel(f"alias_{dt_name}")
    want = {}
    for op in ops:
        a, b = (_float_operands if dt.is_float else _int_operands)(dt, op, rng)
        ga = k.gm(f"a_{op}", dt_name, (R, C), _array(a, dt))
        gb = k.gm(f"b_{op}", dt_name, (R, C), _array(b, dt))
        for over in (0, 1, 2):  # over src0, over src1, apart from both
            ta, tb, tc = (k.tile("vec", dt_name, R, C) for _ in range(3))
            k.TLOAD(ta, ga)
            k.TLOAD(tb, gb)
            dst = (ta, tb, tc)[over]
            k.instr(op, dst, ta, tb)
            out = k.gm(f"c_{op}_{over}", dt_name, (R, C))
            k.TSTORE(out, dst)
            want[f"c_{op}_{over}"] = _expected(op, dt, a, b).reshape(R, C)
    res = sim.simulate(k, target=target)
    wrong = []
    for name, w in want.items():
        got = res.output(name).reshape(R, C)
        if got.tobytes() != w.tobytes():
            at = np.argwhere(got != w)[0] if (got != w).any() else (0, 0)
            i, j = int(at[0]), int(at[1])
            wrong.append(f"{name}: [{i},{j}] got {got[i, j]!r} want {w[i, j]!r}")
    assert not wrong, f"{target} {dt_name}: " + "; ".join(wrong)


def test_tsub_in_place_by_hand():
    """a = 5, b = 2: TSUB over src0 and over src1 both give 3 (not -3)."""
    for target, dt_name in (("a2a3", "f32"), ("a2a3", "i32"), ("a5", "f16"), ("a5", "u32")):
        k = sim.Kernel("tsub")
        ga = k.gm("a", dt_name, (R, C), np.full((R, C), 5).astype(dtype(dt_name).np_type))
        gb = k.gm("b", dt_name, (R, C), np.full((R, C), 2).astype(dtype(dt_name).np_type))
        for over in (0, 1):
            ta, tb = k.tile("vec", dt_name, R, C), k.tile("vec", dt_name, R, C)
            k.TLOAD(ta, ga)
            k.TLOAD(tb, gb)
            k.TSUB((ta, tb)[over], ta, tb)
            k.TSTORE(k.gm(f"c{over}", dt_name, (R, C)), (ta, tb)[over])
        res = sim.simulate(k, target=target)
        for over in (0, 1):
            assert (res.output(f"c{over}").astype(np.float64) == 3).all(), (target, dt_name, over)


# ---- tile-scalar and three-source forms in place ------------------------------------------

SCALAR_OPS = {
    "TADDS": lambda x, s: x + s,
    "TSUBS": lambda x, s: x - s,
    "TMULS": lambda x, s: x * s,
    "TDIVS": lambda x, s: x / s,
    "TMAXS": max,
    "TMINS": min,
}


@pytest.mark.parametrize("dt_name", ["f32", "f16"])
def test_tile_scalar_ops_in_place(dt_name):
    """``op(a, a, s)`` over its own source, and TDIVS both ways (``a / s`` and ``s / a``)."""
    dt = dtype(dt_name)
    rng = np.random.default_rng(7)
    a = [float(x) for x in (rng.uniform(0.5, 8, R * C) * rng.choice([-1.0, 1.0], R * C))]
    a = [float(v) for v in np.array(a).astype(dt.np_type)]
    s = 3.0
    k = sim.Kernel("scalar_inplace")
    ga = k.gm("a", dt_name, (R, C), _array(a, dt))
    want = {}
    for op, ref in SCALAR_OPS.items():
        for first in (False, True) if op == "TDIVS" else (False,):
            t = k.tile("vec", dt_name, R, C)
            k.TLOAD(t, ga)
            if first:
                k.instr(op, t, s, t)
                w = [s / x for x in a]
            else:
                k.instr(op, t, t, s)
                w = [ref(x, s) for x in a]
            name = f"c_{op}_{int(first)}"
            k.TSTORE(k.gm(name, dt_name, (R, C)), t)
            want[name] = _array(w, dt)
    res = sim.simulate(k, target="a5")  # no in-place reciprocal quirk there: a true division
    for name, w in want.items():
        np.testing.assert_array_equal(res.output(name).reshape(R, C), w, err_msg=name)


@pytest.mark.parametrize("dt_name", ["f32", "i32"])
def test_three_source_ops_over_each_source(dt_name):
    """TADDC = a + b + c and TSUBC = a - b + c with the destination over a, b and c."""
    dt = dtype(dt_name)
    vals = {"a": 50, "b": 7, "c": -3}
    k = sim.Kernel("addc")
    g = {
        n: k.gm(n, dt_name, (R, C), np.full((R, C), v).astype(dt.np_type)) for n, v in vals.items()
    }
    want = {}
    for op, ref in (("TADDC", 50 + 7 - 3), ("TSUBC", 50 - 7 - 3)):
        for over in range(3):
            ts = [k.tile("vec", dt_name, R, C) for _ in range(3)]
            for t, n in zip(ts, "abc", strict=True):
                k.TLOAD(t, g[n])
            k.instr(op, ts[over], *ts)
            name = f"o_{op}_{over}"
            k.TSTORE(k.gm(name, dt_name, (R, C)), ts[over])
            want[name] = ref
    res = sim.simulate(k, target="a2a3")
    for name, w in want.items():
        assert (res.output(name).astype(np.float64) == w).all(), name


def _fmod(x: float, y: float) -> float:
    return math.fmod(x, y)


def _floor_rem(x: float, y: float) -> float:
    r = math.fmod(x, y)
    return r + y if r != 0 and (r < 0) != (y < 0) else r


@pytest.mark.parametrize("op, ref", [("TFMOD", _fmod), ("TREM", _floor_rem)])
def test_remainder_ops_over_either_source(op, ref):
    """7.5 rem -2 = -0.5 but -2 rem 7.5 = 5.5: the operands' order shows in every lane."""
    rng = np.random.default_rng(11)
    a = (rng.uniform(1, 9, (R, C)) * rng.choice([-1.0, 1.0], (R, C))).astype(np.float32)
    b = (rng.uniform(0.5, 3, (R, C)) * rng.choice([-1.0, 1.0], (R, C))).astype(np.float32)
    k = sim.Kernel(op.lower())
    ga, gb = k.gm("a", "f32", (R, C), a), k.gm("b", "f32", (R, C), b)
    for over in (0, 1):
        ta, tb = k.tile("vec", "f32", R, C), k.tile("vec", "f32", R, C)
        tmp = [k.tile("vec", "f32", R, C + 16)] if op == "TREM" else []
        k.TLOAD(ta, ga)
        k.TLOAD(tb, gb)
        k.instr(op, (ta, tb)[over], ta, tb, *tmp)
        k.TSTORE(k.gm(f"c{over}", "f32", (R, C)), (ta, tb)[over])
    res = sim.simulate(k, target="a2a3")
    want = np.array([ref(float(x), float(y)) for x, y in zip(a.flat, b.flat, strict=True)]).astype(
        np.float32
    )
    for over in (0, 1):
        np.testing.assert_array_equal(res.output(f"c{over}"), want, err_msg=f"over src{over}")
