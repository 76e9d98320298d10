"""PTO IR text (``.pto``) -> the program IR of ``sim.isa.program``.

Two stages:

1. ``grammar.lark`` (LALR, contextual lexer) turns the text into light tuples: the
   ``_Shapes`` transformer runs inside the parser, so no parse tree is built. Each
   ``!pto.kind<...>`` type is one token whose parameters ``types.lark`` parses, once per
   distinct text.
2. ``_Lowering`` walks the tuples with a scope of SSA names and builds the IR nodes:
   every use of ``%x`` resolves to the one value object its definition created (the
   same ``Tile`` object for every use of a tile), and every typed use is checked against
   the value's type (``ins(%a : T)`` with ``%a`` not of type ``T`` is a type mismatch).

Every mistake is a ``ParseError`` located at the token it concerns.
"""

from __future__ import annotations

import functools
import gc
import re

import attrs as _attrs
from pathlib import Path

from lark import Lark, Token, Transformer
from lark.lexer import Lexer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from sim.base.errors import UserError
from sim.frontend.diagnostics import ParseError, remember_source
from sim.frontend.targets import target_from_attrs
from sim.frontend.syntax import (ENDPOINT_PIPE, ENUM_ATTR_KINDS, SYNC_PIPES, PtrType,
                                 ViewType, float_from_bits, format_dtype, format_type,
                                 is_float_type, is_int_type, is_scalar_type, make_value,
                                 value_type)
from sim.isa.dtypes import dtype as _dtype
from sim.isa.opcodes import OPCODES, PIPES
from sim.isa.program import (Alloc, Arith, Barrier, Call, Const, For, Function, GmPtr, If,
                             Instr, MakeTensorView, PartitionView, PartView, PipeOp, Program,
                             RawAttr, Reshape, Return, Scalar, ScalarOp, Section, SetFfts,
                             SetFlag, SetValidShape, SourceLoc, Subview, SyncAll, SyncSet,
                             SyncWait, TensorView, WaitFlag, Yield, FFTS_MODES, SYNCALL_CORE_TYPES,
                             SYNCALL_MODES)
from sim.isa.tile import BLayout, Loc, Tile, TileType

__all__ = ["parse_text", "parse_file", "SUPPORTED_ARITH"]

_HERE = Path(__file__).parent

# Regions (scf.for / scf.if bodies, sections) nest at most this deep. Every pass over the
# program (this builder, the verifier, the interpreter, the printer) walks regions
# recursively; real kernels nest a handful deep, and this bound keeps every pass well
# inside Python's recursion limit.
MAX_NESTING = 64


# --- stage 1: text -> tuples ---------------------------------------------------------------

class _Shapes(Transformer):
    """Callbacks of grammar.lark: each rule becomes a tagged tuple (tokens keep positions)."""

    def start(self, c):
        return ("start", c)

    def alias_def(self, c):
        return ("alias", c[0], c[1])

    def attr_alias_def(self, c):
        return ("attr_alias", c[0], c[1])

    def module(self, c):
        attrs = next((x for x in c if isinstance(x, tuple) and x[0] == "dict"), None)
        funcs = [x for x in c if isinstance(x, tuple) and x[0] == "func"]
        return ("module", c[0], attrs, funcs)

    def module_attrs(self, c):
        return c[1]

    def func(self, c):
        return ("func", c)

    def visibility(self, c):
        return ("vis", c[0])

    def func_args(self, c):
        return ("args", c)

    def named_arg(self, c):
        return (c[0], c[1])

    def anon_arg(self, c):
        return (None, c[0])

    def func_results(self, c):
        return ("fres", c[1][1])

    def func_attrs(self, c):
        return c[1]

    def region(self, c):
        return ("region", c[0], c[1:-1], c[-1])

    def results(self, c):
        return ("results", c)

    def result(self, c):
        return (c[0], c[1] if len(c) > 1 else None)     # %r or (%r, INT token of %r:N)

    def operands(self, c):
        return ("ops", c)

    def literal(self, c):
        return ("lit", c[0])

    def type_list(self, c):
        return ("types", c)

    def type_or_list(self, c):
        if isinstance(c[0], Token) and c[0].type == "LPAR":
            return ("types", c[1][1] if len(c) > 1 else [])
        return ("types", [c[0]])

    def dps_ins(self, c):
        return ("ins", c)

    def dps_outs(self, c):
        return ("outs", c)

    def dps_outs_types(self, c):
        return ("outs", c)

    def dps_ret(self, c):
        return ("ret", c[1])

    def simple_args(self, c):
        return ("sargs", c)

    def simple_flag(self, c):
        return ("flag", c)

    def simple_sig(self, c):
        return ("sig", c)

    def iter_args(self, c):
        return ("iter", c[1:-2], c[-1])

    def iter_arg(self, c):
        return (c[0], c[1])

    def for_type(self, c):
        return ("fortype", c[0])

    def if_types(self, c):
        return ("iftypes", c[1])

    def else_region(self, c):
        return ("else", c[1])

    def alloc_kv(self, c):
        return ("kv", c[0], c[1])

    def subview_valid(self, c):
        return ("valid", c[0], c[1] if len(c) > 1 else ("ops", []))

    def sync_elem(self, c):
        return ("sync", c[0])

    def sync_angle(self, c):
        return ("sync", c[0])

    def syncall_kv(self, c):
        return ("kv", c[0], c[1])

    def pipe_paren(self, c):
        return ("paren", c[0][1] if c else [])

    def pipe_args(self, c):
        return ("pargs", c)

    def pipe_arg(self, c):
        if isinstance(c[0], Token) and c[0].type == "NAME":
            return (c[0], c[1], c[2] if len(c) > 2 else None)
        return (None, c[0], c[1] if len(c) > 1 else None)

    def pipe_ret(self, c):
        return ("ret", c[1])

    def attr_dict(self, c):
        return ("dict", c[0], c[1:-1], c[-1])

    def attr_entry(self, c):
        return (c[0], c[1] if len(c) > 1 else None)

    def attr_value(self, c):
        # ("aval", payload, start, end); payload: token | ("lit", tok) | array | dict
        first, last = c[0], c[-1]
        return ("aval", c, _start(first), _end(last))

    def attr_array(self, c):
        return ("array", c[1:-1], c[0].start_pos, c[-1].end_pos)


def _statement_callback(kind: str):
    """``<kind>_stmt`` rules become ("kind", first token, children)."""
    def cb(self, c):
        first = c[0]
        if isinstance(first, tuple):            # results: the first result's token
            first = first[1][0][0]
        return (kind, first, c)
    cb.__name__ = f"{kind}_stmt"
    return cb


for _kind in ("dps", "simple", "for", "if", "yield", "call", "return", "alloc", "multi_get",
              "memref_alloc",
              "mtv", "pv",
              "subview", "reshape", "setvalid", "load_scalar", "store_scalar", "getter", "tvdim",
              "section", "flag",
              "barrier", "barrier_sync", "ffts", "set_ffts", "syncall", "pipe"):
    setattr(_Shapes, f"{_kind}_stmt", _statement_callback(_kind))


def _start(x) -> int:
    if isinstance(x, Token):
        return x.start_pos
    if x[0] == "lit":
        return x[1].start_pos
    if x[0] == "dict":
        return x[1].start_pos
    return x[2]


def _end(x) -> int:
    if isinstance(x, Token):
        return x.end_pos
    if x[0] == "lit":
        return x[1].end_pos
    if x[0] == "dict":
        return x[3].end_pos
    return x[3]


class _PtoLexer(Lexer):
    """The tokenizer of grammar.lark: lark's contextual lexer, made cheaper per token.

    The terminals are the grammar's own. One compiled scanner tries them in lark's order
    (priority, then width); runs of whitespace and comments are skipped in one match. A
    name that spells a keyword (``ins``, ``scf.for``, ``pto.set_flag`` ...) becomes that
    keyword only where the parser's current state accepts it, as with lark's contextual
    lexer, so ``to`` or ``valid`` can still be ordinary names elsewhere.
    """

    __future_interface__ = 2

    def __init__(self, conf):
        ident = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)*")
        self.keywords = {t.pattern.value: t.name for t in conf.terminals
                         if t.pattern.type == "str" and ident.fullmatch(t.pattern.value)}
        kw_names = set(self.keywords.values())
        ignore = [t for t in conf.terminals if t.name in conf.ignore]
        rest = [t for t in conf.terminals if t.name not in conf.ignore and t.name not in kw_names]
        rest.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
        skip = "(?:" + "|".join(t.pattern.to_regexp() for t in ignore) + ")+"
        groups = [f"(?P<_SKIP>{skip})"] + [f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in rest]
        self.scan = re.compile("|".join(groups)).match
        self.names = {t.name for t in conf.terminals}

    def lex(self, state, parser_state):
        ts = state.text
        if isinstance(ts, str):                 # lark < 1.2 hands over the plain text
            text, pos, end = ts, 0, len(ts)
        else:
            text, pos, end = ts.text, ts.start, ts.end
        scan, keywords = self.scan, self.keywords
        states = parser_state.parse_conf.states
        line, line_start = state.line_ctr.line, state.line_ctr.line_start_pos
        while pos < end:
            m = scan(text, pos, end)
            if m is None:
                raise UnexpectedCharacters(text, pos, line, pos - line_start + 1,
                                           state=parser_state, terminals_by_name=None)
            kind = m.lastgroup
            start, pos = pos, m.end()
            value = m.group()
            nl = value.count("\n")
            if kind == "_SKIP":
                if nl:
                    line += nl
                    line_start = start + value.rindex("\n") + 1
                continue
            if kind == "NAME" or kind == "OPNAME":
                kw = keywords.get(value)
                if kw is not None and kw in states[parser_state.position]:
                    kind = kw
            tok_line, col = line, start - line_start + 1
            if nl:
                line += nl
                line_start = start + value.rindex("\n") + 1
            tok = Token(kind, value, start, tok_line, col, line, pos - line_start + 1, pos)
            state.last_token = tok
            yield tok


@functools.cache
def _parser() -> Lark:
    return Lark((_HERE / "grammar.lark").read_text(), parser="lalr", lexer=_PtoLexer,
                transformer=_Shapes(), maybe_placeholders=False)


@functools.cache
def _type_parser() -> Lark:
    return Lark((_HERE / "types.lark").read_text(), parser="lalr", lexer="contextual")


# --- types -------------------------------------------------------------------------------

