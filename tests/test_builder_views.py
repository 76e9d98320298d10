"""GM windows the builder takes with ``a[r0:r1, c0:c1]``: contiguous rows and columns.

A subscript that is not such a window — an integer, a stepped slice, a third subscript —
is refused with one line naming the tensor and what was found (it used to be an
AttributeError traceback, or, for a step, the window of the whole span read quietly).
"""

from __future__ import annotations

import pytest

import sim


@pytest.fixture
def x():
    return sim.Kernel("views").gm("x", "f32", (64, 32))


@pytest.mark.parametrize(
    "r0,r1,c0,c1",
    [(0, 8, 0, 32), (8, 16, 4, 20), (60, None, None, 8), (None, 64, 31, 32), (-8, None, -16, -8)],
)
def test_a_window_is_the_rows_and_columns_python_slicing_names(x, r0, r1, c0, c1):
    rows, cols = range(64)[r0:r1], range(32)[c0:c1]
    for key in ((slice(r0, r1), slice(c0, c1)), (slice(r0, r1, 1), slice(c0, c1, 1))):
        v = x[key]
        assert (v.row, v.rows, v.col, v.cols) == (rows[0], len(rows), cols[0], len(cols))


@pytest.mark.parametrize(
    "key,said",
    [
        ((slice(0, 8, 2), slice(None)), "a step is not supported"),
        ((slice(None), slice(0, 32, 4)), "a step is not supported"),
        ((slice(8, 0, -1), slice(None)), "a step is not supported"),
        ((3, slice(None)), "expected a slice such as a[r0:r1, c0:c1], found 3"),
        (5, "expected a slice such as a[r0:r1, c0:c1], found 5"),
        ((slice(None), slice(None), slice(0, 1)), "expected a[rows, cols] (two slices), found 3"),
    ],
)
def test_what_is_not_a_window_is_refused(x, key, said):
    with pytest.raises(sim.UserError, match="view of x: ") as e:
        x[key]
    assert said in str(e.value)


def test_an_empty_or_outside_window_is_refused(x):
    for key in ((slice(8, 8), slice(None)), (slice(70, 80), slice(None))):
        with pytest.raises(sim.UserError, match="outside the 64x32 tensor|past the tensor's 64"):
            x[key]


@pytest.mark.parametrize(
    "key,said",
    [
        ((slice(0, 128), slice(None)), "rows 0:128 reach past the tensor's 64 rows"),
        (slice(0, 65), "rows 0:65 reach past the tensor's 64 rows"),
        ((slice(None), slice(16, 33)), "cols 16:33 reach past the tensor's 32 cols"),
        ((slice(-65, None), slice(None)), "rows -65: reach past the tensor's 64 rows"),
        ((slice(None), slice(-33, -1)), "cols -33:-1 reach past the tensor's 32 cols"),
    ],
)
def test_a_slice_past_the_tensor_is_refused_not_clamped(x, key, said):
    # Python slicing would clamp x[0:128] of 64 rows to 64 rows: a window the kernel did
    # not ask for, read without a word
    with pytest.raises(sim.UserError, match="view of x: ") as e:
        x[key]
    assert said in str(e.value)
