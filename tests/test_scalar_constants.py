"""Literal scalar operands keep their bit pattern: ``-0.0`` is not ``0.0`` and a NaN is
data, whichever way the kernel is written (the builder, or PTO IR with the constant inline).

A run keys what it works out once per instruction by the instruction's value, so two
instructions that differ only in a constant must not compare equal: ``x / 0.0`` is
``+inf`` and ``x / -0.0`` is ``-inf``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from sim.frontend import parse_text, print_program
from sim.isa.program import Const

ROWS, COLS = 16, 64
NP = {"f32": np.float32, "f16": np.float16}
REFERENCE = {
    "TADDS": np.add,
    "TSUBS": np.subtract,
    "TMULS": np.multiply,
    "TDIVS": np.divide,
    "TMAXS": np.maximum,
    "TMINS": np.minimum,
}
# every lane class an operation can treat differently: signed zeros and infinities, NaN,
# subnormals of both types, the largest finite values
LANES = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    math.inf,
    -math.inf,
    math.nan,
    2.5,
    -3.75,
    1e-3,
    6e-8,
    1e-40,
    65504.0,
    3.0e38,
    -7.0,
    0.5,
]


def _input(dt: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # 3e38 is an f16 infinity
        lanes = np.array(LANES, dtype=NP[dt])
    return np.resize(lanes, (ROWS, COLS))


def _kernel(op: str, dt: str, first: float, second: float) -> sim.Kernel:
    """``y = op(x, first)`` then ``z = op(x, second)``, through the same tiles."""
    k = sim.Kernel("scalars")
    x = k.gm("x", dt, (ROWS, COLS))
    y = k.gm("y", dt, (ROWS, COLS))
    z = k.gm("z", dt, (ROWS, COLS))
    a = k.tile("vec", dt, ROWS, COLS, name="a")
    b = k.tile("vec", dt, ROWS, COLS, name="b")
    e = k.TLOAD(a, x)
    e = getattr(k, op)(b, a, first, e)
    e = k.TSTORE(y, b, e)
    e = getattr(k, op)(b, a, second, e)
    k.TSTORE(z, b, e)
    return k


def _expected(op: str, dt: str, value: float) -> np.ndarray:
    t = NP[dt]
    with np.errstate(all="ignore"):
        return REFERENCE[op](_input(dt), t(value)).astype(t)


def _same(found: np.ndarray, expected: np.ndarray, zero_sign_free=None) -> bool:
    """Equal lane by lane, signed zeros told apart (except in ``zero_sign_free`` lanes),
    any NaN matching any NaN."""
    found = np.asarray(found).reshape(expected.shape)
    if zero_sign_free is not None:
        free = zero_sign_free & (found == 0)
        found, expected = np.where(free, 0, found), np.where(free, 0, expected)
    nan = np.isnan(expected)
    bits = {2: np.uint16, 4: np.uint32}[expected.itemsize]
    return bool(
        np.array_equal(np.isnan(found), nan)
        and np.array_equal(found[~nan].view(bits), expected[~nan].view(bits))
    )


def _check(result, op, dt, first, second):
    for name, value in (("y", first), ("z", second)):
        expected = _expected(op, dt, value)
        found = result.output(name)
        # which zero max(-0.0, +0.0) is, the reference leaves open (numpy takes the first)
        with np.errstate(over="ignore"):
            zero = NP[dt](value) == 0
        free = (_input(dt) == 0) & zero if op in ("TMAXS", "TMINS") else None
        assert _same(found, expected, free), (op, dt, name, value, found.ravel()[:16])


SCALARS = st.one_of(
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, -1e-45, 6e-8, 65504.0]),
    st.floats(width=16),
    st.floats(width=32),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(sorted(REFERENCE)),
    dt=st.sampled_from(sorted(NP)),
    first=SCALARS,
    second=SCALARS,
)
def test_tile_scalar_ops_match_numpy_for_any_constant(op, dt, first, second):
    k = _kernel(op, dt, first, second)
    inputs = {"x": _input(dt)}
    _check(sim.simulate(k, inputs=inputs), op, dt, first, second)
    # the same kernel as PTO IR text, its constants inline
    program = parse_text(print_program(k.program()))
    _check(sim.simulate(program, inputs={"x": _input(dt).ravel()}), op, dt, first, second)


@pytest.mark.parametrize("dt", sorted(NP))
@pytest.mark.parametrize("source", ["builder", "pto"])
def test_division_by_signed_zeros_on_the_same_tiles(dt, source):
    k = _kernel("TDIVS", dt, 0.0, -0.0)
    program = k if source == "builder" else parse_text(print_program(k.program()))
    x = _input(dt)
    r = sim.simulate(program, inputs={"x": x if source == "builder" else x.ravel()})
    y, z = r.output("y").reshape(x.shape), r.output("z").reshape(x.shape)
    assert y[0, 2] == math.inf and z[0, 2] == -math.inf  # 1.0 / +-0.0


@pytest.mark.parametrize("kind", [float, np.float32, np.float16, np.float64])
def test_a_loop_issuing_from_one_line_keeps_each_scalars_bit_pattern(kind):
    # the builder looks a call up by its operands before building IR: 0.0 == -0.0 there
    # gave the second division the first one's statement
    nan = np.frombuffer(np.uint64(0x7FF8000000000123).tobytes(), np.float64)[0].item()
    scalars = [kind(0.0), kind(-0.0), kind(1.5), kind(math.nan), kind(nan)]
    k = sim.Kernel("loop")
    x = k.gm("x", "f32", (ROWS, COLS))
    outs = [k.gm(f"y{i}", "f32", (ROWS, COLS)) for i in range(len(scalars))]
    a = k.tile("vec", "f32", ROWS, COLS, name="a")
    b = k.tile("vec", "f32", ROWS, COLS, name="b")
    e = k.TLOAD(a, x)
    for y, s in zip(outs, scalars, strict=True):
        e = k.TSTORE(y, b, k.TDIVS(b, a, s, e))
    divs = [st for st in k.program().main.body if getattr(st, "opcode", "") == "TDIVS"]
    consts = [st.ins[1] for st in divs]
    assert [np.float64(c.value).tobytes() for c in consts] == [
        np.float64(s).tobytes() for s in scalars
    ]
    xs = _input("f32")
    r = sim.simulate(k, inputs={"x": xs})
    for i, s in enumerate(scalars[:3]):
        with np.errstate(all="ignore"):
            want = xs / np.float32(s)
        assert _same(r.output(f"y{i}"), want), (kind, s)


def test_constants_are_told_apart_by_bit_pattern():
    nan = math.nan
    other_nan = np.frombuffer(np.uint64(0x7FF8000000000123).tobytes(), np.float64)[0].item()
    assert Const(0.0, "f32") != Const(-0.0, "f32")
    assert Const(nan, "f32") == Const(nan, "f32")
    assert Const(nan, "f32") != Const(other_nan, "f32")
    assert Const(-2, "f32") == Const(-2.0, "f32")  # a builder's int on an f32 tile, parsed
    assert Const(1, "i32") != Const(1, "i64")
    assert Const(2.5, "f32") == Const(2.5, "f32")
    assert Const(2.5, "f32") != Const(2.5, "f16")
    assert len({Const(0.0, "f32"), Const(-0.0, "f32"), Const(nan, "f32")}) == 3