class _TypeProblem(Exception):
    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.message, self.offset = message, offset


_TYPE_CACHE: dict[str, object] = {}
_TB_KEYS = ("loc", "dtype", "rows", "cols", "v_row", "v_col", "valid", "blayout", "slayout",
            "fractal", "pad", "compact")
_LEVEL1 = {"!pto.tile": "level-1 tile values (!pto.tile) are not used by real kernels; "
                        "write tile buffers (!pto.tile_buf)"}


# Element type spellings the census shows beyond the IR names sim.isa.dtypes knows:
# `f8E4M3` (24 kv-form tile_bufs) names the same 8-bit e4m3 format the hardware has.
_ELEM_ALIASES = {"f8E4M3": "f8E4M3FN"}


def _elem_dtype(tok: Token):
    text = str(tok)
    try:
        return _dtype(_ELEM_ALIASES.get(text, text))
    except UserError:
        raise _TypeProblem(f"unsupported element type '{text}'", tok.start_pos) from None


def _dims(shape_tok: Token) -> tuple:
    return tuple(None if d == "?" else int(d) for d in str(shape_tok).split("x")[:-1])


def _int_value(tok, key: str) -> int:
    if not isinstance(tok, Token) or tok.type != "INT":
        raise _TypeProblem(f"tile_buf key '{key}': expected an integer, found '{tok}'",
                           _pos(tok))
    return int(tok)


def _pos(x) -> int:
    """Offset of a types.lark token inside the type text (0 for a subtree)."""
    return x.start_pos if isinstance(x, Token) else 0


def _tile_buf(params: list) -> TileType:
    first = params[0] if params else None
    kv: dict[str, object] = {}
    kv_tok: dict[str, Token] = {}
    rest = params
    if first is not None and not (hasattr(first, "data") and first.data == "key_value"):
        # compact form: LOC, RxCxT, key=value...
        if not (isinstance(first, Token) and first.type == "NAME") or len(params) < 2 or \
                not (hasattr(params[1], "data") and params[1].data == "shaped"):
            raise _TypeProblem("tile_buf: expected 'loc=...' (key=value form) or "
                               "'LOC, RxCxT' (compact form)", _pos(first))
        shape_tok, elem = params[1].children
        dims = _dims(shape_tok)
        if len(dims) != 2 or None in dims:
            raise _TypeProblem(f"tile_buf: the capacity must be two static dims RxC, found "
                               f"'{shape_tok}'", shape_tok.start_pos)
        kv.update(loc=str(first), rows=dims[0], cols=dims[1], dtype=_elem_dtype(elem))
        kv_tok.update(loc=first, rows=shape_tok, cols=shape_tok, dtype=elem)
        rest = params[2:]
    for p in rest:
        if not (hasattr(p, "data") and p.data == "key_value"):
            at = p.children[0] if hasattr(p, "children") else p
            raise _TypeProblem("tile_buf: expected key=value", _pos(at))
        key_tok, val = p.children
        key = str(key_tok)
        if key not in _TB_KEYS:
            raise _TypeProblem(f"unknown tile_buf key '{key}'; expected one of: "
                               f"{', '.join(_TB_KEYS)}", key_tok.start_pos)
        if key in kv_tok or (key == "valid" and ("v_row" in kv_tok or "v_col" in kv_tok)) or \
                (key in ("v_row", "v_col") and "valid" in kv_tok):
            raise _TypeProblem(f"tile_buf key '{key}' given twice", key_tok.start_pos)
        kv_tok[key] = key_tok
        if key == "dtype":
            kv[key] = _elem_dtype(val)
        elif key in ("rows", "cols", "fractal", "pad", "compact"):
            kv[key] = _int_value(val, key)
        elif key in ("v_row", "v_col"):
            kv[key] = None if str(val) == "?" else _int_value(val, key)
        elif key == "valid":
            if not (isinstance(val, Token) and val.type == "DIMS") or str(val).count("x") != 1:
                raise _TypeProblem(f"tile_buf key 'valid': expected RxC (each an integer or ?), "
                                   f"found '{val}'", _pos(val))
            vr, vc = str(val).split("x")
            kv["v_row"] = None if vr == "?" else int(vr)
            kv["v_col"] = None if vc == "?" else int(vc)
        else:
            kv[key] = str(val)
    for key in ("loc", "dtype", "rows", "cols"):
        if key not in kv:
            raise _TypeProblem(f"tile_buf: missing key '{key}'", 0)
    loc = "vec" if kv["loc"] == "ub" else kv["loc"]
    args = dict(loc=loc, dtype=kv["dtype"], rows=kv["rows"], cols=kv["cols"],
                valid_rows=kv.get("v_row", kv["rows"]), valid_cols=kv.get("v_col", kv["cols"]))
    for key in ("blayout", "slayout", "fractal", "pad", "compact"):
        if key in kv:
            args[key] = kv[key]
    try:
        return TileType(**args)
    except UserError as e:
        raise _TypeProblem(f"invalid tile_buf: {e}", 0) from None
    except (ValueError, TypeError) as e:
        raise _TypeProblem(f"invalid tile_buf: {e}", 0) from None


def _parse_pto_type(text: str):
    """Type object of one PTO_TYPE token's text, or raise _TypeProblem(offset)."""
    hit = _TYPE_CACHE.get(text)
    if hit is not None:
        if isinstance(hit, _TypeProblem):
            raise hit
        return hit
    try:
        result = _build_pto_type(text)
    except _TypeProblem as e:
        result = e
    if len(_TYPE_CACHE) > 50000:
        _TYPE_CACHE.clear()
    _TYPE_CACHE[text] = result
    if isinstance(result, _TypeProblem):
        raise result
    return result


_KNOWN_KINDS = ("!pto.ptr", "!pto.tensor_view", "!pto.partition_tensor_view", "!pto.tile_buf",
                "!pto.multi_tile_buf")
_COUNT = re.compile(r",\s*count\s*=\s*(\d+)\s*>\s*$")


def multi_tile_parts(text: str) -> "tuple[TileType, int]":
    """(element tile type, count) of ``!pto.multi_tile_buf<LOC, RxCxT[, keys], count=N>`` or
    ``!pto.multi_tile_buf<!pto.tile_buf<...>, count=N>``."""
    m = _COUNT.search(text)
    inner = text[text.index("<") + 1:m.start()].strip() if m else ""
    if not m or int(m.group(1)) <= 0 or not inner:
        raise _TypeProblem("!pto.multi_tile_buf: expected <tile_buf parameters, count=N> "
                           "with N > 0", 0)
    elem = _parse_pto_type(inner if inner.startswith("!pto.tile_buf") else
                           f"!pto.tile_buf<{inner}>")
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
        return TileType(elem.loc, elem.dtype, rows, cols, blayout=elem.blayout,
                        slayout=elem.slayout, fractal=elem.fractal, pad=elem.pad,
                        compact=elem.compact)
    except UserError as e:
        raise _TypeProblem(f"!pto.multi_tile_buf: {e}", 0) from None
_KIND = re.compile(r"!pto\.[A-Za-z_][\w.]*")


def _build_pto_type(text: str):
    kind = _KIND.match(text).group()
    if kind not in _KNOWN_KINDS:
        why = _LEVEL1.get(kind, "")
        raise _TypeProblem(f"unsupported type '{_short(text)}'" + (f": {why}" if why else ""), 0)
    if kind == "!pto.multi_tile_buf":          # a nested type: not for types.lark
        return _stacked(*multi_tile_parts(text))
    try:
        tree = _type_parser().parse(text)
    except UnexpectedInput as e:
        if kind == "!pto.tile_buf" and re.match(r"!pto\.tile_buf<\s*[\d?]+x", text):
            raise _TypeProblem(f"unsupported type '{_short(text)}': the obsolete memref-like "
                               f"tile_buf; write the key=value or the compact form", 0) from None
        pos = getattr(e, "pos_in_stream", None)
        if pos is None:
            tok = getattr(e, "token", None)
            pos = getattr(tok, "start_pos", None) or len(text) - 1
        raise _TypeProblem(f"malformed type '{_short(text)}'", pos) from None
    params = tree.children[1].children if len(tree.children) > 1 else []
    if kind == "!pto.ptr":
        if not params or len(params) > 2 or not all(isinstance(p, Token) for p in params):
            raise _TypeProblem("!pto.ptr: expected <T> or <T, space>", 0)
        return PtrType(_elem_dtype(params[0]), str(params[1]) if len(params) > 1 else None)
    if kind in ("!pto.tensor_view", "!pto.partition_tensor_view"):
        if len(params) != 1 or not (hasattr(params[0], "data") and params[0].data == "shaped"):
            raise _TypeProblem(f"{kind}: expected <d0 x d1 x ... x T>", 0)
        shape_tok, elem = params[0].children
        return ViewType(kind[5:], _elem_dtype(elem), _dims(shape_tok))
    return _tile_buf(params)


# memref-era kernels: an on-chip buffer as `memref<RxCxT, #pto.address_space<LOC>>`
_MEMREF = re.compile(r"memref<\s*(\d+)x(\d+)x([\w!.]+)\s*,\s*#pto\.address_space<(\w+)>\s*>")
_MEMREF_LOC = {"vec": "vec", "ub": "vec", "mat": "mat", "l1": "mat", "left": "left",
               "l0a": "left", "right": "right", "l0b": "right", "acc": "acc", "l0c": "acc",
               "bias": "bias", "bt": "bias", "scaling": "scaling", "fb": "scaling"}


def _memref_tile(text: str) -> "TileType | None":
    """The tile a static 2-D on-chip memref names (row-major, full valid region); None for
    any other builtin type (a GM memref, dynamic dims, vectors, tensors)."""
    m = _MEMREF.fullmatch(" ".join(text.split()))
    if m is None or m.group(4) not in _MEMREF_LOC:
        return None
    try:
        return TileType(_MEMREF_LOC[m.group(4)], _dtype(_ELEM_ALIASES.get(m.group(3), m.group(3))),
                        int(m.group(1)), int(m.group(2)))
    except UserError:
        return None


def _short(text: str, n: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 3] + "..."


# --- stage 2: tuples -> IR ------------------------------------------------------------------

