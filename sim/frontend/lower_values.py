"""The core every statement family of the lowering builds on: SSA scopes, typed operands,
literals, attributes, and the position of every error.

Stage 2 of the front end walks the tuples of ``sim.frontend.grammar`` and builds the
program IR. ``ValueScope`` holds what every statement needs:

* scopes of SSA names: every use of ``%x`` resolves to the one value object its definition
  created (the same ``Tile`` for every use of a tile), a name is defined once, and
  ``%r:N`` names the N results ``r#0`` .. ``r#N-1``;
* types (``!pto.*`` through ``sim.frontend.pto_types``, aliases, builtin scalars) and the
  check of every typed use against the value's type (``ins(%a : T)`` with ``%a`` not of
  type ``T`` is a type mismatch);
* literals typed by their use, and attribute values (plain values, enum names, or the
  source text kept as ``RawAttr``);
* the keys of an attribute dictionary an op does not read (``check_keys``, against the
  tables of ``sim.frontend.attr_keys``): each one a located warning, never dropped in
  silence (``Program.warnings``).

Every mistake is a ``ParseError`` located at the token it concerns (``fail``). The
statement families (``lower_ops``, ``lower_control``, ``lower_memory``, ``lower_sync``)
subclass ``ValueScope``; ``sim.frontend.parse`` joins them into the lowering.
"""

from __future__ import annotations

import re
from typing import NoReturn

import attrs as _attrs
from lark import Token

from sim.base.errors import UserError
from sim.frontend.attr_keys import UNDERSTOOD, unmodelled_message
from sim.frontend.diagnostics import ParseError
from sim.frontend.grammar import node_start
from sim.frontend.pto_types import TypeProblem, memref_gm, memref_tile, parse_pto_type, shorten
from sim.frontend.syntax import (
    ENUM_ATTR_KINDS,
    ViewType,
    float_from_bits,
    format_type,
    is_float_type,
    is_scalar_type,
    value_type,
)
from sim.isa.precision import parse_precision
from sim.isa.program import Const, RawAttr, Scalar, SourceLoc
from sim.isa.tile import BLayout, Loc, TileType

__all__ = ["ValueScope", "int_token", "unquote", "symbol_name"]


_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')


def int_token(text: str) -> int:
    """An INT token: decimal (leading zeros allowed) or 0x-hexadecimal, optional sign."""
    body = text.lstrip("+-")
    value = int(body[2:], 16) if body[:2].lower() == "0x" else int(body)
    return -value if text.startswith("-") else value


_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{2})|(.))", re.S)
_ESCAPED = {"n": "\n", "t": "\t"}


def unquote(s: str) -> str:
    """The value of an MLIR string literal: ``\\"``, ``\\\\``, ``\\n``, ``\\t`` and ``\\XX`` (hex)
    escapes, as the MLIR lexer reads them (the printer writes the same)."""
    body = s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s
    if "\\" not in body:
        return body
    return _ESCAPE.sub(
        lambda m: chr(int(m.group(1), 16)) if m.group(1) else _ESCAPED.get(m.group(2), m.group(2)),
        body,
    )


def symbol_name(tok) -> str:
    """The function name of a SYMBOL token: ``@name`` or ``@"quoted name"``."""
    s = str(tok)[1:]
    return unquote(s) if s.startswith('"') else s


