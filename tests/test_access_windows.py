"""The access of a GM view (``sim.engine.access``), kept by the view's window shape and
then by where it starts: whatever was kept before, it is the window's hull, worked out
here from every element the window reaches, and a window of rows of contiguous bytes at
one pitch says so."""

from __future__ import annotations

import types

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.engine.access import GmAccess, _gm_access
from sim.isa.program import GmPtr, PartView

DTYPES = ("f32", "f16", "i8")


def _expected(dtype: str, base: int, sizes, strides, write: bool, name: str):
    isz = np.dtype({"f32": np.float32, "f16": np.float16, "i8": np.int8}[dtype]).itemsize
    offsets = np.array([base], np.int64)
    for n, s in zip(sizes, strides, strict=True):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).reshape(-1)
    start, end = int(offsets.min()) * isz, (int(offsets.max()) + 1) * isz
    dims = [(n, s) for n, s in zip(sizes, strides, strict=True) if n > 1]
    rows = len(dims) == 2 and dims[1][1] == 1 and dims[0][1] >= dims[1][0]
    return start, end, write, f"%{name}", rows, isz


views = st.tuples(
    st.sampled_from(DTYPES),
    st.lists(st.tuples(st.integers(1, 5), st.integers(0, 70)), min_size=1, max_size=3),
    st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(
    shapes=st.lists(views, min_size=1, max_size=4),
    bases=st.lists(st.integers(0, 5000), min_size=1, max_size=12),
)
def test_a_gm_access_is_its_windows_hull_whatever_was_kept(shapes, bases):
    interp = types.SimpleNamespace(views={}, gm_accesses={})
    for i, base in enumerate(bases):  # views move and come back, shapes alternate
        dtype, dims, write = shapes[i % len(shapes)]
        sizes, strides = tuple(n for n, _ in dims), tuple(s for _, s in dims)
        view = PartView(f"v{i % 2}", dtype, sizes)  # one name, several shapes
        interp.views[view.name] = (GmPtr("x", dtype), base, sizes, strides)
        a = _gm_access(interp, view, write)
        start, end, w, name, rows, isz = _expected(dtype, base, sizes, strides, write, view.name)
        assert (a.space, a.start, a.end, a.write, a.name) == ("GM:x", start, end, w, name)
        assert isinstance(a, GmAccess) == rows
        if rows:
            (r, pitch), (c, _) = [(n, s) for n, s in zip(sizes, strides, strict=True) if n > 1]
            assert (a.rows, a.width, a.pitch) == (r, c * isz, pitch * isz)


def test_a_read_and_a_write_of_one_window_and_two_element_types_are_apart():
    interp = types.SimpleNamespace(views={}, gm_accesses={})
    got = []
    for dtype, write in (("f32", False), ("f32", True), ("f16", False), ("f32", False)):
        view = PartView("v", dtype, (4, 8))
        interp.views["v"] = (GmPtr("x", dtype), 16, (4, 8), (32, 1))
        got.append(_gm_access(interp, view, write))
    assert [(a.write, a.start, a.end, a.width) for a in got] == [
        (False, 64, 480, 32),
        (True, 64, 480, 32),
        (False, 32, 240, 16),
        (False, 64, 480, 32),
    ]
    assert got[3] is got[0]  # the same window again: the access kept for it