SUPPORTED_ARITH = {
    "constant", "addi", "subi", "muli", "divsi", "divui", "remsi", "remui", "ceildivsi",
    "ceildivui", "floordivsi", "maxsi", "minsi", "maxui", "minui", "andi", "ori", "xori",
    "shli", "shrsi", "shrui", "addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf",
    "maxnumf", "minnumf", "negf", "cmpi", "cmpf", "select", "index_cast", "index_castui",
    "trunci", "extsi", "extui", "sitofp", "uitofp", "fptosi", "fptoui", "bitcast", "truncf",
    "extf",
}
_UNARY = {"negf"}
_CASTS = {"index_cast", "index_castui", "trunci", "extsi", "extui", "sitofp", "uitofp",
          "fptosi", "fptoui", "bitcast", "truncf", "extf"}
_CMPI = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}
_CMPF = {"false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
         "ule", "une", "uno", "true"}
_OP_KEYWORDS = {
    "FUNC_FUNC", "FUNC_CALL", "CALL", "FUNC_RETURN", "RETURN", "SCF_FOR", "SCF_IF",
    "SCF_YIELD", "ALLOC_TILE", "MAKE_TENSOR_VIEW", "PARTITION_VIEW", "SUBVIEW", "SUBSET",
    "TRESHAPE", "SET_VALIDSHAPE", "LOAD_SCALAR", "STORE_SCALAR", "GET_BLOCK_IDX", "GET_BLOCK_NUM",
    "GET_SUBBLOCK_IDX", "GET_SUBBLOCK_NUM", "GET_TENSOR_VIEW_DIM", "SECTION_CUBE", "SECTION_VECTOR", "SET_FLAG",
    "WAIT_FLAG", "SET_FLAG_DYN", "WAIT_FLAG_DYN", "RECORD_EVENT", "WAIT_EVENT", "BARRIER",
    "BARRIER_SYNC", "RESERVE_BUFFER", "IMPORT_RESERVED_BUFFER", "AIC_INITIALIZE_PIPE",
    "AIV_INITIALIZE_PIPE", "TPUSH_TO_AIV", "TPUSH_TO_AIC", "TPOP_FROM_AIC", "TPOP_FROM_AIV",
    "TFREE_FROM_AIC", "TFREE_FROM_AIV", "TALLOC_TO_AIV", "TALLOC_TO_AIC", "ALLOC_MULTI_TILE",
    "MULTI_TILE_GET", "MEMREF_ALLOC", "MODULE", "SYNC_SET", "SYNC_WAIT", "SET_FFTS", "SYNCALL",
    "SET_INTRA_BLOCK", "WAIT_INTRA_BLOCK",
}
_UNSUPPORTED_TYPES = {"memref", "vector", "tensor", "complex", "tuple", "dense"}
_FRIENDLY = {
    "SSA": "a value (%name)", "OPNAME": "an op name", "NAME": "a name", "PTO_TYPE": "a type",
    "TYPE_ALIAS": "a type alias", "INT": "an integer", "FLOAT": "a float", "STRING": "a string",
    "SYMBOL": "a symbol (@name)", "HASH_ATTR": "an attribute (#...)", "$END": "end of input",
    "BUILTIN": "a builtin attribute or type", "LOCATION": "a location",
}


def _opcode_of(name: str) -> "str | None":
    if not name.startswith("pto."):
        return None
    key = name[4:].upper().replace(".", "_")
    return key if key in OPCODES else None


# PTO ops written in the DPS spelling that are not tile instructions of OPCODES
_DPS_SCALAR_OPS = {"pto.tgetval"}


def _is_supported_op(name: str) -> bool:
    if name.startswith("arith."):
        return name[6:] in SUPPORTED_ARITH
    return _opcode_of(name) is not None or name in _DPS_SCALAR_OPS


