"""Lowering of the structured control flow: ``scf.for``, ``scf.if``, their ``scf.yield``,
``func.call`` / ``return``, and the ``pto.section.cube`` / ``pto.section.vector`` bodies.

A loop or a branch opens a scope for its region: an ``scf.for`` binds its induction
variable and its ``iter_args`` (the values carried from one iteration to the next) there,
and its results, like an ``scf.if``'s, are defined after it, typed by the op's result
types. ``scf.yield`` and ``return`` end a region and must give exactly the values the
enclosing op or function expects, type by type. A call may name a function defined later:
``s_call`` records it and ``check_calls`` checks every call against the signatures once
all functions are known. Regions themselves are lowered by ``block`` of
``sim.frontend.parse``.
"""

from __future__ import annotations

from collections.abc import Callable

from lark import Token

from sim.frontend.lower_values import ValueScope, symbol_name
from sim.frontend.syntax import format_type, is_int_type, make_value, value_type
from sim.isa.program import Call, For, If, Return, Scalar, Section, Yield

__all__ = ["ControlLowering"]


class ControlLowering(ValueScope):
    """``s_for``, ``s_if``, ``s_call``, ``s_section`` and the two terminators."""

    vector_body: bool = False  # in a pto.section.vector body (lower_extra's fences read it)

    # What the parser provides (class-level declaration only, for the type checker).
    block: Callable[..., tuple]

    def s_for(self, st) -> For:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        kw, iv_tok, lb, _, ub, _, step = c[i : i + 7]
        iter_node = ftype = region = None
        kept: tuple = ()
        for x in c[i + 7 :]:
            if x[0] == "iter":
                iter_node = x
            elif x[0] == "fortype":
                ftype = x
            elif x[0] == "region":
                region = x
            elif x[0] == "dict":  # MLIR prints an op's attributes after its region
                kept = self.kept_attrs("scf.for", [x])
        iv_type = self.type_of(ftype[1]) if ftype else "index"
        if ftype and not is_int_type(iv_type):  # the default "index" is one
            self.fail(
                ftype[1],
                f"scf.for: the induction variable must be an integer, found {format_type(iv_type)}",
            )
        lower = self.scalar_operand(lb, iv_type)
        upper = self.scalar_operand(ub, iv_type)
        stepv = self.scalar_operand(step, iv_type)
        inits, carried, ctypes = [], [], []
        if iter_node is not None:
            pairs, tys = iter_node[1], self.types(iter_node[2])
            if len(pairs) != len(tys):
                self.fail(
                    iter_node[2][1][0] if iter_node[2][1] else kw,
                    f"scf.for: {len(pairs)} iter_args but {len(tys)} result types",
                )
            for (tok, init), t in zip(pairs, tys, strict=True):
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
        res = []  # no names (results unused): the op has no result values
        for (tok, n), t in zip(names, ctypes, strict=False):
            v = make_value(n, t)
            self.define(tok, v)
            res.append(v)
        return For(
            iv,
            lower,
            upper,
            stepv,
            body,
            tuple(v for _, v in carried),
            tuple(inits),
            tuple(res),
            loc=self.loc(first),
            attrs=kept,
        )

    def s_if(self, st) -> If:
        _, first, c = st
        results = c[0] if isinstance(c[0], tuple) and c[0][0] == "results" else None
        i = 1 if results is not None else 0
        cond_tok = c[i + 1]
        rtypes, then_r, else_r = [], None, None
        kept: tuple = ()
        for x in c[i + 2 :]:
            if x[0] == "iftypes":
                rtypes = self.types(x[1])
            elif x[0] == "region":
                then_r = x
            elif x[0] == "else":
                else_r = x[1]
            elif x[0] == "dict":
                kept = self.kept_attrs("scf.if", [x])
        cond = self.scalar_operand(cond_tok, "i1")
        names = self.result_names(results, len(rtypes), "scf.if") if results else []
        then_b = self.block(then_r, yields=rtypes)
        if rtypes and else_r is None:
            self.fail(c[i], "scf.if with results needs an else region")
        else_b = self.block(else_r, yields=rtypes) if else_r is not None else ()
        res = []  # no names (results unused): the op has no result values
        for (tok, n), t in zip(names, rtypes, strict=False):
            v = make_value(n, t)
            self.define(tok, v)
            res.append(v)
        return If(cond, then_b, else_b, tuple(res), loc=self.loc(first), attrs=kept)

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
            self.fail(
                first,
                f"{what} gives {len(values)} value{'s' * (len(values) != 1)}, "
                f"{expects} {len(expected)}",
            )
        ops: list = next((x for x in c[1:] if x[0] == "ops"), ("ops", []))[1]
        for v, t, at in zip(values, expected, ops, strict=True):
            if value_type(v) != t:
                self.mismatch(at, v, t)
        return values

    def yield_stmt(self, st, expected) -> Yield:
        _, first, c = st
        if expected is None:
            self.fail(first, "scf.yield outside scf.for / scf.if")
        values = self._terminator_values(
            first, c, "scf.yield", expected, "the enclosing op expects"
        )
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
        args = self.typed_list(
            ops, arg_types if arg_types is not None else ("types", []), sym, "call"
        )
        names = self.result_names(results, len(rtypes), "func.call") if results else []
        res = []  # no names (results unused): the op has no result values
        for (tok, n), t in zip(names, rtypes, strict=False):
            v = make_value(n, t)
            self.define(tok, v)
            res.append(v)
        callee = symbol_name(sym)
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
                self.fail(
                    sym,
                    "type mismatch: @{} takes ({}), called with ({})".format(
                        callee,
                        ", ".join(map(format_type, want_args)),
                        ", ".join(map(format_type, got)),
                    ),
                )
            if rtypes != want_res:
                self.fail(
                    sym,
                    "type mismatch: @{} returns ({}), the call expects ({})".format(
                        callee,
                        ", ".join(map(format_type, want_res)),
                        ", ".join(map(format_type, rtypes)),
                    ),
                )

    def s_section(self, st) -> Section:
        _, first, c = st
        outer, self.vector_body = self.vector_body, c[0].type == "SECTION_VECTOR"
        try:
            body = self.block(next(x for x in c if isinstance(x, tuple) and x[0] == "region"))
        finally:
            self.vector_body = outer
        kept = self.kept_attrs(str(c[0]), c)
        return Section(
            "cube" if c[0].type == "SECTION_CUBE" else "vector",
            body,
            loc=self.loc(first),
            attrs=kept,
        )
