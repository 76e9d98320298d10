"""Which operands ``sim.functional.arith`` runs a ufunc on as they are (its fast path), and
how the result reaches the destination.

``compute_into`` skips the widened copies only for the exactly rounded ufuncs of the
element type's own work type, on contiguous operands shaped like the destination (or
0-d); a destination apart from its operands is then written by the ufunc itself, without
a temporary. Any other case takes the widen / compute / narrow path. The values are the
same either way for these ufuncs (other tests check them); these tests hold the choice
itself, which decides how much a run copies."""

from __future__ import annotations

import numpy as np
import pytest

from sim.functional.arith import bound_into, compute_into, direct
from sim.functional.context import FnContext
from sim.isa.dtypes import dtype


class _Counted(np.ndarray):
    """An array that counts the item assignments made to it (``dst[...] = x``)."""

    sets = 0

    def __setitem__(self, key, value):
        _Counted.sets += 1
        super().__setitem__(key, value)


def _ctx(name: str, shape=(4, 64), apart: bool = True) -> FnContext:
    dst = np.zeros(shape, dtype(name).np_type).view(_Counted)
    ctx = FnContext(op="T", where="test", dtype=dtype(name), dst=dst)
    ctx.dst_apart = apart
    return ctx


def _arr(name: str, shape=(4, 64)) -> np.ndarray:
    return np.arange(1, 1 + int(np.prod(shape))).reshape(shape).astype(dtype(name).np_type)


@pytest.mark.parametrize(
    "fn", [np.add, np.subtract, np.multiply, np.maximum, np.minimum, np.divide]
)
def test_exact_binary_ufuncs_of_f32_run_on_contiguous_operands_as_they_are(fn):
    ctx = _ctx("f32")
    assert direct(ctx, fn, (_arr("f32"), _arr("f32")))
    assert bound_into(ctx, fn, _arr("f32"), _arr("f32")) is not None


@pytest.mark.parametrize("fn", [np.negative, np.absolute, np.sqrt])
def test_exact_unary_ufuncs_of_f32_bind_without_a_second_operand(fn):
    assert bound_into(_ctx("f32"), fn, _arr("f32")) is not None


def test_a_0d_scalar_operand_is_taken_as_it_is():
    s = np.asarray(np.float32(2.5))
    assert direct(_ctx("f32"), np.add, (_arr("f32"), s))
    assert bound_into(_ctx("f32"), np.add, _arr("f32"), lambda: s) is not None


@pytest.mark.parametrize(
    "name, fn, operands",
    [
        ("f32", np.exp, lambda: (_arr("f32"),)),  # not one exactly rounded operation
        ("i64", np.divide, lambda: (_arr("i64"), _arr("i64"))),  # float-only exactness
        ("i64", np.sqrt, lambda: (_arr("i64"),)),
        ("f16", np.add, lambda: (_arr("f16"), _arr("f16"))),  # computed in f32
        ("f32", np.add, lambda: (_arr("f32"), _arr("f16"))),  # an operand of another type
        ("f32", np.add, lambda: (_arr("f32"), _arr("f32", (4, 128))[:, :64])),  # strided
        ("f32", np.add, lambda: (_arr("f32"), _arr("f32", (1, 64)))),  # another shape
    ],
)
def test_other_cases_take_the_widened_copies(name, fn, operands):
    ctx = _ctx(name)
    assert not direct(ctx, fn, operands())
    assert bound_into(ctx, fn, *operands()) is None


def test_u64_and_i64_exact_ufuncs_run_as_they_are():
    for name in ("u64", "i64"):
        assert direct(_ctx(name), np.add, (_arr(name), _arr(name)))


@pytest.mark.parametrize("apart", [True, False])
def test_a_destination_apart_is_written_by_the_ufunc_itself(apart):
    a, b = _arr("f32"), _arr("f32")
    want = a + b
    ctx = _ctx("f32", apart=apart)
    _Counted.sets = 0
    compute_into(ctx, np.add, a, b)
    assert np.array_equal(ctx.dst, want)
    assert _Counted.sets == (0 if apart else 1)
    for args in ((a, b), (a, lambda: b)):
        ctx = _ctx("f32", apart=apart)
        unit = bound_into(ctx, np.add, *args)
        assert unit is not None
        _Counted.sets = 0
        unit(ctx)
        assert np.array_equal(ctx.dst, want)
        assert _Counted.sets == (0 if apart else 1)
    ctx = _ctx("f32", apart=apart)
    unit = bound_into(ctx, np.negative, a)
    assert unit is not None
    _Counted.sets = 0
    unit(ctx)
    assert np.array_equal(ctx.dst, -a) and _Counted.sets == (0 if apart else 1)
