"""A5 vector timing: per-PTO-op curve fits of whole vector functions (timing-model.md §11.1).

On A5 a vector tile op compiles to one or more vector functions; the reference fits their
measured or simulated cost per op with a handful of parameters, keyed by
``(op, src dtype, dst dtype, shape path, VF implementation, tail kind, op params)``:

* ``shape_path`` 1D when the valid region is contiguous (valid cols == cols, or one row;
  tile-scalar ops and TNEG only the former), else 2D;
* 1D: ``inner = ceil(R*C/E)``, ``outer = 1``, ``tail = R*C mod E``;
  2D: ``inner = ceil(C/E)``, ``outer = R``, ``tail = C mod E``; ``loops = outer*inner``;
* ``E`` lanes per 256-byte register (64 for b32, 128 for b16, 256 for b8; TCVT uses the
  wider type's lanes, and the narrower type's in 2D narrowing — ASSUMPTION for "several
  narrowing pairs" the reference does not list);
* default implementation: 1D POST_UPDATE, 2D NO_POST_UPDATE (TCVT 1D NO_POST_UPDATE, 2D
  POST_UPDATE; TSEL 1D NO_POST_UPDATE, 2D DEFAULT);
* ``linear: p0*loops + p1``, ``nested_loop: (p0*inner + p1)*outer + p2``,
  ``linear_rows: p0*loops + p1*outer + p2``, ``linear_tail: p0*loops + p1*tail + p2``.

A high-precision mode (``Shape.extra`` hint ``precision``) selects TRECIP's
``high_precision`` rows; the other division ops add the IEEE routine's extra cycles
(``high_precision_cycles``). ``formula_cycles`` returns None when no fit matches; the caller then
costs the op's vector-function loop with the analytic model of ``sim.timing.vf``, or, for the few
ops without a VF program, lowers it the A2/A3 way.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

from sim.isa.dtypes import dtype as _dtype
from sim.isa.precision import DIVISION_OPS, HIGH
from sim.target.model import read_csv_rows
from sim.timing.hints import hint

__all__ = ["formula_cycles", "high_precision_cycles"]

_KEY = {
    "f32": "fp32",
    "f16": "fp16",
    "bf16": "bf16",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "f8e4m3": "fp8_e4m3",
    "f8e5m2": "fp8_e5m2",
}
_SCALAR_OPS = {"TADDS", "TSUBS", "TMULS", "TDIVS", "TMAXS", "TMINS", "TNEG"}


@functools.lru_cache(maxsize=8)
def _table(path: Path) -> dict:
    table = {}
    for r in read_csv_rows(path):
        key = (
            r["op"],
            r["src_dtype"],
            r["dst_dtype"],
            r["shape_path"],
            r["vf_impl_kind"],
            r["tail_kind"],
            r["op_params"] or "",
        )
        table[key] = (r["formula_kind"], [float(r[f"param{i}"]) for i in range(4)])
    return table


def _lanes(s, src, dst, path: str) -> int:
    if s.opcode != "TCVT":
        return 256 // dst.size_bytes
    wide, narrow = max(src.size_bytes, dst.size_bytes), min(src.size_bytes, dst.size_bytes)
    if path == "2D" and dst.size_bytes < src.size_bytes:
        return 256 // narrow
    return 256 // wide


def _impl(op: str, path: str) -> str:
    if op == "TCVT":
        return "NO_POST_UPDATE" if path == "1D" else "POST_UPDATE"
    if op == "TSEL":
        return "NO_POST_UPDATE" if path == "1D" else "DEFAULT"
    return "POST_UPDATE" if path == "1D" else "NO_POST_UPDATE"


def _params(s, src, dst, path: str, inner: int) -> str:
    if s.opcode == "TCVT":
        return "CAST_RINT_SAT_ON_normal"
    if s.opcode == "TRECIP":
        return HIGH if hint(s, "precision") == HIGH else "default"
    if s.opcode == "TSEL":
        if dst.size_bytes == 4:
            return (
                ("TSel_b32_even" if inner % 2 == 0 else "TSel_b32_odd")
                if path == "1D"
                else "TSel_b32"
            )
        return "TSel_b16_8"
    return ""


def _evaluate(kind: str, p: list, inner: int, outer: int, tail: int) -> float:
    loops = inner * outer
    if kind == "linear":
        return p[0] * loops + p[1]
    if kind == "nested_loop":
        return (p[0] * inner + p[1]) * outer + p[2]
    if kind == "linear_rows":
        return p[0] * loops + p[1] * outer + p[2]
    if kind == "linear_tail":
        return p[0] * loops + p[1] * tail + p[2]
    raise ValueError(f"unknown formula kind {kind!r}")


def _loops(s, src, dst):
    """(path, inner, outer, tail) of the op's vector-function loop (§11.1)."""
    R, C = s.valid_rows, s.valid_cols
    contiguous = C == s.cols if s.opcode in _SCALAR_OPS else (C == s.cols or R == 1)
    path = "1D" if contiguous else "2D"
    E = _lanes(s, src, dst, path)
    if path == "1D":
        return path, math.ceil(R * C / E), 1, (R * C) % E
    return path, math.ceil(C / E), R, C % E


def _fit(table, op, s, src, dst, loops, params) -> float | None:
    path, inner, outer, tail = loops
    src_key = _KEY.get(src.name, src.name)
    dst_key = _KEY.get(dst.name, dst.name) if op == "TCVT" else "none"
    key = (op, src_key, dst_key, path, _impl(op, path), "full" if tail == 0 else "tail", params)
    hit = table.get(key)
    if hit is None:
        return None
    return max(0.0, _evaluate(hit[0], hit[1], inner, outer, tail))


def formula_cycles(s, target) -> float | None:
    """Fitted cycles of the PIPE_V op with shape ``s``, or None when no fit applies."""
    name = target.vector.get("formulas")
    if not name:
        return None
    table = _table((target.path / name).resolve())
    dst = _dtype(s.dtype)
    # only TCVT is keyed by its source type; other ops by their data type (TSEL's first
    # source is its u8 mask)
    src = _dtype(s.src_dtype or s.dtype) if s.opcode == "TCVT" else dst
    loops = _loops(s, src, dst)
    return _fit(table, s.opcode, s, src, dst, loops, _params(s, src, dst, loops[0], loops[1]))


def high_precision_cycles(s, target) -> float:
    """Extra cycles of an op run with its IEEE division routine (``precision`` hint,
    ``sim.isa.precision``): 0 for the default mode, for TRECIP (its own high_precision
    fit) and for ops without a division.

    The reference fits the routine only for TRECIP (1/x): f32 345.2 per loop + 48.7
    against the default's 1.9 + 64.5, f16 168.1 + 40.2 against 3.5 + 68.7. TDIV, TDIVS,
    TREM(S) and TFMOD(S) divide once per element as well, so their high-precision mode
    adds TRECIP's high-precision minus default cycles at the op's own loop counts
    (ASSUMPTION: the routine costs the same whatever the numerator; the default part
    stays the op's own fit or VF model).
    """
    if hint(s, "precision") != HIGH or s.opcode not in DIVISION_OPS or s.opcode == "TRECIP":
        return 0.0
    name = target.vector.get("formulas")
    if not name:
        return 0.0
    table = _table((target.path / name).resolve())
    dt = _dtype(s.dtype)
    loops = _loops(s, dt, dt)
    high = _fit(table, "TRECIP", s, dt, dt, loops, HIGH)
    low = _fit(table, "TRECIP", s, dt, dt, loops, "default")
    return max(0.0, high - low) if high is not None and low is not None else 0.0