class ValueScope:
    """The state of one lowering (file, text, scopes, aliases, signatures) and the
    operations on values every statement family shares."""

    def __init__(self, filename: str, text: str):
        self.file, self.text = filename, text
        self.scopes: list[dict] = []
        self.aliases: dict[str, object] = {}
        self.attr_aliases: dict[str, tuple] = {}  # #name = value (top of the file)
        self.calls: list = []  # (token, callee, args, result types)
        self.left_blayout: BLayout | None = None  # set from the module's target attributes
        self.signatures: dict[str, tuple] = {}  # @name -> (argument types, result types)
        # (line, col, ``FILE:LINE:COL: warning: ...``) of each attribute key the simulator
        # does not model (sim.frontend.attr_keys)
        self.warnings: list[tuple] = []

    # --- errors and positions --------------------------------------------------------------

    def fail(self, at, message: str) -> NoReturn:
        line, col = self._linecol(at)
        raise ParseError(self.file, line, col, message, self.text)

    def _linecol(self, at) -> tuple[int, int]:
        if isinstance(at, Token):
            if at.line is not None:
                return at.line, at.column or 0
            at = at.start_pos or 0
        if isinstance(at, tuple):
            at = node_start(at)
        pos = max(0, min(int(at), len(self.text)))
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def loc(self, tok: Token) -> SourceLoc:
        return SourceLoc(self.file, tok.line or 0, tok.column or 0)

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

    def result_names(self, results, want: int | None = None, what: str = "this op") -> list:
        """[(token, name)] of a results tuple (``%r:2`` gives r#0, r#1)."""
        out = []
        for tok, count_tok in results[1] if results else []:
            base = str(tok)[1:]
            if count_tok is None:
                out.append((tok, base))
                continue
            count = int_token(str(count_tok))
            if not 1 <= count <= 256:
                self.fail(count_tok, f"result group %{base}:{count_tok}: expected 1..256 results")
            out += [(tok, f"{base}#{i}") for i in range(count)]
        if want is not None and len(out) != want:
            at = results[1][0][0] if results else None
            if at is None:
                return out
            self.fail(
                at,
                f"{what} has {want} result{'s' if want != 1 else ''}, "
                f"found {len(out)} name{'s' if len(out) != 1 else ''}",
            )
        return out

    # --- types and operands ----------------------------------------------------------------

    def type_of(self, tok):
        if tok.type == "PTO_TYPE":
            try:
                return self.arch_layout(parse_pto_type(str(tok)), tok)
            except TypeProblem as e:
                self.fail(tok.start_pos + e.offset, e.message)
        if tok.type == "TYPE_ALIAS":
            t = self.aliases.get(str(tok))
            if t is None:
                if "<" in str(tok):  # !dialect.type<...> of another dialect
                    self.fail(tok, f"unsupported type '{shorten(str(tok))}'")
                self.fail(tok, f"undefined type alias '{tok}'")
            return self.arch_layout(t, tok)
        name = str(tok)
        if tok.type == "BUILTIN":  # memref<...>, vector<...>, tensor<...> ...
            t = memref_tile(name)
            if t is not None:
                return self.arch_layout(t, tok)
            gm = memref_gm(name)
            if gm is not None:  # a GM tensor argument: read as its whole window (parse.py)
                return ViewType("partition_tensor_view", gm[0], gm[1])
            kind = name.split("<", 1)[0]
            why = {
                "memref": ": a memref is simulated as a static on-chip tile or a static GM "
                "tensor argument with offset 0 (instructions-more.md §3.10)",
                "vector": ": register vectors (TMRGSORT's vector<4xi16> executed counts, "
                "SIMT / VPTO values) are outside the tile model (instructions-more.md §3.10)",
            }.get(kind, "")
            self.fail(tok, f"unsupported type '{kind}<...>'{why}")
        if not is_scalar_type(name):
            self.fail(tok, f"unsupported type '{name}'")
        return name

    def arch_layout(self, t, tok):
        """As the PTO compiler's parser does, a ``left`` (L0A) tile takes the outer layout
        of the module's target: row-major on A2/A3, column-major on A5."""
        if (
            self.left_blayout is None
            or not isinstance(t, TileType)
            or t.loc is not Loc.LEFT
            or t.blayout is self.left_blayout
        ):
            return t
        try:
            return _attrs.evolve(t, blayout=self.left_blayout)
        except UserError as e:
            self.fail(tok, f"invalid tile_buf for this target: {e}")

    def types(self, node) -> list:
        return [self.type_of(t) for t in (node[1] if node else [])]

    def mismatch(self, at, value, declared, role: str = "") -> None:
        name = f"%{getattr(value, 'name', '?')}"
        self.fail(
            at,
            f"type mismatch: {role}{name} has type {format_type(value_type(value))}, "
            f"but {format_type(declared)} is expected here",
        )

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
        value = int_token(text)
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
        if isinstance(op, tuple):  # literal
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
            self.fail(
                op,
                f"type mismatch: {role}{op} has type {format_type(value_type(v))}, "
                f"but a scalar is expected here",
            )
        return v

    def typed_list(self, ops, types, anchor, where: str) -> tuple:
        ops = ops[1] if ops else []
        if types is not None:
            ts = self.types(types)
            if len(ts) != len(ops):
                self.fail(
                    anchor,
                    f"{where}(...) has {len(ops)} operand{'s' * (len(ops) != 1)} "
                    f"but {len(ts)} type{'s' * (len(ts) != 1)}",
                )
            return tuple(self.operand(o, t) for o, t in zip(ops, ts, strict=True))
        return tuple(self.operand(o, None, what=f" in {where}(...)") for o in ops)

    # --- attributes --------------------------------------------------------------------------

    def attrs(self, node) -> dict:
        out: dict = {}
        if node is None:
            return out
        for key_tok, val in node[2]:
            key = unquote(str(key_tok)) if key_tok.type == "STRING" else str(key_tok)
            if key in out:
                self.fail(key_tok, f"attribute '{key}' given twice")
            out[key] = self.attr_value(key, val)
        return out

    def check_keys(self, op: str, node) -> None:
        """Warn about every key of the attribute dictionary ``node`` (None: no dictionary)
        that ``op`` neither understands nor knows to have no effect (``sim.frontend.
        attr_keys``): a key is never dropped in silence."""
        if node is None:
            return
        for key_tok, val in node[2]:
            key = unquote(str(key_tok)) if key_tok.type == "STRING" else str(key_tok)
            shown = None if val is None else shorten(self.raw(val[2], val[3]).text, 60)
            self.warn_at(key_tok, unmodelled_message(op, key, shown))

    def warn_at(self, at, message: str | None) -> None:
        """Keep ``message`` (None: nothing to say) as a warning located at ``at``."""
        if message is not None:
            line, col = self._linecol(at)
            self.warnings.append((line, col, f"{self.file}:{line}:{col}: warning: {message}"))

    def kept_attrs(self, op: str, children) -> tuple:
        """``check_dicts``, and the items of those dictionaries the statement keeps: every
        key ``op`` does not read into a field of its own, so that the printed program
        carries it (and warns again where this one did)."""
        self.check_dicts(op, children)
        out: dict = {}
        for x in children:
            if type(x) is tuple and x and x[0] == "dict":
                out.update(
                    (k, v) for k, v in self.attrs(x).items() if k not in UNDERSTOOD.get(op, ())
                )
        return tuple(out.items())

    def check_dicts(self, op: str, children) -> None:
        """``check_keys`` for every attribute dictionary among a statement's children."""
        for x in children:
            if type(x) is tuple and x and x[0] == "dict":
                self.check_keys(op, x)

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
            return int_token(str(tok))
        if len(parts) == 1 and isinstance(first, Token):
            if first.type == "STRING":
                return unquote(str(first))
            if aliases and first.type == "HASH_ATTR" and str(first) in self.attr_aliases:
                return self.attr_value(key, self.attr_aliases[str(first)], False)
            if first.type == "HASH_ATTR":
                try:
                    mode = parse_precision(str(first))
                except ValueError as e:
                    self.fail(first, str(e))
                if mode is not None:  # a precision mode (sim.isa.precision)
                    return mode
            if first.type == "HASH_ATTR" and key in ENUM_ATTR_KINDS:
                m = re.fullmatch(r"#pto(?:\.\w+)?<\s*(?:\w+\s+)?(\w+)\s*>", str(first))
                if m:
                    return m.group(1)
        return self.raw(start, end)
