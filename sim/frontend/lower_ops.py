"""Lowering of the compute statements: tile instructions, ``pto.tgetval`` and ``arith``.

* A tile instruction is written in destination-passing form,
  ``pto.tadd ins(%a, %b : T, T) outs(%c : T) {attrs}``: it defines no value, ``ins`` are
  its sources, ``outs`` its destinations, and its opcode is the op name upper-cased
  (``pto.tadd`` -> ``TADD``, one of ``sim.isa.opcodes.OPCODES``). The level-1 SSA
  spelling (``%c = pto.tadd %a, %b``) is refused: real kernels do not use it.
* ``%v = pto.tgetval ins(%tile, %i : ...) outs : T`` reads one element as a scalar.
* ``arith`` ops (``SUPPORTED_ARITH``) compute scalars: constants, integer and float
  arithmetic, comparisons with their predicate, ``select`` and casts ``: T1 to T2``.

``opcode_of`` / ``is_supported_op`` also tell the syntax-error reporting of
``sim.frontend.parse`` whether an op it stopped at is one the simulator knows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lark import Token

from sim.frontend.lower_extra import EXTRA_SIMPLE_OPS
from sim.frontend.lower_values import ValueScope
from sim.frontend.pto_types import shorten
from sim.frontend.syntax import format_type, is_int_type, value_type
from sim.isa.opcodes import OPCODES
from sim.isa.program import Arith, Const, Instr, RawAttr, Scalar, ScalarOp
from sim.isa.tile import Tile

__all__ = ["OpLowering", "SUPPORTED_ARITH", "opcode_of", "is_supported_op"]

SUPPORTED_ARITH = {
    "constant",
    "addi",
    "subi",
    "muli",
    "divsi",
    "divui",
    "remsi",
    "remui",
    "ceildivsi",
    "ceildivui",
    "floordivsi",
    "maxsi",
    "minsi",
    "maxui",
    "minui",
    "andi",
    "ori",
    "xori",
    "shli",
    "shrsi",
    "shrui",
    "addf",
    "subf",
    "mulf",
    "divf",
    "remf",
    "maximumf",
    "minimumf",
    "maxnumf",
    "minnumf",
    "negf",
    "cmpi",
    "cmpf",
    "select",
    "index_cast",
    "index_castui",
    "trunci",
    "extsi",
    "extui",
    "sitofp",
    "uitofp",
    "fptosi",
    "fptoui",
    "bitcast",
    "truncf",
    "extf",
}
_UNARY = {"negf"}
_CASTS = {
    "index_cast",
    "index_castui",
    "trunci",
    "extsi",
    "extui",
    "sitofp",
    "uitofp",
    "fptosi",
    "fptoui",
    "bitcast",
    "truncf",
    "extf",
}
_CMPI = {"eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"}
_CMPF = {
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
}


# ops of instructions-more.md refused with the reference's reason
_REFUSED = {
    "pto.tquant.mx": "the A5 microscaling quantisation is not modelled (instructions-more.md "
    "§3.1: its rounding law is given only as 'stochastic' and A5 has no cost formula for it)",
}
# older PTOAS spellings of one op (instructions-more.md §3.6): the mode follows the operands
_ALIASES = {"pto.tfillpad_expand": "TFILLPAD", "pto.tfillpad_inplace": "TFILLPAD"}


def opcode_of(name: str) -> str | None:
    """The opcode of a ``pto.*`` tile instruction name, None for any other name."""
    if name in _ALIASES:
        return _ALIASES[name]
    if not name.startswith("pto."):
        return None
    key = name[4:].upper().replace(".", "_")
    return key if key in OPCODES else None


# PTO ops written in the DPS spelling that are not tile instructions of OPCODES
_DPS_SCALAR_OPS = {"pto.tgetval"}


def is_supported_op(name: str) -> bool:
    """Whether the simulator runs the op ``name`` (an arith op or a PTO tile op)."""
    if name.startswith("arith."):
        return name[6:] in SUPPORTED_ARITH
    return opcode_of(name) is not None or name in _DPS_SCALAR_OPS or name in EXTRA_SIMPLE_OPS


class OpLowering(ValueScope):
    """``s_dps`` (tile instructions and ``pto.tgetval``) and ``s_simple`` (``arith``)."""

    # What the parser provides (class-level declaration only, for the type checker).
    extra_simple: Callable[[Any], Any]

    def s_dps(self, st) -> Instr | ScalarOp:
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
        opcode = opcode_of(name)
        if opcode is None and name in _REFUSED:
            self.fail(op, f"unsupported op '{name}': {_REFUSED[name]}")
        if opcode is None:
            self.fail(op, f"unsupported op '{name}'")
        if results is not None:
            self.fail(first, f"'{name}' in destination-passing form returns no values")
        attrs: dict = {}
        assert ins is not None  # grammar.lark: a dps statement always has its ins(...)
        ins_ops, ins_types, ins_dict = self._dps_part(ins)
        self._merge_attrs(attrs, ins_dict)
        ins_vals = self.typed_list(ins_ops, ins_types, ins[1][0], "ins")
        outs_vals = ()
        if outs is not None:
            o_ops, o_types, o_dict = self._dps_part(outs)
            self._merge_attrs(attrs, o_dict)
            if o_ops is None and o_types is not None:
                self.fail(
                    outs[1][0],
                    f"'{name}': outs without operands returns a value, which "
                    f"only ops outside the simulated set do",
                )
            outs_vals = self.typed_list(o_ops, o_types, outs[1][0], "outs")
        self._merge_attrs(attrs, attrs_node)
        return Instr(opcode, outs_vals, ins_vals, attrs, loc=self.loc(first))

    @staticmethod
    def _dps_part(part) -> tuple:
        """(operands, types, attribute dictionary) of an ``ins(...)`` / ``outs(...)`` part,
        each None when absent."""
        body = part[1][1:]
        return tuple(
            next((x for x in body if x[0] == kind), None) for kind in ("ops", "types", "dict")
        )

    def _merge_attrs(self, attrs: dict, node) -> None:
        """The keys of the attribute dictionary ``node`` (None: none) into ``attrs``; a key
        one of the op's dictionaries already gave is an error."""
        for k, v in self.attrs(node).items():
            if k in attrs:
                self.fail(node[1], f"attribute '{k}' given twice")
            attrs[k] = v

    def tgetval(self, st, op, results, ins, outs, attrs_node) -> ScalarOp:
        """``%v = pto.tgetval ins(%tile, %i : !pto.tile_buf<...>, index) outs : T``: element
        ``%i`` of the tile (flat, in storage order) as a scalar of type ``T``."""
        _, first, c = st
        name = str(op)
        if results is None:
            self.fail(op, f"{name} has 1 result, found 0 names")
        ((rtok, rname),) = self.result_names(results, 1, name)
        for x in c:
            if isinstance(x, tuple) and x[0] == "ret":
                self.fail(x[1][1][0], f"{name}: unexpected '-> T'; the result type is 'outs : T'")
        attrs: dict = {}
        ins_ops, ins_types, ins_dict = self._dps_part(ins)
        self._merge_attrs(attrs, ins_dict)
        self.check_keys(name, ins_dict)
        vals = self.typed_list(ins_ops, ins_types, ins[1][0], "ins")
        if (
            len(vals) != 2
            or not isinstance(vals[0], Tile)
            or not isinstance(vals[1], (Scalar, Const))
            or not is_int_type(value_type(vals[1]))
        ):
            self.fail(ins[1][0], f"{name}: expected ins(%tile, %index : !pto.tile_buf<...>, index)")
        o_ops, o_types, _ = self._dps_part(outs) if outs is not None else (None, None, None)
        if outs is None or o_ops is not None or o_types is None or len(o_types[1]) != 1:
            self.fail(
                outs[1][0] if outs is not None else op,
                f"{name}: expected 'outs : T' giving the scalar result type",
            )
        rt = self.type_of(o_types[1][0])
        if not isinstance(rt, str):
            self.fail(
                o_types[1][0], f"{name}: expected a scalar result type, found {format_type(rt)}"
            )
        self._merge_attrs(attrs, attrs_node)
        self.check_keys(name, attrs_node)
        res = Scalar(rname, rt)
        self.define(rtok, res)
        return ScalarOp((res,), name, vals, attrs, loc=self.loc(first))

    def s_simple(self, st) -> Arith:
        _, first, c = st
        results, op, args = c[0], c[1], c[2][1]
        name = str(op)
        if name in EXTRA_SIMPLE_OPS:
            return self.extra_simple(st)
        short = name[6:] if name.startswith("arith.") else None
        if short not in SUPPORTED_ARITH:
            if opcode_of(name) is not None:
                self.fail(
                    op,
                    f"unsupported: the level-1 SSA form of '{name}' (not used by real "
                    f"kernels); write {name} ins(...) outs(...)",
                )
            self.fail(op, f"unsupported op '{name}'")
        ((rtok, rname),) = self.result_names(results, 1, name)
        flags, attrs_node, sig = [], None, None
        for x in c[3:]:
            if x[0] == "flag":
                flags.append(f"{x[1][0]}<{', '.join(map(str, x[1][1:]))}>")
            elif x[0] == "dict":
                attrs_node = x
            elif x[0] == "sig":
                sig = x
        attrs = self.attrs(attrs_node)
        self.check_keys(name, attrs_node)
        if flags:
            attrs["flags"] = RawAttr(" ".join(flags))
        types, conv = [], None
        if sig is not None:
            types = self.types(sig[1][0])
            if len(sig[1]) > 1:
                conv = sig[1][1]
                to_types = self.types(sig[1][2])
        for t, tt in zip(types, sig[1][0][1] if sig else [], strict=True):
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
                self.fail(
                    pred_tok[1] if isinstance(pred_tok, tuple) else pred_tok,
                    f"'{name}': unknown predicate '{pred}'; expected one of: "
                    f"{', '.join(sorted(valid))}",
                )
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
            operands = (
                self.scalar_operand(args[0], cond_t),
                self.scalar_operand(args[1], t),
                self.scalar_operand(args[2], t),
            )
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
        body = text[text.index("<") + 1 : -1].strip()
        while body.startswith("[") and body.endswith("]"):
            body = body[1:-1].strip()
        if not text.startswith("dense<") or (types and not isinstance(types[0], str)):
            self.fail(
                tok,
                f"unsupported: constant '{shorten(text)}' (only scalar constants are simulated)",
            )
        kind = (
            "TRUE"
            if body == "true"
            else "FALSE"
            if body == "false"
            else "FLOAT"
            if re.fullmatch(r"[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+)", body)
            else "INT"
            if re.fullmatch(r"[-+]?(0x[0-9a-fA-F]+|\d+)", body)
            else None
        )
        if kind is None:
            self.fail(
                tok,
                f"unsupported: constant '{shorten(text)}' (only a splat of one "
                f"number is a scalar constant)",
            )
        return (
            "lit",
            Token(
                kind,
                body,
                tok.start_pos,
                tok.line,
                tok.column,
                tok.end_line,
                tok.end_column,
                tok.end_pos,
            ),
        )