class _Lowering:
    def __init__(self, filename: str, text: str):
        self.file, self.text = filename, text
        self.scopes: list[dict] = []
        self.aliases: dict[str, object] = {}
        self.attr_aliases: dict[str, tuple] = {}     # #name = value (top of the file)
        self.calls: list = []                # (token, callee, args, result types)
        self.left_blayout = None             # set from the module's target attributes
        self.signatures: dict[str, tuple] = {}

    # --- errors and positions --------------------------------------------------------------

    def fail(self, at, message: str):
        line, col = self._linecol(at)
        raise ParseError(self.file, line, col, message, self.text)

    def _linecol(self, at) -> tuple[int, int]:
        if isinstance(at, Token):
            if at.line is not None:
                return at.line, at.column
            at = at.start_pos or 0
        if isinstance(at, tuple):
            at = _start(at)
        pos = max(0, min(int(at), len(self.text)))
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def loc(self, tok: Token) -> SourceLoc:
        return SourceLoc(self.file, tok.line, tok.column)

    # --- scopes ------------------------------------------------------------------------------

    def define(self, tok: Token, value) -> None:
        """Bind ``value`` under its own name (``r#0`` for ``%r:2``); ``tok`` locates errors."""
        name = value.name
        for scope in self.scopes:
            if name in scope:
                self.fail(tok, f"redefinition of SSA value '%{name}'")
        self.scopes[-1][name] = value

    def lookup(self, tok: Token):
        name = str(tok)[1:]
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                return v
        self.fail(tok, f"use of undefined value '%{name}'")

    def result_names(self, results, want: "int | None" = None, what: str = "this op") -> list:
        """[(token, name)] of a results tuple (``%r:2`` gives r#0, r#1)."""
        out = []
        for tok, count_tok in (results[1] if results else []):
            base = str(tok)[1:]
            if count_tok is None:
                out.append((tok, base))
                continue
            count = _int(str(count_tok))
            if not 1 <= count <= 256:
                self.fail(count_tok, f"result group %{base}:{count_tok}: expected 1..256 results")
            out += [(tok, f"{base}#{i}") for i in range(count)]
        if want is not None and len(out) != want:
            at = results[1][0][0] if results else None
            if at is None:
                return out
            self.fail(at, f"{what} has {want} result{'s' if want != 1 else ''}, "
                          f"found {len(out)} name{'s' if len(out) != 1 else ''}")
        return out

    # --- types and operands ----------------------------------------------------------------

    def type_of(self, tok):
        if tok.type == "PTO_TYPE":
            try:
                return self.arch_layout(_parse_pto_type(str(tok)), tok)
            except _TypeProblem as e:
                self.fail(tok.start_pos + e.offset, e.message)
        if tok.type == "TYPE_ALIAS":
            t = self.aliases.get(str(tok))
            if t is None:
                if "<" in str(tok):          # !dialect.type<...> of another dialect
                    self.fail(tok, f"unsupported type '{_short(str(tok))}'")
                self.fail(tok, f"undefined type alias '{tok}'")
            return self.arch_layout(t, tok)
        name = str(tok)
        if tok.type == "BUILTIN":            # memref<...>, vector<...>, tensor<...> ...
            t = _memref_tile(name)
            if t is not None:
                return self.arch_layout(t, tok)
            self.fail(tok, f"unsupported type '{name.split('<', 1)[0]}<...>'")
        if not is_scalar_type(name):
            self.fail(tok, f"unsupported type '{name}'")
        return name

    def arch_layout(self, t, tok):
        """As the PTO compiler's parser does, a ``left`` (L0A) tile takes the outer layout
        of the module's target: row-major on A2/A3, column-major on A5."""
        if self.left_blayout is None or not isinstance(t, TileType) or t.loc is not Loc.LEFT \
                or t.blayout is self.left_blayout:
            return t
        try:
            return _attrs.evolve(t, blayout=self.left_blayout)
        except UserError as e:
            self.fail(tok, f"invalid tile_buf for this target: {e}")

    def types(self, node) -> list:
        return [self.type_of(t) for t in (node[1] if node else [])]

    def mismatch(self, at, value, declared, role: str = "") -> None:
        name = f"%{getattr(value, 'name', '?')}"
        self.fail(at, f"type mismatch: {role}{name} has type {format_type(value_type(value))}, "
                      f"but {format_type(declared)} is expected here")

    def literal(self, lit, t, at=None):
        """Const for a literal token of declared type ``t``."""
        tok = lit[1]
        at = at or tok
        if not isinstance(t, str):
            self.fail(at, f"type mismatch: literal {tok} cannot have type {format_type(t)}")
        if tok.type in ("TRUE", "FALSE"):
            if t != "i1":
                self.fail(at, f"type mismatch: {tok} is an i1 literal, but {t} is expected here")
            return Const(tok.type == "TRUE", "i1")
        text = str(tok)
        if tok.type == "FLOAT":
            if not is_float_type(t):
                self.fail(at, f"type mismatch: float literal {text} cannot have type {t}")
            return Const(float(text), t)
        value = _int(text)
        if is_float_type(t):
            if "x" in text.lower():
                return Const(float_from_bits(value, t), t)
            return Const(float(value), t)
        if t == "i1":
            if value not in (0, 1, -1):
                self.fail(at, f"type mismatch: {text} is not an i1 value")
            return Const(bool(value), "i1")
        return Const(value, t)

    def operand(self, op, t=None, role: str = "", what: str = ""):
        """IR value of one operand (SSA token or literal), checked against ``t``."""
        if isinstance(op, tuple):                # literal
            if t is None:
                self.fail(op[1], f"literal operand {op[1]} needs a type{what}")
            return self.literal(op, t)
        v = self.lookup(op)
        if t is not None and value_type(v) != t:
            self.mismatch(op, v, t, role)
        return v

    def scalar_operand(self, op, t=None, role: str = ""):
        """An operand that must be a scalar (``index`` when a literal has no type)."""
        if isinstance(op, tuple):
            return self.literal(op, t or "index")
        v = self.operand(op, t, role)
        if not isinstance(v, (Scalar, Const)):
            self.fail(op, f"type mismatch: {role}{op} has type {format_type(value_type(v))}, "
                          f"but a scalar is expected here")
        return v

    def typed_list(self, ops, types, anchor, where: str) -> tuple:
        ops = ops[1] if ops else []
        if types is not None:
            ts = self.types(types)
            if len(ts) != len(ops):
                self.fail(anchor, f"{where}(...) has {len(ops)} operand{'s' * (len(ops) != 1)} "
                                  f"but {len(ts)} type{'s' * (len(ts) != 1)}")
            return tuple(self.operand(o, t) for o, t in zip(ops, ts))
        return tuple(self.operand(o, None, what=f" in {where}(...)") for o in ops)

    # --- attributes --------------------------------------------------------------------------

    def attrs(self, node) -> dict:
        out: dict = {}
        if node is None:
            return out
        for key_tok, val in node[2]:
            key = _unquote(str(key_tok)) if key_tok.type == "STRING" else str(key_tok)
            if key in out:
                self.fail(key_tok, f"attribute '{key}' given twice")
            out[key] = self.attr_value(key, val)
        return out

    def raw(self, start: int, end: int) -> RawAttr:
        """The source text of an attribute value on one line (comments inside dropped)."""
        text = self.text[start:end]
        if "//" in text:
            text = _COMMENT_OR_STRING.sub(lambda m: m.group() if m.group()[0] == '"' else "", text)
        if "\n" in text:
            text = re.sub(r"\s*\n\s*", " ", text)
        return RawAttr(text)

    def attr_value(self, key: str, val, aliases: bool = True):
        if val is None:
            return RawAttr("unit")
        _, parts, start, end = val
        first = parts[0]
        if len(parts) == 1 and isinstance(first, tuple) and first[0] == "lit":
            tok = first[1]
            if tok.type in ("TRUE", "FALSE"):
                return tok.type == "TRUE"
            if tok.type == "FLOAT":
                return float(tok)
            return _int(str(tok))
        if len(parts) == 1 and isinstance(first, Token):
            if first.type == "STRING":
                return _unquote(str(first))
            if aliases and first.type == "HASH_ATTR" and str(first) in self.attr_aliases:
                return self.attr_value(key, self.attr_aliases[str(first)], False)
            if first.type == "HASH_ATTR" and key in ENUM_ATTR_KINDS:
                m = re.fullmatch(r"#pto(?:\.\w+)?<\s*(?:\w+\s+)?(\w+)\s*>", str(first))
                if m:
                    return m.group(1)
        return self.raw(start, end)

    # --- program -----------------------------------------------------------------------------

    def program(self, tree) -> Program:
        _, items = tree
        module_attrs: dict = {}
        funcs = []
        for item in items:
            if item[0] == "alias":
                name = str(item[1])
                if name in self.aliases:
                    self.fail(item[1], f"type alias '{name}' defined twice")
                self.aliases[name] = self.type_of(item[2])
            elif item[0] == "attr_alias":
                name = str(item[1])
                if name in self.attr_aliases or "<" in name:
                    self.fail(item[1], f"attribute alias '{_short(name)}' defined twice"
                              if "<" not in name else f"unexpected '{_short(name)}'")
                value = item[2]
                parts = value[1]
                if len(parts) == 1 and isinstance(parts[0], Token) and \
                        str(parts[0]) in self.attr_aliases:      # an alias of an alias
                    value = self.attr_aliases[str(parts[0])]
                self.attr_aliases[name] = value
            elif item[0] == "module":
                module_attrs = self.attrs(item[2])
                try:
                    arch = target_from_attrs(module_attrs)
                except UserError:            # reported when a target is chosen
                    arch = None
                self.left_blayout = {"a2a3": BLayout.ROW_MAJOR, "a5": BLayout.COL_MAJOR}.get(arch)
                funcs += item[3]
            else:
                funcs.append(item)
        if not funcs:
            at = items[-1][1] if items and items[-1][0] == "module" else 0
            self.fail(at, "the module defines no function")
        # signatures first: calls may name functions defined later
        heads = [self.func_head(f) for f in funcs]
        functions = [self.func_body(f, head) for f, head in zip(funcs, heads)]
        self.check_calls()
        return Program(tuple(functions), _entry(functions), module_attrs)

    def func_head(self, f):
        c = f[1]
        tok = c[0]
        private = False
        sym = None
        args_node = fres = attrs_node = region = None
        for x in c[1:]:
            if isinstance(x, Token):
                if x.type == "SYMBOL":
                    sym = x
            elif x[0] == "vis":
                private = x[1].type == "PRIVATE"
            elif x[0] == "args":
                args_node = x
            elif x[0] == "fres":
                fres = x
            elif x[0] == "dict":
                attrs_node = x
            elif x[0] == "region":
                region = x
        name = _symbol(sym)
        if name in self.signatures:
            self.fail(sym, f"redefinition of function @{name}")
        args = []
        arg_toks = []
        seen = set()
        for i, (ssa, ty) in enumerate(args_node[1] if args_node else []):
            t = self.type_of(ty)
            if ssa is None:
                if region is not None:
                    self.fail(ty, f"argument {i} of @{name} needs a name (%name: type) "
                                  f"when the function has a body")
                arg_name, at = f"arg{i}", ty
            else:
                arg_name, at = str(ssa)[1:], ssa
            if arg_name in seen:
                self.fail(at, f"redefinition of SSA value '%{arg_name}'")
            seen.add(arg_name)
            args.append(make_value(arg_name, t))
            arg_toks.append(at)
        result_types = self.types(("types", fres[1])) if fres else []
        self.signatures[name] = (tuple(value_type(a) for a in args), tuple(result_types))
        return dict(tok=tok, sym=sym, name=name, private=private, args=args, arg_toks=arg_toks,
                    result_types=result_types, attrs=self.attrs(attrs_node), region=region)

    def func_body(self, f, head) -> Function:
        self.scopes = [{}]
        self.nesting = 0
        for a, at in zip(head["args"], head["arg_toks"]):
            self.scopes[-1][a.name] = a
        body = ()
        if head["region"] is not None:
            body = self.block(head["region"], func_results=head["result_types"],
                              func_name=head["name"])
        return Function(head["name"], tuple(head["args"]), body, private=head["private"],
                        result_types=tuple(format_type(t) for t in head["result_types"]),
                        attrs=head["attrs"])

    def block(self, region, *, yields=None, func_results=None, func_name="") -> tuple:
        """Statements of a region (its own scope). ``yields``: types scf.yield must give
        (None: no scf.yield allowed); ``func_results``: a function body (return allowed)."""
        _, lbrace, stmts, rbrace = region
        if self.nesting > MAX_NESTING:      # a function body is level 0
            self.fail(lbrace, f"regions nested {self.nesting} deep: expected at most "
                              f"{MAX_NESTING} nested scf.for / scf.if / section bodies")
        self.scopes.append({})
        self.nesting += 1
        out = []
        try:
            n = len(stmts)
            for i, st in enumerate(stmts):
                kind = st[0]
                last = i == n - 1
                if kind == "yield":
                    y = self.yield_stmt(st, yields)
                    if not last:
                        self.fail(st[1], "scf.yield must be the last statement of its region")
                    if y.values:
                        out.append(y)
                    continue
                if kind == "return":
                    r = self.return_stmt(st, func_results, func_name)
                    if not last:
                        self.fail(st[1], "return must be the last statement of the function")
                    if r.values:
                        out.append(r)
                    continue
                out.append(getattr(self, f"s_{kind}")(st))
            if yields and (not out or not isinstance(out[-1], Yield)):
                self.fail(rbrace, f"this region must end with scf.yield of {len(yields)} "
                                  f"value{'s' * (len(yields) != 1)}")
            if func_results and (not out or not isinstance(out[-1], Return)):
                self.fail(rbrace, f"function @{func_name} must end with return of "
                                  f"{len(func_results)} value{'s' * (len(func_results) != 1)}")
        finally:
            self.scopes.pop()
            self.nesting -= 1
        return tuple(out)

    # --- statements --------------------------------------------------------------------------

    def s_dps(self, st) -> Instr:
        _, first, c = st
        results = ins = outs = attrs_node = None
        for x in c:
            if isinstance(x, Token):
                op = x
            elif x[0] == "results":
                results = x
            elif x[0] == "ins":
                ins = x
            elif x[0] == "outs":
                outs = x
            elif x[0] == "dict":
                attrs_node = x
        name = str(op)
        if name in _DPS_SCALAR_OPS:
            return self.tgetval(st, op, results, ins, outs, attrs_node)
        opcode = _opcode_of(name)
        if opcode is None:
            self.fail(op, f"unsupported op '{name}'")
        if results is not None:
            self.fail(first, f"'{name}' in destination-passing form returns no values")
        attrs = {}
        ins_ops = ins_types = None
        for x in ins[1][1:]:
            if x[0] == "ops":
                ins_ops = x
            elif x[0] == "types":
                ins_types = x
            elif x[0] == "dict":
                attrs.update(self.attrs(x))
        ins_vals = self.typed_list(ins_ops, ins_types, ins[1][0], "ins")
        outs_vals = ()
        if outs is not None:
            o_ops = next((x for x in outs[1][1:] if x[0] == "ops"), None)
            o_types = next((x for x in outs[1][1:] if x[0] == "types"), None)
            for x in outs[1][1:]:
                if x[0] == "dict":
                    for k, v in self.attrs(x).items():
                        if k in attrs:
                            self.fail(x[1], f"attribute '{k}' given twice")
                        attrs[k] = v
            if o_ops is None and o_types is not None:
                self.fail(outs[1][0], f"'{name}': outs without operands returns a value, which "
                                      f"only ops outside the simulated set do")
            outs_vals = self.typed_list(o_ops, o_types, outs[1][0], "outs")
        for k, v in self.attrs(attrs_node).items():
            if k in attrs:
                self.fail(attrs_node[1], f"attribute '{k}' given twice")
            attrs[k] = v
        return Instr(opcode, outs_vals, ins_vals, attrs, loc=self.loc(first))

    def tgetval(self, st, op, results, ins, outs, attrs_node) -> ScalarOp:
        """``%v = pto.tgetval ins(%tile, %i : !pto.tile_buf<...>, index) outs : T``: element
        ``%i`` of the tile (flat, in storage order) as a scalar of type ``T``."""
        _, first, c = st
        name = str(op)
        if results is None:
            self.fail(op, f"{name} has 1 result, found 0 names")
        (rtok, rname), = self.result_names(results, 1, name)
        for x in c:
            if isinstance(x, tuple) and x[0] == "ret":
                self.fail(x[1][1][0], f"{name}: unexpected '-> T'; the result type is 'outs : T'")
        attrs: dict = {}
        ins_ops = ins_types = None
        for x in ins[1][1:]:
            if x[0] == "ops":
                ins_ops = x
            elif x[0] == "types":
                ins_types = x
            elif x[0] == "dict":
                attrs.update(self.attrs(x))
        vals = self.typed_list(ins_ops, ins_types, ins[1][0], "ins")
        if len(vals) != 2 or not isinstance(vals[0], Tile) or \
                not isinstance(vals[1], (Scalar, Const)) or not is_int_type(value_type(vals[1])):
            self.fail(ins[1][0], f"{name}: expected ins(%tile, %index : !pto.tile_buf<...>, "
                                 f"index)")
        o_ops = o_types = None
        if outs is not None:
            o_ops = next((x for x in outs[1][1:] if x[0] == "ops"), None)
            o_types = next((x for x in outs[1][1:] if x[0] == "types"), None)
        if outs is None or o_ops is not None or o_types is None or len(o_types[1]) != 1:
            self.fail(outs[1][0] if outs is not None else op,
                      f"{name}: expected 'outs : T' giving the scalar result type")
        rt = self.type_of(o_types[1][0])
        if not isinstance(rt, str):
            self.fail(o_types[1][0], f"{name}: expected a scalar result type, found "
                                     f"{format_type(rt)}")
        for k, v in self.attrs(attrs_node).items():
            if k in attrs:
                self.fail(attrs_node[1], f"attribute '{k}' given twice")
            attrs[k] = v
        res = Scalar(rname, rt)
        self.define(rtok, res)
        return ScalarOp((res,), name, vals, attrs, loc=self.loc(first))

    def s_simple(self, st) -> Arith:
        _, first, c = st
        results, op, args = c[0], c[1], c[2][1]
        name = str(op)
        short = name[6:] if name.startswith("arith.") else None
        if short not in SUPPORTED_ARITH:
            if _opcode_of(name) is not None:
                self.fail(op, f"unsupported: the level-1 SSA form of '{name}' (not used by real "
                              f"kernels); write {name} ins(...) outs(...)")
            self.fail(op, f"unsupported op '{name}'")
        (rtok, rname), = self.result_names(results, 1, name)
        flags, attrs_node, sig = [], None, None
        for x in c[3:]:
            if x[0] == "flag":
                flags.append(f"{x[1][0]}<{', '.join(map(str, x[1][1:]))}>")
            elif x[0] == "dict":
                attrs_node = x
            elif x[0] == "sig":
                sig = x
        attrs = self.attrs(attrs_node)
        if flags:
            attrs["flags"] = RawAttr(" ".join(flags))
        types, conv = [], None
        if sig is not None:
            types = self.types(sig[1][0])
            if len(sig[1]) > 1:
                conv = sig[1][1]
                to_types = self.types(sig[1][2])
        for t, tt in zip(types, sig[1][0][1] if sig else []):
            if not isinstance(t, str):
                self.fail(tt, f"'{name}' works on scalars, found type {format_type(t)}")
        loc = self.loc(first)

        def arity(n):
            if len(args) != n:
                self.fail(op, f"'{name}' takes {n} operand{'s' * (n != 1)}, found {len(args)}")

        def no_names(xs):
            for a in xs:
                if isinstance(a, Token) and a.type == "NAME":
                    self.fail(a, f"'{name}': unexpected '{a}'")

        if conv is not None and short not in _CASTS:
            self.fail(conv, f"'{name}' has a single type, found '{conv}'")
        if short == "constant":
            arity(1)
            lit = args[0]
            if isinstance(lit, Token) and lit.type == "BUILTIN":
                lit = self.dense_splat(lit, types)
            if not isinstance(lit, tuple):
                self.fail(lit, f"arith.constant takes a literal, found '{lit}'")
            if not types:
                if lit[1].type not in ("TRUE", "FALSE"):
                    self.fail(op, "arith.constant needs a type (': T')")
                types = ["i1"]
            value = self.literal(lit, types[0])
            res = Scalar(rname, types[0])
            self.define(rtok, res)
            return Arith(res, name, (value,), attrs, loc=loc)
        if not types:
            self.fail(op, f"'{name}' needs a type (': T')")
        if short in ("cmpi", "cmpf"):
            arity(3)
            pred_tok = args[0]
            pred = str(pred_tok)
            if isinstance(pred_tok, tuple):
                pred = str(pred_tok[1])
            valid = _CMPI if short == "cmpi" else _CMPF
            if pred not in valid:
                self.fail(pred_tok[1] if isinstance(pred_tok, tuple) else pred_tok,
                          f"'{name}': unknown predicate '{pred}'; expected one of: "
                          f"{', '.join(sorted(valid))}")
            no_names(args[1:])
            t = types[-1]
            operands = tuple(self.scalar_operand(a, t) for a in args[1:])
            res = Scalar(rname, "i1")
            self.define(rtok, res)
            return Arith(res, name, operands, {**attrs, "predicate": pred}, loc=loc)
        no_names(args)
        if short == "select":
            arity(3)
            t = types[-1]
            cond_t = types[0] if len(types) > 1 else "i1"
            operands = (self.scalar_operand(args[0], cond_t),
                        self.scalar_operand(args[1], t), self.scalar_operand(args[2], t))
            res = Scalar(rname, t)
        elif short in _CASTS:
            arity(1)
            if conv is None or conv.type != "TO":
                self.fail(op, f"'{name}' needs ': T1 to T2'")
            operands = (self.scalar_operand(args[0], types[0]),)
            res = Scalar(rname, to_types[0])
        elif short in _UNARY:
            arity(1)
            operands = (self.scalar_operand(args[0], types[0]),)
            res = Scalar(rname, types[0])
        else:
            arity(2)
            t = types[0]
            operands = tuple(self.scalar_operand(a, t) for a in args)
            res = Scalar(rname, t)
        self.define(rtok, res)
        return Arith(res, name, operands, attrs, loc=loc)

    def dense_splat(self, tok: Token, types: list) -> tuple:
        """The literal of ``arith.constant dense<V> : T`` for a scalar ``T`` (a splat of one
        value: the constant is that value); a shaped constant is not a scalar."""
        text = str(tok)
        body = text[text.index("<") + 1:-1].strip()
        while body.startswith("[") and body.endswith("]"):
            body = body[1:-1].strip()
        if not text.startswith("dense<") or (types and not isinstance(types[0], str)):
            self.fail(tok, f"unsupported: constant '{_short(text)}' (only scalar constants "
                           f"are simulated)")
        kind = "TRUE" if body == "true" else "FALSE" if body == "false" else \
            "FLOAT" if re.fullmatch(r"[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+)", body) else \
            "INT" if re.fullmatch(r"[-+]?(0x[0-9a-fA-F]+|\d+)", body) else None
        if kind is None:
            self.fail(tok, f"unsupported: constant '{_short(text)}' (only a splat of one "
                           f"number is a scalar constant)")
        return ("lit", Token(kind, body, tok.start_pos, tok.line, tok.column, tok.end_line,
                             tok.end_column, tok.end_pos))

    def s_for(self, st) -> For:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        kw, iv_tok, lb, _, ub, _, step = c[i:i + 7]
        iter_node = ftype = region = None
        for x in c[i + 7:]:
            if x[0] == "iter":
                iter_node = x
            elif x[0] == "fortype":
                ftype = x
            elif x[0] == "region":
                region = x
        iv_type = self.type_of(ftype[1]) if ftype else "index"
        if not is_int_type(iv_type):
            self.fail(ftype[1], f"scf.for: the induction variable must be an integer, found "
                                f"{format_type(iv_type)}")
        lower = self.scalar_operand(lb, iv_type)
        upper = self.scalar_operand(ub, iv_type)
        stepv = self.scalar_operand(step, iv_type)
        inits, carried, ctypes = [], [], []
        if iter_node is not None:
            pairs, tys = iter_node[1], self.types(iter_node[2])
            if len(pairs) != len(tys):
                self.fail(iter_node[2][1][0] if iter_node[2][1] else kw,
                          f"scf.for: {len(pairs)} iter_args but {len(tys)} result types")
            for (tok, init), t in zip(pairs, tys):
                inits.append(self.operand(init, t))
                carried.append((tok, make_value(str(tok)[1:], t)))
            ctypes = tys
        names = self.result_names(results, len(ctypes), "scf.for") if results else []
        self.scopes.append({})
        try:
            iv = Scalar(str(iv_tok)[1:], iv_type)
            self.define(iv_tok, iv)
            for tok, v in carried:
                self.define(tok, v)
            body = self.block(region, yields=ctypes)
        finally:
            self.scopes.pop()
        res = []
        for (tok, n), t in zip(names, ctypes):
            v = make_value(n, t)
            self.define(tok, v)
            res.append(v)
        return For(iv, lower, upper, stepv, body, tuple(v for _, v in carried), tuple(inits),
                   tuple(res), loc=self.loc(first))

    def s_if(self, st) -> If:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        cond_tok = c[i + 1]
        rtypes, then_r, else_r = [], None, None
        for x in c[i + 2:]:
            if x[0] == "iftypes":
                rtypes = self.types(x[1])
            elif x[0] == "region":
                then_r = x
            elif x[0] == "else":
                else_r = x[1]
        cond = self.scalar_operand(cond_tok, "i1")
        names = self.result_names(results, len(rtypes), "scf.if") if results else []
        then_b = self.block(then_r, yields=rtypes)
        if rtypes and else_r is None:
            self.fail(c[i], "scf.if with results needs an else region")
        else_b = self.block(else_r, yields=rtypes) if else_r is not None else ()
        res = []
        for (tok, n), t in zip(names, rtypes):
            v = make_value(n, t)
            self.define(tok, v)
            res.append(v)
        return If(cond, then_b, else_b, tuple(res), loc=self.loc(first))

    def _values_with_types(self, c, anchor, what):
        ops = next((x for x in c if isinstance(x, tuple) and x[0] == "ops"), None)
        tys = next((x for x in c if isinstance(x, tuple) and x[0] == "types"), None)
        if ops is None:
            return ()
        return self.typed_list(ops, tys, anchor, what)

    def _terminator_values(self, first, c, what: str, expected, expects: str) -> tuple:
        """Values of a ``scf.yield`` / ``return``, checked against the types expected."""
        values = self._values_with_types(c[1:], first, what)
        if len(values) != len(expected):
            self.fail(first, f"{what} gives {len(values)} value{'s' * (len(values) != 1)}, "
                             f"{expects} {len(expected)}")
        ops = next((x for x in c[1:] if x[0] == "ops"), ("ops", []))[1]
        for v, t, at in zip(values, expected, ops):
            if value_type(v) != t:
                self.mismatch(at, v, t)
        return values

    def yield_stmt(self, st, expected) -> Yield:
        _, first, c = st
        if expected is None:
            self.fail(first, "scf.yield outside scf.for / scf.if")
        values = self._terminator_values(first, c, "scf.yield", expected, "the enclosing op expects")
        return Yield(values, loc=self.loc(first))

    def return_stmt(self, st, expected, func_name) -> Return:
        _, first, c = st
        if expected is None:
            self.fail(first, "return outside a function body")
        values = self._terminator_values(first, c, "return", expected, f"@{func_name} returns")
        return Return(values, loc=self.loc(first))

    def s_call(self, st) -> Call:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        sym = next(x for x in c if isinstance(x, Token) and x.type == "SYMBOL")
        arrow = next(i for i, x in enumerate(c) if isinstance(x, Token) and x.type == "ARROW")
        ops = next((x for x in c[:arrow] if isinstance(x, tuple) and x[0] == "ops"), None)
        arg_types = next((x for x in c[:arrow] if isinstance(x, tuple) and x[0] == "types"), None)
        rtypes = self.types(c[arrow + 1])
        args = self.typed_list(ops, arg_types if arg_types is not None else ("types", []),
                               sym, "call")
        names = self.result_names(results, len(rtypes), "func.call") if results else []
        res = []
        for (tok, n), t in zip(names, rtypes):
            v = make_value(n, t)
            self.define(tok, v)
            res.append(v)
        callee = _symbol(sym)
        self.calls.append((sym, callee, args, tuple(rtypes)))
        return Call(callee, args, tuple(res), loc=self.loc(first))

    def check_calls(self) -> None:
        for sym, callee, args, rtypes in self.calls:
            sig = self.signatures.get(callee)
            if sig is None:
                self.fail(sym, f"call to undefined function @{callee}")
            want_args, want_res = sig
            got = tuple(value_type(a) for a in args)
            if got != want_args:
                self.fail(sym, "type mismatch: @{} takes ({}), called with ({})".format(
                    callee, ", ".join(map(format_type, want_args)), ", ".join(map(format_type, got))))
            if rtypes != want_res:
                self.fail(sym, "type mismatch: @{} returns ({}), the call expects ({})".format(
                    callee, ", ".join(map(format_type, want_res)), ", ".join(map(format_type, rtypes))))

    def s_alloc(self, st) -> Alloc:
        _, first, c = st
        (rtok, rname), = self.result_names(c[0], 1, "pto.alloc_tile")
        kv = {}
        for x in c[2:-1]:                    # an attribute dict of alloc_tile has no meaning here
            if x[0] == "kv":
                key = str(x[1])
                if key not in ("addr", "valid_row", "valid_col"):
                    self.fail(x[1], f"pto.alloc_tile: unknown operand '{key}'; expected addr, "
                                    f"valid_row, valid_col")
                if key in kv:
                    self.fail(x[1], f"pto.alloc_tile: '{key}' given twice")
                kv[key] = self.scalar_operand(x[2], "i64" if key == "addr" else "index",
                                              role=f"{key} ") \
                    if isinstance(x[2], tuple) else self.scalar_operand(x[2], role=f"{key} ")
        t = self.type_of(c[-1])
        if not isinstance(t, TileType):
            self.fail(c[-1], f"pto.alloc_tile: expected a !pto.tile_buf type, found "
                             f"{format_type(t)}")
        tile = Tile(rname, t)
        self.define(rtok, tile)
        return Alloc(tile, kv.get("addr"), kv.get("valid_row"), kv.get("valid_col"),
                     loc=self.loc(first))

    def s_memref_alloc(self, st) -> Alloc:
        """``%b = memref.alloc() : memref<RxCxT, #pto.address_space<LOC>>`` (memref-era
        kernels): a tile buffer the compiler places, as ``pto.alloc_tile``."""
        _, first, c = st
        (rtok, rname), = self.result_names(c[0], 1, "memref.alloc")
        if any(isinstance(x, tuple) and x[0] == "ops" for x in c):
            self.fail(c[1], "unsupported: memref.alloc with dynamic sizes")
        t = self.type_of(c[-1])
        if not isinstance(t, TileType):
            self.fail(c[-1], f"memref.alloc: expected an on-chip memref, found {format_type(t)}")
        tile = Tile(rname, t)
        self.define(rtok, tile)
        return Alloc(tile, loc=self.loc(first))

    def s_multi_get(self, st) -> Subview:
        """``%t = pto.multi_tile_get %m[%i] : MT [-> TB]``: buffer ``%i`` of a multi-tile,
        a tile aliasing that block of the stacked allocation."""
        _, first, c = st
        op = c[1]
        (rtok, rname), = self.result_names(c[0], 1, "pto.multi_tile_get")
        src = self.lookup(c[2])
        index = self.scalar_operand(c[3])
        types = [x for x in c[4:] if isinstance(x, Token) and x.type in ("PTO_TYPE", "TYPE_ALIAS")]
        src_t = self.type_of(types[0])
        if not isinstance(src, Tile) or value_type(src) != src_t:
            self.mismatch(c[2], src, src_t)
        if len(types) > 1:
            elem = self.type_of(types[1])
        elif str(types[0]).startswith("!pto.multi_tile_buf"):
            elem = multi_tile_parts(str(types[0]))[0]
        else:
            elem = None
        if not isinstance(elem, TileType) or elem.loc is not src.loc or \
                src.type.nbytes % elem.nbytes:
            self.fail(op, "pto.multi_tile_get: expected a result !pto.tile_buf whose size "
                          "divides the multi-tile's")
        tile = Tile(rname, elem)
        self.define(rtok, tile)
        return Subview(tile, src, (index,), (elem.rows, elem.cols), (), "pto.multi_tile_get",
                       loc=self.loc(first))

    def _index_list(self, ops) -> tuple:
        return tuple(self.scalar_operand(o) for o in (ops[1] if ops else []))

    def _between(self, c, start_type, stop_types):
        """The operands tuple following the keyword token ``start_type``."""
        seen = False
        for x in c:
            if isinstance(x, Token) and x.type == start_type:
                seen = True
            elif seen and isinstance(x, Token) and x.type in stop_types:
                return None
            elif seen and isinstance(x, tuple) and x[0] == "ops":
                return x
        return None

    def s_mtv(self, st) -> MakeTensorView:
        _, first, c = st
        (rtok, rname), = self.result_names(c[0], 1, "pto.make_tensor_view")
        ptr = self.lookup(c[2])
        if not isinstance(ptr, GmPtr):
            self.fail(c[2], f"type mismatch: {c[2]} has type {format_type(value_type(ptr))}, "
                            f"but a !pto.ptr is expected here")
        shape = self._index_list(self._between(c, "SHAPE", ("STRIDES",)))
        strides = self._index_list(self._between(c, "STRIDES", ()))
        attrs = self.attrs(next((x for x in c if isinstance(x, tuple) and x[0] == "dict"), None))
        t = self.type_of(c[-1])
        if not (isinstance(t, ViewType) and t.kind == "tensor_view"):
            self.fail(c[-1], f"pto.make_tensor_view: expected a !pto.tensor_view type, found "
                             f"{format_type(t)}")
        if t.dtype != ptr.dtype:
            self.fail(c[-1], f"type mismatch: {c[2]} points to {format_dtype(ptr.dtype)}, the "
                             f"view type has {format_dtype(t.dtype)}")
        for what, xs in (("shape", shape), ("strides", strides)):
            if len(xs) != len(t.shape):
                self.fail(c[-1], f"pto.make_tensor_view: {what} has {len(xs)} entries, the "
                                 f"view type has rank {len(t.shape)}")
        layout = attrs.get("layout", "nd")
        if isinstance(layout, RawAttr):
            m = re.fullmatch(r"#pto\.layout<\s*(\w+)\s*>", layout.text)
            layout = m.group(1) if m else layout.text
        if layout not in ("nd", "dn", "nz"):
            self.fail(c[1], f"pto.make_tensor_view: layout must be #pto.layout<nd>, <dn> or "
                            f"<nz>, found {_short(str(layout))}")
        view = TensorView(rname, t.dtype, t.shape)
        self.define(rtok, view)
        return MakeTensorView(view, ptr, shape, strides, str(layout), loc=self.loc(first))

    def s_pv(self, st) -> PartitionView:
        _, first, c = st
        (rtok, rname), = self.result_names(c[0], 1, "pto.partition_view")
        src = self.lookup(c[2])
        src_t = self.type_of(c[-3])
        if not isinstance(src, TensorView):
            self.fail(c[2], f"type mismatch: {c[2]} has type {format_type(value_type(src))}, "
                            f"but a !pto.tensor_view is expected here")
        if value_type(src) != src_t:
            self.mismatch(c[2], src, src_t)
        offsets = self._index_list(self._between(c, "OFFSETS", ("SIZES",)))
        sizes = self._index_list(self._between(c, "SIZES", ()))
        t = self.type_of(c[-1])
        if not (isinstance(t, ViewType) and t.kind == "partition_tensor_view"):
            self.fail(c[-1], f"pto.partition_view: expected a !pto.partition_tensor_view "
                             f"result type, found {format_type(t)}")
        if t.dtype != src.dtype:
            self.fail(c[-1], f"type mismatch: {c[2]} has element type {format_dtype(src.dtype)}, "
                             f"the partition has {format_dtype(t.dtype)}")
        for what, xs in (("offsets", offsets), ("sizes", sizes)):
            if len(xs) != len(src.shape):
                self.fail(c[1], f"pto.partition_view: {what} has {len(xs)} entries, the "
                                f"source view has rank {len(src.shape)}")
        pv = PartView(rname, t.dtype, t.shape)
        self.define(rtok, pv)
        return PartitionView(pv, src, offsets, sizes, loc=self.loc(first))

    def s_subview(self, st) -> Subview:
        _, first, c = st
        op = c[1]
        (rtok, rname), = self.result_names(c[0], 1, str(op))
        src = self.lookup(c[2])
        if not isinstance(src, Tile):
            self.fail(c[2], f"type mismatch: {c[2]} has type {format_type(value_type(src))}, "
                            f"but a tile is expected here")
        offsets = self._index_list(self._between(c, op.type, ("SIZES",)))
        size_ops = self._between(c, "SIZES", ())
        sizes = []
        for s in (size_ops[1] if size_ops else []):
            if not (isinstance(s, tuple) and s[1].type == "INT"):
                self.fail(s[1] if isinstance(s, tuple) else s,
                          f"{op}: sizes must be integer constants")
            sizes.append(_int(str(s[1])))
        valid = ()
        for x in c:
            if isinstance(x, tuple) and x[0] == "valid":
                valid = self._index_list(x[2])
        types = [x for x in c if isinstance(x, Token) and x.type in ("PTO_TYPE", "NAME",
                                                                      "TYPE_ALIAS", "BUILTIN")]
        src_t = self.type_of(types[0])
        if value_type(src) != src_t:
            self.mismatch(c[2], src, src_t)
        if len(offsets) != 2 or len(sizes) != 2:
            self.fail(op, f"{op}: expected two offsets and two sizes")
        if len(types) > 1:
            rt = self.type_of(types[1])
            if not isinstance(rt, TileType):
                self.fail(types[1], f"{op}: expected a !pto.tile_buf result type")
        else:
            try:
                rt = TileType(src.type.loc, src.dtype, sizes[0], sizes[1],
                              blayout=src.type.blayout, slayout=src.type.slayout,
                              fractal=src.type.fractal, pad=src.type.pad)
            except UserError as e:
                self.fail(op, f"{op}: {e}")
        tile = Tile(rname, rt)
        self.define(rtok, tile)
        return Subview(tile, src, offsets, tuple(sizes), valid, str(op), loc=self.loc(first))

    def s_reshape(self, st) -> Reshape:
        """``%r = pto.treshape %t : !pto.tile_buf<A> -> !pto.tile_buf<B>``."""
        _, first, c = st
        op = c[1]
        (rtok, rname), = self.result_names(c[0], 1, str(op))
        src = self.lookup(c[2])
        if not isinstance(src, Tile):
            self.fail(c[2], f"type mismatch: {c[2]} has type {format_type(value_type(src))}, "
                            f"but a tile is expected here")
        src_t, rt = self.type_of(c[-3]), self.type_of(c[-1])
        if value_type(src) != src_t:
            self.mismatch(c[2], src, src_t)
        if not isinstance(rt, TileType):
            self.fail(c[-1], f"{op}: expected a !pto.tile_buf result type, found "
                             f"{format_type(rt)}")
        if rt.loc is not src_t.loc:
            self.fail(c[-1], f"{op}: the result must be in the source's buffer "
                             f"({src_t.loc.value}), found {rt.loc.value}")
        if rt.nbytes != src_t.nbytes:
            self.fail(c[-1], f"{op}: the result type has {rt.nbytes} bytes, the source "
                             f"{src_t.nbytes}; expected the same total size")
        tile = Tile(rname, rt)
        self.define(rtok, tile)
        return Reshape(tile, src, loc=self.loc(first))

    def s_setvalid(self, st) -> SetValidShape:
        _, first, c = st
        ops = c[1][1]
        if len(ops) != 3:
            self.fail(first, f"pto.set_validshape takes a tile, rows and cols; found "
                             f"{len(ops)} operands")
        tile = self.lookup(ops[0]) if not isinstance(ops[0], tuple) else None
        if not isinstance(tile, Tile):
            self.fail(ops[0] if not isinstance(ops[0], tuple) else ops[0][1],
                      "pto.set_validshape: the first operand must be a tile")
        t = self.type_of(c[-1])
        if tile.type != t:
            self.mismatch(ops[0], tile, t)
        rows = self.scalar_operand(ops[1], role="rows ")
        cols = self.scalar_operand(ops[2], role="cols ")
        return SetValidShape(tile, rows, cols, loc=self.loc(first))

    def s_load_scalar(self, st) -> ScalarOp:
        _, first, c = st
        (rtok, rname), = self.result_names(c[0], 1, "pto.load_scalar")
        ptr = self.lookup(c[2])
        types = [x for x in c[4:] if isinstance(x, Token) and x.type != "ARROW"]
        pt = self.type_of(types[0])
        if value_type(ptr) != pt:
            self.mismatch(c[2], ptr, pt)
        if not isinstance(ptr, GmPtr):
            self.fail(c[2], "pto.load_scalar: the address must be a !pto.ptr")
        offset = self.scalar_operand(c[3], role="offset ")
        rt = self.type_of(types[1]) if len(types) > 1 else format_dtype(ptr.dtype)
        if not isinstance(rt, str):
            self.fail(types[1], f"pto.load_scalar: expected a scalar result type, found "
                                f"{format_type(rt)}")
        res = Scalar(rname, rt)
        self.define(rtok, res)
        return ScalarOp((res,), "pto.load_scalar", (ptr, offset), loc=self.loc(first))

    def s_store_scalar(self, st) -> ScalarOp:
        _, first, c = st
        ptr = self.lookup(c[2])
        if not isinstance(ptr, GmPtr):
            self.fail(c[2], "pto.store_scalar: the address must be a !pto.ptr")
        types = next(x for x in c if isinstance(x, tuple) and x[0] == "types")
        value_t = None
        for tt in types[1]:
            t = self.type_of(tt)
            if isinstance(t, PtrType):
                if value_type(ptr) != t:
                    self.mismatch(c[2], ptr, t)
            else:
                value_t = t
        value = self.scalar_operand(c[1], value_t or format_dtype(ptr.dtype), role="value ")
        offset = self.scalar_operand(c[3], role="offset ")
        return ScalarOp((), "pto.store_scalar", (value, ptr, offset), loc=self.loc(first))

    def s_getter(self, st) -> ScalarOp:
        _, first, c = st
        op = c[1]
        (rtok, rname), = self.result_names(c[0], 1, str(op))
        t = "i64"
        attrs = {}
        for x in c[2:]:
            if isinstance(x, tuple) and x[0] == "dict":
                attrs = self.attrs(x)
            elif isinstance(x, Token):
                t = self.type_of(x)
                if not is_int_type(t):
                    self.fail(x, f"{op}: expected an integer result type, found {format_type(t)}")
        res = Scalar(rname, t)
        self.define(rtok, res)
        return ScalarOp((res,), str(op), (), attrs, loc=self.loc(first))

    def s_tvdim(self, st) -> ScalarOp:
        """``%d = pto.get_tensor_view_dim %tv, %i : !pto.tensor_view<...> -> index``."""
        _, first, c = st
        (rtok, rname), = self.result_names(c[0], 1, "pto.get_tensor_view_dim")
        view = self.lookup(c[2])
        if not isinstance(view, TensorView):
            self.fail(c[2], "pto.get_tensor_view_dim: expected a !pto.tensor_view operand")
        index = self.scalar_operand(c[3], role="dim ")
        types = [x for x in c[4:] if isinstance(x, Token) and x.type != "ARROW"]
        rt = self.type_of(types[1]) if len(types) > 1 else "index"
        res = Scalar(rname, rt if isinstance(rt, str) else "index")
        self.define(rtok, res)
        return ScalarOp((res,), "pto.get_tensor_view_dim", (view, index), loc=self.loc(first))

    def s_section(self, st) -> Section:
        _, first, c = st
        body = self.block(next(x for x in c if isinstance(x, tuple) and x[0] == "region"))
        return Section("cube" if c[0].type == "SECTION_CUBE" else "vector", body,
                       loc=self.loc(first))

    # --- sync ----------------------------------------------------------------------------------

    def _sync_text(self, elem) -> tuple[str, Token]:
        tok = elem[1]
        text = str(tok)
        if tok.type == "STRING":
            return _unquote(text), tok
        if tok.type == "HASH_ATTR":
            m = re.fullmatch(r"#pto\.(pipe|event|pipe_event_type|sync_op_type)<\s*(\w+)\s*>", text)
            if not m:
                self.fail(tok, f"expected #pto.pipe<...>, #pto.event<...> or "
                               f"#pto.pipe_event_type<...>, found '{_short(text)}'")
            return m.group(2), tok
        return text, tok

    def pipe(self, elem, endpoints: bool) -> str:
        if elem[1].type in ("SSA", "INT"):
            self.fail(elem[1], f"expected a pipe, found '{elem[1]}'")
        name, tok = self._sync_text(elem)
        if name in SYNC_PIPES:
            return name
        if endpoints and name in ENDPOINT_PIPE:
            return ENDPOINT_PIPE[name]
        expected = ", ".join(SYNC_PIPES) + (
            "; or an op class " + ", ".join(ENDPOINT_PIPE) if endpoints else "")
        self.fail(tok, f"unknown pipe '{name}'; expected one of: {expected}")

    def event(self, elem, dynamic: bool):
        tok = elem[1]
        if tok.type == "SSA":
            return self.scalar_operand(tok, role="event id ")
        if tok.type == "INT":
            return _int(str(tok))
        name, tok = self._sync_text(elem)
        m = re.fullmatch(r"EVENT_ID(\d+)", name)
        if not m:
            self.fail(tok, f"expected an event id EVENT_ID0..EVENT_ID7, found '{name}'")
        return int(m.group(1))

    def s_flag(self, st):
        _, first, c = st
        kw, e1, e2, e3 = c[:4]                # an attribute dict after the brackets is dropped
        kind = kw.type
        endpoints = kind in ("RECORD_EVENT", "WAIT_EVENT")
        src, dst = self.pipe(e1, endpoints), self.pipe(e2, endpoints)
        event = self.event(e3, kind.endswith("_DYN"))
        cls = SetFlag if kind in ("SET_FLAG", "SET_FLAG_DYN", "RECORD_EVENT") else WaitFlag
        return cls(src, dst, event, loc=self.loc(first))

    def s_barrier(self, st) -> Barrier:
        _, first, c = st
        return Barrier(self.pipe(c[1], True), loc=self.loc(first))

    def s_barrier_sync(self, st) -> Barrier:
        _, first, c = st
        return Barrier(self.pipe(c[1], True), loc=self.loc(first))

    # --- cross-core flags (FFTS) and the all-core barrier -------------------------------------

    def s_ffts(self, st):
        """``pto.sync.set|wait <P>, flag [{ffts_mode = m : i32}]``, ``pto.set_intra_block``
        / ``pto.wait_intra_block <P>, flag``."""
        _, first, c = st
        kw, pipe_elem, flag_elem = c[:3]
        pipe = self.pipe(pipe_elem, False)
        if pipe not in PIPES:
            self.fail(pipe_elem[1], f"{kw}: expected a pipe of a unit ({', '.join(PIPES)}), "
                                    f"found '{pipe}'")
        tok = flag_elem[1]
        if tok.type == "INT":
            flag = _int(str(tok))
        elif tok.type == "SSA":
            flag = self.scalar_operand(tok, role="flag id ")
        else:
            self.fail(tok, f"{kw}: expected a flag id (an integer 0..15 or a %value), "
                           f"found '{_short(str(tok))}'")
        mode = None
        intra = kw.type in ("SET_INTRA_BLOCK", "WAIT_INTRA_BLOCK")
        node = c[3] if len(c) > 3 else None
        for key_tok, val in (node[2] if node else ()):
            if str(key_tok) != "ffts_mode" or intra:
                self.fail(key_tok, f"{kw}: unknown attribute '{key_tok}'"
                                   + ("" if intra else "; expected ffts_mode"))
            mode = self._int_attr(key_tok, val)
            if mode not in FFTS_MODES:
                self.fail(key_tok, f"{kw}: ffts_mode: expected 0 (all cores of one type), 1 "
                                   f"(the vector units of a core) or 2 (cube <-> vector of a "
                                   f"core), found {mode}")
        cls = SyncSet if kw.type in ("SYNC_SET", "SET_INTRA_BLOCK") else SyncWait
        return cls(pipe, flag, mode, intra, loc=self.loc(first))

    def _int_attr(self, key_tok, val) -> int:
        """An integer attribute value, typed (``2 : i32``) or not."""
        parts = val[1] if val is not None else []
        lit = parts[0] if parts else None
        if not (isinstance(lit, tuple) and lit[0] == "lit" and lit[1].type == "INT"):
            self.fail(key_tok, f"{key_tok}: expected an integer")
        return _int(str(lit[1]))

    def s_set_ffts(self, st) -> SetFfts:
        _, first, c = st
        value, t = c[1], c[-1]
        return SetFfts(self.operand(value, self.type_of(t)), loc=self.loc(first))

    def s_syncall(self, st) -> SyncAll:
        """``pto.syncall(ops : types) mode = #pto.sync_all_mode<M>, core_type =
        #pto.sync_core_type<T>``."""
        _, first, c = st
        ops = next((x for x in c if isinstance(x, tuple) and x[0] == "ops"), None)
        types = next((x for x in c if isinstance(x, tuple) and x[0] == "types"), None)
        operands = self.typed_list(ops, types, first, "pto.syncall")
        if len(operands) > 3:
            self.fail(first, f"pto.syncall: expected at most 3 operands, found {len(operands)}")
        found = {}
        enums = {"mode": ("sync_all_mode", SYNCALL_MODES),
                 "core_type": ("sync_core_type", SYNCALL_CORE_TYPES)}
        for x in c:
            if not (isinstance(x, tuple) and x[0] == "kv"):
                continue
            key, val = str(x[1]), str(x[2])
            if key not in enums:
                self.fail(x[1], f"pto.syncall: unknown key '{key}'; expected mode, core_type")
            if key in found:
                self.fail(x[1], f"pto.syncall: '{key}' given twice")
            kind, allowed = enums[key]
            m = re.fullmatch(rf"#pto\.{kind}<\s*(\w+)\s*>", val)
            if not m or m.group(1) not in allowed:
                self.fail(x[2], f"pto.syncall: {key}: expected #pto.{kind}<"
                                f"{'|'.join(allowed)}>, found '{_short(val)}'")
            found[key] = m.group(1)
        for key in enums:
            if key not in found:
                self.fail(first, f"pto.syncall: expected '{key} = ...', found none")
        return SyncAll(found["mode"], found["core_type"], operands, loc=self.loc(first))

    # --- cube <-> vector pipes -----------------------------------------------------------------

    def s_pipe(self, st) -> PipeOp:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        op = c[i]
        attrs: dict = {}
        operands = []
        ret = None
        for part in c[i + 1:]:
            if part[0] == "dict":
                for k, v in self.attrs(part).items():
                    if k in attrs:
                        self.fail(part[1], f"attribute '{k}' given twice")
                    attrs[k] = v
            elif part[0] == "paren":
                for name_tok, val, ty in (part[1] or []):
                    t = self.type_of(ty) if ty is not None else None
                    v = self.operand(val, t)
                    operands.append((str(name_tok), v) if name_tok is not None else v)
            elif part[0] == "ret":
                if ret is not None:
                    self.fail(part[1], f"{op}: result type given twice")
                ret = self.type_of(part[1])
        names = self.result_names(results)
        if len(names) > 1:
            self.fail(first, f"{op} has at most one result")
        res = []
        if names:
            if ret is None:
                self.fail(names[0][0], f"{op}: a result needs its type ('-> T')")
            v = make_value(names[0][1], ret)
            self.define(names[0][0], v)
            res.append(v)
        elif ret is not None:
            self.fail(op, f"{op}: '-> T' without a result name")
        return PipeOp(tuple(res), str(op), tuple(operands), attrs, loc=self.loc(first))

    # --- syntax errors -------------------------------------------------------------------------

    def syntax_error(self, e: UnexpectedInput) -> ParseError:
        stack = []
        ip = getattr(e, "interactive_parser", None)
        if ip is not None:
            stack = ip.parser_state.value_stack
        op = None
        for item in reversed(stack):
            if isinstance(item, Token) and (item.type == "OPNAME" or item.type in _OP_KEYWORDS):
                op = item
                break
        prev = stack[-1] if stack else None
        if op is not None and op.type == "OPNAME" and _opcode_of(str(op)) is not None:
            after = stack[[i for i, x in enumerate(stack) if x is op][-1] + 1:]
            nxt = after[0] if after else getattr(e, "token", None)
            if isinstance(nxt, tuple) or isinstance(nxt, Token) and nxt.type in ("SSA", "LPAR"):
                return self._err(op, f"unsupported: the level-1 SSA form of '{op}' (not used by "
                                     f"real kernels); write {op} ins(...) outs(...)")
        if isinstance(e, UnexpectedCharacters):
            pos = e.pos_in_stream
            ch = self.text[pos] if pos < len(self.text) else ""
            at = pos
            if op is not None and op.type == "OPNAME" and not _is_supported_op(str(op)):
                return self._err(op, f"unsupported op '{op}'")
            if ch == "^":
                msg = "unsupported: MLIR blocks (^bb labels) are not used by tile kernels"
            else:
                msg = f"unexpected character {ch!r}"
            return self._err(at, msg)
        tok = getattr(e, "token", None)
        if tok is None or tok.type == "$END" or isinstance(e, UnexpectedEOF):
            if op is not None and op.type == "OPNAME" and not _is_supported_op(str(op)):
                return self._err(op, f"unsupported op '{op}'")
            return self._err(len(self.text.rstrip()), "unexpected end of input"
                             + self._expected(e))
        if tok.type == "STRING" and re.fullmatch(r'"[A-Za-z_]\w*\.[\w.]+"', str(tok)):
            return self._err(tok, f"unsupported: generic MLIR operation form {tok}(...); "
                                  f"write the op in its custom form")
        if isinstance(prev, Token) and prev.type == "NAME" and str(prev) in _UNSUPPORTED_TYPES:
            return self._err(prev, f"unsupported type '{prev}<...>'")
        if tok.type == "NAME" and str(tok) in _UNSUPPORTED_TYPES:
            return self._err(tok, f"unsupported type '{tok}<...>'")
        if op is not None and op.type == "OPNAME" and not _is_supported_op(str(op)):
            return self._err(op, f"unsupported op '{op}'")
        if tok.type == "OPNAME" and not _is_supported_op(str(tok)):
            return self._err(tok, f"unsupported op '{tok}'")
        return self._err(tok, f"unexpected '{_short(str(tok), 40)}'" + self._expected(e))

    def _expected(self, e) -> str:
        names = sorted(getattr(e, "expected", None) or getattr(e, "allowed", None) or ())
        if not names:
            return ""
        shown = []
        for n in names:
            if n in _FRIENDLY:
                shown.append(_FRIENDLY[n])
                continue
            try:
                term = _parser().get_terminal(n)
            except KeyError:
                continue
            pat = term.pattern
            shown.append(f"'{pat.value}'" if pat.type == "str" else n.lower())
        shown = sorted(set(shown))
        if len(shown) > 10:
            shown = shown[:10] + ["..."]
        return "; expected " + ("one of: " if len(shown) > 1 else "") + ", ".join(shown)

    def _err(self, at, msg) -> ParseError:
        line, col = self._linecol(at)
        return ParseError(self.file, line, col, msg, self.text)


