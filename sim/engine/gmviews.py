"""How a unit sees global memory: GM arguments, tensor views and their windows.

A GM pointer argument is a flat numpy array shared by every unit of the chip. It is filled
from ``--input`` when given; otherwise it takes address space only (``np.zeros``) and each
64 Ki-element page a window touches is filled with seeded random data then, so a kernel
declaring a huge tensor and reading a small window of it costs the window. Views
(``make_tensor_view``, ``partition_view``) are (pointer, base, sizes, strides) tuples, and
a window is a strided numpy view of the array. A run-time index out of range is reported
through ``data_error``, which tells a bad kernel from indices read from random data.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.base.errors import SimulationError, UserError
from sim.engine.plausible import PLAUSIBLE_KEY
from sim.isa.dtypes import DType
from sim.isa.program import GmPtr, MakeTensorView, PartitionView, PartView, Scalar, TensorView
from sim.placement.bounds import span_message

if TYPE_CHECKING:
    from sim.engine.units import UnitSpec
    from sim.isa.program import Function

__all__ = ["GlobalViews"]

_PAGE = 1 << 16  # elements per lazily filled page of a GM argument without an input


def _zeros(name: str, n: int, dt: DType) -> np.ndarray:
    """Lazily backed zeros for GM argument ``name`` (pages come when written)."""
    try:
        return np.zeros(n, dt.np_type)
    except (MemoryError, ValueError):  # ValueError: more elements than numpy indexes
        raise SimulationError(
            f"GM argument %{name}: the window it touches is too large to "
            f"simulate functionally ({n} {dt} elements exceed the address "
            f"space this machine grants); use smaller sizes or "
            f"--timing-only"
        ) from None


def _dtype_of(arr: np.ndarray) -> DType:
    from sim.isa.dtypes import DTYPES

    return next(d for d in DTYPES.values() if d.np_type == arr.dtype)


def _random(dt: DType, n: int, rng) -> np.ndarray:
    if dt.is_float:
        return rng.uniform(-8.0, 8.0, n).astype(dt.np_type)
    if dt.is_signed:
        return rng.integers(-100, 100, n).astype(dt.np_type)
    return rng.integers(0, 200, n).astype(dt.np_type)


def _check_float_value(a: Scalar, value) -> None:
    """A finite value given for a float scalar argument that its type cannot hold (1e40
    for an f32) is refused, as an integer out of range is: it would run as an infinity."""
    kind = _FLOAT_KINDS.get(a.type)
    if kind is None or type(value) not in (int, float) or not np.isfinite(value):
        return
    with np.errstate(over="ignore"):
        if np.isinf(np.asarray(value, dtype=kind())):
            raise UserError(
                f"inputs: scalar argument %{a.name} ({a.type}) = {value!r} is out of range "
                f"for {a.type} (it would run as an infinity; pass inf for one)"
            )


def _bf16():
    import ml_dtypes

    return ml_dtypes.bfloat16


_FLOAT_KINDS: dict[str, Callable[[], Any]] = {
    "f16": lambda: np.float16,
    "f32": lambda: np.float32,
    "bf16": _bf16,
}


class GlobalViews:
    """Mixin of ``Interpreter``: binds the kernel's arguments and resolves GM views."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    spec: UnitSpec
    fn: Function
    functional: bool
    seed: int
    inputs: dict[str, Any]
    gm: dict[str, np.ndarray]
    values: dict[str, Any]
    views: dict[str, tuple]
    warnings: dict[str, None]
    _filled: dict
    _gm_dtypes: dict
    _scalar_reads: set[str]
    _view_layouts: dict[str, str]
    scalar: Callable[[Any], Any]
    _bind: Callable[[Any, Any], None]

    def _bind_args(self) -> None:
        launch = self._launch_args()
        missing = [
            a
            for a in self.fn.args
            if isinstance(a, Scalar) and a.name not in self.inputs and a.name not in launch
        ]
        if missing:
            names = ", ".join(f"%{a.name} ({a.type})" for a in missing)
            flags = " ".join(f"--arg {a.name}=VALUE" for a in missing)
            raise UserError(
                f"kernel @{self.fn.name}: scalar argument{'s' * (len(missing) > 1)} "
                f"{names} {'have' if len(missing) > 1 else 'has'} no value; pass "
                f"{flags}"
            )
        for a in self.fn.args:
            if isinstance(a, Scalar):
                value = self.inputs[a.name] if a.name in self.inputs else launch[a.name]
                _check_float_value(a, value)
                self._bind(a, value)
            elif isinstance(a, (TensorView, PartView)):
                self._bind_view_arg(a)

    def _launch_args(self) -> dict:
        """pypto kernels take the launch's indices as trailing arguments
        (``%__pypto_spmd_block_idx``, ``_block_num``, ``_subblock_idx``, ``_subblock_num``:
        pto-ir-in-the-wild.md): the launch binds them, per unit, as ``get_block_idx`` ...
        answer; a value given by name (``--arg``) is kept."""
        sp = self.spec
        return {
            "__pypto_spmd_block_idx": sp.block_idx,
            "__pypto_spmd_block_num": sp.block_num,
            "__pypto_spmd_subblock_idx": sp.subblock_idx,
            "__pypto_spmd_subblock_num": sp.subblock_num,
        }

    def _bind_view_arg(self, a) -> None:
        """A kernel argument typed as a GM view is a dense row-major tensor of its static
        shape in a GM array of the argument's name (``--input NAME=...`` fills it)."""
        if None in a.shape:
            dims = "x".join("?" if d is None else str(d) for d in a.shape)
            raise UserError(
                f"kernel @{self.fn.name}: argument %{a.name} is a {dims} GM view "
                f"with dynamic dims, which a run cannot size; give the kernel a "
                f"!pto.ptr argument and a make_tensor_view"
            )
        strides = [1] * len(a.shape)
        for d in range(len(a.shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * a.shape[d + 1]
        self._gm_dtypes.setdefault(a.name, a.dtype)
        self.views[a.name] = (GmPtr(a.name, a.dtype), 0, tuple(a.shape), tuple(strides))

    def _gm_array(self, ptr: GmPtr, min_elems: int) -> np.ndarray:
        """The flat GM array behind ``ptr``, at least ``min_elems`` long.

        An argument without ``--input`` gets memory lazily: ``np.zeros`` takes address
        space, not pages, and only the pages a view or scalar access touches are filled
        (``_touch``), so a kernel declaring a huge tensor and reading a small window of it
        costs the window."""
        # a pointer parameter of a called function names its caller's array
        key = self.values.get(ptr.name, ptr.name)
        if key != ptr.name:
            ptr = GmPtr(key, ptr.dtype)
        arr = self.gm.get(ptr.name)
        if arr is None:
            given = self.inputs.get(ptr.name)
            if given is not None:
                arr = np.ascontiguousarray(given).reshape(-1)
                if arr.dtype != ptr.dtype.np_type:
                    raise UserError(
                        f"input {ptr.name}: element type {arr.dtype} does not match "
                        f"the kernel argument type {ptr.dtype}"
                    )
                arr = arr.copy()
            else:
                arr = _zeros(ptr.name, min_elems, ptr.dtype)
                self._filled[ptr.name] = np.zeros(-(-min_elems // _PAGE), bool)
            self.gm[ptr.name] = arr
        if arr.size < min_elems:
            if ptr.name in self.inputs:
                raise UserError(
                    f"input {ptr.name}: has {arr.size} elements, the views of the "
                    f"kernel reach element {min_elems - 1}"
                )
            grown = _zeros(ptr.name, min_elems, ptr.dtype)
            filled = self._filled[ptr.name]
            for p in np.flatnonzero(filled).tolist():  # copy only pages holding data
                a, b = p * _PAGE, min((p + 1) * _PAGE, arr.size)
                grown[a:b] = arr[a:b]
            self.gm[ptr.name] = arr = grown
            self._filled[ptr.name] = np.concatenate(
                [filled, np.zeros(-(-min_elems // _PAGE) - filled.size, bool)]
            )
        return arr

    def _touch(self, name: str, arr: np.ndarray, lo: int, hi: int) -> None:
        """Fill the not yet touched pages of GM elements [lo, hi) of an argument without an
        input with seeded random data; each page's data depends only on the seed, the
        argument and the page, so the order of accesses never changes it."""
        filled = self._filled.get(name)
        if filled is None:
            return
        p0, p1 = lo // _PAGE, -(-hi // _PAGE)
        todo = np.flatnonzero(~filled[p0:p1])
        if not todo.size:
            return
        dt = self._gm_dtypes.get(name) or _dtype_of(arr)
        # --inputs plausible (sim.engine.plausible): index-like integers inside their range
        bound = self.inputs.get(PLAUSIBLE_KEY, {}).get(name) if dt.is_int else None
        for p in (p0 + todo).tolist():
            rng = np.random.default_rng([self.seed, zlib.crc32(name.encode()), p])
            a, b = p * _PAGE, min((p + 1) * _PAGE, arr.size)
            if bound is not None:
                arr[a:b] = rng.integers(0, bound, b - a).astype(dt.np_type)
            else:
                arr[a:b] = _random(dt, b - a, rng)
        filled[p0:p1] = True

    def data_error(self, message: str, values: bool = False) -> None:
        """A run-time value is out of range. When the kernel has read GM data nobody gave
        (seeded random fill), the value may come from it: a timing-only run records a
        warning and goes on (ASSUMPTION: the caller keeps the value, which only the
        functional units would dereference), a functional run names the ``--input`` to give.
        Otherwise the kernel itself is wrong: raise. An index or a size comes from
        integer data or from a scalar the kernel loaded (``load_scalar``); ``values``: an
        element value a functional unit found out of range (``ValueOutOfRange``: a gather
        index, a shift count, an integer divisor), from integer data too."""
        random = [
            n
            for n, filled in self._filled.items()
            if filled.any()
            and (
                n in self._scalar_reads
                or not self._gm_dtypes.get(n, _dtype_of(self.gm[n])).is_float
            )
        ]
        if not random:
            raise SimulationError(message)
        alt = (
            ""
            if PLAUSIBLE_KEY in self.inputs
            else ", draw index-like ones inside the ranges the kernel uses with --inputs plausible"
        )
        if values:
            flags = " ".join(f"--input {n}=FILE.npy" for n in random)
            raise SimulationError(
                f"{message}; the inputs drive it: the values come from GM "
                f"arguments filled with seeded random data "
                f"({', '.join('%' + n for n in random)}): give real ones with "
                f"{flags}{alt}, or run with --timing-only"
            )
        if not self.functional and self._scalar_reads:
            self.warnings.setdefault(
                f"{message}; the timing-only run goes on (the value depends on seeded random "
                f"data read from {', '.join('%' + n for n in sorted(self._scalar_reads))})",
                None,
            )
            return
        flags = " ".join(f"--input {n}=FILE.npy" for n in random)
        raise SimulationError(
            f"{message}; the inputs drive it: the kernel reads indices from "
            f"GM arguments filled with seeded random data "
            f"({', '.join('%' + n for n in random)}): give real ones with "
            f"{flags}{alt}, or run with --timing-only"
        )

    _ptr_offsets: dict[str, int]  # pointer name -> element offset (pto.addptr)

    def _make_view(self, st: MakeTensorView) -> None:
        shape = [int(self.scalar(x)) for x in st.shape]
        start = self._ptr_offsets.get(st.ptr.name, 0)  # a pto.addptr result's offset
        strides = [int(self.scalar(x)) for x in st.strides]
        key = self.values.get(st.ptr.name, st.ptr.name)
        self._gm_dtypes.setdefault(key, st.ptr.dtype)
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0)
        if span * st.ptr.dtype.size_bytes >= 2**63:
            where = f"make_tensor_view %{st.result.name}" + (f" ({st.loc})" if st.loc else "")
            raise SimulationError(span_message(where, shape, strides, span, st.ptr.dtype))
        # The array spans the whole tensor (outputs have its size) but takes pages only
        # where a window is touched; a tensor larger than the address space the OS grants
        # grows with the windows instead.
        if all(n > 0 for n in shape) and all(s >= 0 for s in strides):
            try:
                self._gm_array(
                    st.ptr,
                    start + 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)),
                )
            except SimulationError:
                pass
        self.views[st.result.name] = (
            GmPtr(key, st.ptr.dtype),
            start,
            tuple(shape),
            tuple(strides),
        )
        self._view_layouts[st.result.name] = st.layout

    def _partition(self, st: PartitionView) -> None:
        ptr, base, shape, strides = self.views[st.source.name]
        offs = [int(self.scalar(x)) for x in st.offsets]
        sizes = [int(self.scalar(x)) for x in st.sizes]
        for d, (o, n, cap) in enumerate(zip(offs, sizes, shape, strict=True)):
            if o < 0 or n <= 0 or o + n > cap:
                where = f"partition_view %{st.result.name}" + (f" ({st.loc})" if st.loc else "")
                self.data_error(
                    f"{where}: dim {d} window [{o}, {o + n}) is outside the tensor extent {cap}"
                )
                break
        base += sum(o * s for o, s in zip(offs, strides, strict=True))
        self.views[st.result.name] = (ptr, base, tuple(sizes), strides)
        self._view_layouts[st.result.name] = self._view_layouts.get(st.source.name, "nd")

    def _gm_window(self, view: PartView, where: str) -> np.ndarray:
        """The N-D strided numpy view of a partition view's GM window (its pages filled)."""
        try:
            ptr, base, sizes, strides = self.views[view.name]
        except KeyError:
            raise UserError(f"{where}: view %{view.name} is used before it is defined") from None
        if base < 0 or any(s < 0 for s in strides):
            raise SimulationError(
                f"{where}: view %{view.name} starts at element {base} with "
                f"strides {list(strides)}; expected a non-negative start "
                f"and strides"
            )
        last = base + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
        arr = self._gm_array(ptr, last + 1)
        self._touch(ptr.name, arr, base, last + 1)
        isz = arr.itemsize
        return np.lib.stride_tricks.as_strided(arr[base:], sizes, [s * isz for s in strides])

    def _gm_table(self, view: PartView, where: str) -> np.ndarray:
        """The flat GM elements a view reaches, from its first to its last (MGATHER)."""
        window = self._gm_window(view, where)
        ptr, base, sizes, strides = self.views[view.name]
        last = base + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True))
        return self.gm[ptr.name][base : last + 1] if window.size else window.reshape(-1)
