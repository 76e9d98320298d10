"""The text of one ``!pto.*`` type -> the type object the IR uses.

``grammar.lark`` keeps a whole ``!pto.kind<...>`` type as one token; this module reads its
parameters with ``types.lark``, once per distinct text (kernels repeat a handful of types
thousands of times, so the result, or the problem, is cached by text):

* ``!pto.tile_buf<...>`` in the key=value form (``loc=vec, dtype=f32, rows=16, ...``) or
  the compact form (``vec, 16x128xf32, ...``) -> ``TileType``;
* ``!pto.multi_tile_buf<..., count=N>`` -> the ``TileType`` of the N buffers stacked back
  to back (``multi_tile_parts`` gives the element type and N);
* ``!pto.ptr<T>`` -> ``PtrType``; ``!pto.tensor_view`` / ``!pto.partition_tensor_view``
  ``<d0 x ... x T>`` -> ``ViewType``;
* ``memref<RxCxT, #pto.address_space<LOC>>`` of memref-era kernels -> the on-chip tile it
  names (``memref_tile``).

A mistake raises ``TypeProblem`` with the offset inside the type text; the lowering in
``sim.frontend.lower_values`` turns it into a ``ParseError`` at the token.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from lark import Lark, Token
from lark.exceptions import UnexpectedInput

from sim.base.errors import UserError
from sim.frontend.lark_cache import cached_lark
from sim.frontend.syntax import PtrType, ViewType
from sim.isa.dtypes import dtype as _dtype
from sim.isa.tile import BLayout, TileType

__all__ = [
    "TypeProblem",
    "parse_pto_type",
    "multi_tile_parts",
    "memref_tile",
    "memref_gm",
    "shorten",
]

_HERE = Path(__file__).parent


@functools.cache
def _type_parser() -> Lark:
    return cached_lark(_HERE / "types.lark", parser="lalr", lexer="contextual")


class TypeProblem(Exception):
    """A type text that is not a supported type; ``offset`` locates the mistake in it."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.message, self.offset = message, offset


_TYPE_CACHE: dict[str, object] = {}
_TB_KEYS = (
    "loc",
    "dtype",
    "rows",
    "cols",
    "v_row",
    "v_col",
    "valid",
    "blayout",
    "slayout",
    "fractal",
    "pad",
    "compact",
)
_LEVEL1 = {
    "!pto.tile": "level-1 tile values (!pto.tile) are not used by real kernels; "
    "write tile buffers (!pto.tile_buf)"
}


# Element type spellings the census shows beyond the IR names sim.isa.dtypes knows:
# `f8E4M3` (24 kv-form tile_bufs) names the same 8-bit e4m3 format the hardware has.
_ELEM_ALIASES = {"f8E4M3": "f8E4M3FN"}


# Why an element type real kernels use is not simulated, where the reference says.
_ELEM_REFUSED = {
    "!pto.f8E8M0": "E8M0 holds the shared exponents of MX quantisation (TQUANT MX, A5), "
    "which is not modelled (instructions-more.md §3.1)",
}


def _elem_dtype(tok: Token):
    text = str(tok)
    try:
        return _dtype(_ELEM_ALIASES.get(text, text))
    except UserError as e:
        why = _ELEM_REFUSED.get(text) or f"the simulator has no values of it ({e})"
        raise TypeProblem(f"unsupported element type '{text}': {why}", tok.start_pos or 0) from None


def _dims(shape_tok: Token) -> tuple:
    return tuple(None if d == "?" else int(d) for d in str(shape_tok).split("x")[:-1])


def _int_value(tok, key: str) -> int:
    if not isinstance(tok, Token) or tok.type != "INT":
        raise TypeProblem(f"tile_buf key '{key}': expected an integer, found '{tok}'", _pos(tok))
    return int(tok)


def _pos(x) -> int:
    """Offset of a types.lark token inside the type text (0 for a subtree)."""
    return (x.start_pos or 0) if isinstance(x, Token) else 0