_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')


def _int(text: str) -> int:
    """An INT token: decimal (leading zeros allowed) or 0x-hexadecimal, optional sign."""
    body = text.lstrip("+-")
    value = int(body[2:], 16) if body[:2].lower() == "0x" else int(body)
    return -value if text.startswith("-") else value


_ESCAPE = re.compile(r'\\(?:([0-9a-fA-F]{2})|(.))', re.S)
_ESCAPED = {"n": "\n", "t": "\t"}


def _unquote(s: str) -> str:
    """The value of an MLIR string literal: ``\\"``, ``\\\\``, ``\\n``, ``\\t`` and ``\\XX`` (hex)
    escapes, as the MLIR lexer reads them (the printer writes the same)."""
    body = s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s
    if "\\" not in body:
        return body
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1)
                       else _ESCAPED.get(m.group(2), m.group(2)), body)


def _symbol(tok) -> str:
    s = str(tok)[1:]
    return _unquote(s) if s.startswith('"') else s


def _entry(functions: list) -> str:
    """The kernel: the first function marked ``pto.entry``, else the first public function
    with a body that no other function calls, else the first function."""
    kernels = Program(tuple(functions)).kernels()
    return kernels[0] if kernels else functions[0].name


# --- public ----------------------------------------------------------------------------------

def parse_text(text: str, filename: str = "<string>") -> Program:
    """Parse PTO IR ``text``; raise ParseError (``FILE:LINE:COL: error: ...``) on any mistake."""
    if not isinstance(text, str):
        raise TypeError("parse_text expects str")
    if text.startswith("\ufeff"):             # a UTF-8 byte order mark
        text = text[1:]
    remember_source(filename, text)
    low = _Lowering(filename, text)
    # The parse allocates many small acyclic objects; the cyclic collector would rescan
    # them again and again (a third of the time on large files).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            tree = _parser().parse(text)
        except UnexpectedInput as e:
            raise low.syntax_error(e) from None
        return low.program(tree)
    finally:
        if gc_was_enabled:
            gc.enable()


def parse_file(path) -> Program:
    """Parse the ``.pto`` file at ``path`` (diagnostics name it as given)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read: {e}") from None
    return parse_text(text, str(path))