def _tile_buf(params: list) -> TileType:
    first = params[0] if params else None
    kv: dict[str, Any] = {}  # key -> its value (str, int, None for "?", BLayout ...)
    kv_tok: dict[str, Token] = {}
    rest = params
    if first is not None and not (hasattr(first, "data") and first.data == "key_value"):
        # compact form: LOC, RxCxT, key=value...
        if (
            not (isinstance(first, Token) and first.type == "NAME")
            or len(params) < 2
            or not (hasattr(params[1], "data") and params[1].data == "shaped")
        ):
            raise TypeProblem(
                "tile_buf: expected 'loc=...' (key=value form) or 'LOC, RxCxT' (compact form)",
                _pos(first),
            )
        shape_tok, elem = params[1].children
        dims = _dims(shape_tok)
        if len(dims) != 2 or None in dims:
            raise TypeProblem(
                f"tile_buf: the capacity must be two static dims RxC, found '{shape_tok}'",
                shape_tok.start_pos,
            )
        kv.update(loc=str(first), rows=dims[0], cols=dims[1], dtype=_elem_dtype(elem))
        kv_tok.update(loc=first, rows=shape_tok, cols=shape_tok, dtype=elem)
        rest = params[2:]
    for p in rest:
        if not (hasattr(p, "data") and p.data == "key_value"):
            at = p.children[0] if hasattr(p, "children") else p
            raise TypeProblem("tile_buf: expected key=value", _pos(at))
        key_tok, val = p.children
        key = str(key_tok)
        if key not in _TB_KEYS:
            raise TypeProblem(
                f"unknown tile_buf key '{key}'; expected one of: {', '.join(_TB_KEYS)}",
                key_tok.start_pos,
            )
        if (
            key in kv_tok
            or (key == "valid" and ("v_row" in kv_tok or "v_col" in kv_tok))
            or (key in ("v_row", "v_col") and "valid" in kv_tok)
        ):
            raise TypeProblem(f"tile_buf key '{key}' given twice", key_tok.start_pos)
        kv_tok[key] = key_tok
        if key == "dtype":
            kv[key] = _elem_dtype(val)
        elif key in ("rows", "cols", "fractal", "pad", "compact"):
            kv[key] = _int_value(val, key)
        elif key in ("v_row", "v_col"):
            kv[key] = None if str(val) == "?" else _int_value(val, key)
        elif key == "valid":
            if not (isinstance(val, Token) and val.type == "DIMS") or str(val).count("x") != 1:
                raise TypeProblem(
                    f"tile_buf key 'valid': expected RxC (each an integer or ?), found '{val}'",
                    _pos(val),
                )
            vr, vc = str(val).split("x")
            kv["v_row"] = None if vr == "?" else int(vr)
            kv["v_col"] = None if vc == "?" else int(vc)
        else:
            kv[key] = str(val)
    for key in ("loc", "dtype", "rows", "cols"):
        if key not in kv:
            raise TypeProblem(f"tile_buf: missing key '{key}'", 0)
    loc = "vec" if kv["loc"] == "ub" else kv["loc"]
    args = dict(
        loc=loc,
        dtype=kv["dtype"],
        rows=kv["rows"],
        cols=kv["cols"],
        valid_rows=kv.get("v_row", kv["rows"]),
        valid_cols=kv.get("v_col", kv["cols"]),
    )
    for key in ("blayout", "slayout", "fractal", "pad", "compact"):
        if key in kv:
            args[key] = kv[key]
    try:
        return TileType(**args)
    except UserError as e:
        raise TypeProblem(f"invalid tile_buf: {e}", 0) from None
    except (ValueError, TypeError) as e:
        raise TypeProblem(f"invalid tile_buf: {e}", 0) from None


def parse_pto_type(text: str):
    """Type object of one PTO_TYPE token's text, or raise TypeProblem(offset)."""
    hit = _TYPE_CACHE.get(text)
    if hit is not None:
        if isinstance(hit, TypeProblem):
            raise hit
        return hit
    try:
        result = _build_pto_type(text)
    except TypeProblem as e:
        result = e
    if len(_TYPE_CACHE) > 50000:
        _TYPE_CACHE.clear()
    _TYPE_CACHE[text] = result
    if isinstance(result, TypeProblem):
        raise result
    return result


_KNOWN_KINDS = (
    "!pto.ptr",
    "!pto.tensor_view",
    "!pto.partition_tensor_view",
    "!pto.tile_buf",
    "!pto.multi_tile_buf",
)
_COUNT = re.compile(r",\s*count\s*=\s*(\d+)\s*>\s*$")


def multi_tile_parts(text: str) -> tuple[TileType, int]:
    """(element tile type, count) of ``!pto.multi_tile_buf<LOC, RxCxT[, keys], count=N>`` or
    ``!pto.multi_tile_buf<!pto.tile_buf<...>, count=N>``."""
    m = _COUNT.search(text)
    inner = text[text.index("<") + 1 : m.start()].strip() if m else ""
    if not m or int(m.group(1)) <= 0 or not inner:
        raise TypeProblem(
            "!pto.multi_tile_buf: expected <tile_buf parameters, count=N> with N > 0", 0
        )
    elem = parse_pto_type(inner if inner.startswith("!pto.tile_buf") else f"!pto.tile_buf<{inner}>")
    return elem, int(m.group(1))


def _stacked(elem: TileType, count: int) -> TileType:
    """The tile the ``count`` buffers of a multi-tile occupy back to back: stacked rows
    (row-major) or columns (column-major), each element tile one contiguous block."""
    rows, cols = elem.rows, elem.cols
    if elem.blayout is BLayout.COL_MAJOR:
        cols *= count
    else:
        rows *= count
    try:
        return TileType(
            elem.loc,
            elem.dtype,
            rows,
            cols,
            blayout=elem.blayout,
            slayout=elem.slayout,
            fractal=elem.fractal,
            pad=elem.pad,
            compact=elem.compact,
        )
    except UserError as e:
        raise TypeProblem(f"!pto.multi_tile_buf: {e}", 0) from None


_KIND = re.compile(r"!pto\.[A-Za-z_][\w.]*")


def _build_pto_type(text: str):
    m = _KIND.match(text)
    if m is None:  # the caller hands over text that starts with "!pto."
        raise TypeProblem(f"unsupported type '{shorten(text)}'", 0)
    kind = m.group()
    if kind not in _KNOWN_KINDS:
        why = _LEVEL1.get(kind, "")
        raise TypeProblem(f"unsupported type '{shorten(text)}'" + (f": {why}" if why else ""), 0)
    if kind == "!pto.multi_tile_buf":  # a nested type: not for types.lark
        return _stacked(*multi_tile_parts(text))
    try:
        # the tree's shape is types.lark's (its children Tokens or Trees by rule): Any
        tree: Any = _type_parser().parse(text)
    except UnexpectedInput as e:
        if kind == "!pto.tile_buf" and re.match(r"!pto\.tile_buf<\s*[\d?]+x", text):
            raise TypeProblem(
                f"unsupported type '{shorten(text)}': the obsolete memref-like "
                f"tile_buf; write the key=value or the compact form",
                0,
            ) from None
        pos = getattr(e, "pos_in_stream", None)
        if pos is None:
            tok = getattr(e, "token", None)
            pos = getattr(tok, "start_pos", None) or len(text) - 1
        raise TypeProblem(f"malformed type '{shorten(text)}'", pos) from None
    params = tree.children[1].children if len(tree.children) > 1 else []
    if kind == "!pto.ptr":
        if not params or len(params) > 2 or not all(isinstance(p, Token) for p in params):
            raise TypeProblem("!pto.ptr: expected <T> or <T, space>", 0)
        return PtrType(_elem_dtype(params[0]), str(params[1]) if len(params) > 1 else None)
    if kind in ("!pto.tensor_view", "!pto.partition_tensor_view"):
        if len(params) != 1 or not (hasattr(params[0], "data") and params[0].data == "shaped"):
            raise TypeProblem(f"{kind}: expected <d0 x d1 x ... x T>", 0)
        shape_tok, elem = params[0].children
        return ViewType(kind[5:], _elem_dtype(elem), _dims(shape_tok))
    return _tile_buf(params)


# memref-era kernels: an on-chip buffer as `memref<RxCxT, #pto.address_space<LOC>>`
_MEMREF = re.compile(r"memref<\s*(\d+)x(\d+)x([\w!.]+)\s*,\s*#pto\.address_space<(\w+)>\s*>")
_MEMREF_LOC = {
    "vec": "vec",
    "ub": "vec",
    "mat": "mat",
    "l1": "mat",
    "left": "left",
    "l0a": "left",
    "right": "right",
    "l0b": "right",
    "acc": "acc",
    "l0c": "acc",
    "bias": "bias",
    "bt": "bias",
    "scaling": "scaling",
    "fb": "scaling",
}


def memref_tile(text: str) -> TileType | None:
    """The tile a static 2-D on-chip memref names (row-major, full valid region); None for
    any other builtin type (a GM memref, dynamic dims, vectors, tensors)."""
    m = _MEMREF.fullmatch(" ".join(text.split()))
    if m is None or m.group(4) not in _MEMREF_LOC:
        return None
    try:
        return TileType(
            _MEMREF_LOC[m.group(4)],
            _dtype(_ELEM_ALIASES.get(m.group(3), m.group(3))),
            int(m.group(1)),
            int(m.group(2)),
        )
    except UserError:
        return None


def shorten(text: str, n: int = 60) -> str:
    """``text`` on one line, cut to ``n`` characters, for a message."""
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


# obsolete kernel arguments: a GM tensor as `memref<D0x...xT[, strided<[S...], offset: O>],
# #pto.address_space<gm>>` (instructions-more.md §3.10)
_MEMREF_GM = re.compile(
    r"memref<\s*((?:\d+x)+)([\w!.]+)\s*"
    r"(?:,\s*strided<\s*\[([\d,\s]*)\]\s*(?:,\s*offset\s*:\s*(\d+))?\s*>\s*)?"
    r",\s*#pto\.address_space<gm>\s*>"
)


def memref_gm(text: str) -> tuple[Any, tuple, tuple] | None:
    """(element type, shape, strides) of a static GM memref (dense row-major unless a
    ``strided`` layout gives the strides; offset 0 only); None for any other type."""
    m = _MEMREF_GM.fullmatch(" ".join(text.split()))
    if m is None or (m.group(4) not in (None, "0")):
        return None
    shape = tuple(int(d) for d in m.group(1).split("x") if d)
    try:
        dt = _dtype(_ELEM_ALIASES.get(m.group(2), m.group(2)))
    except UserError:
        return None
    if m.group(3) is not None:
        strides = tuple(int(x) for x in m.group(3).split(",") if x.strip())
        if len(strides) != len(shape):
            return None
    else:
        strides = tuple(int(_prod(shape[i + 1 :])) for i in range(len(shape)))
    return dt, shape, strides


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n
