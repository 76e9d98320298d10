"""Inlining ``func.call`` for the placement passes.

Auto mode places and synchronises one straight program: the tiles a callee allocates
share the buffers with the caller's, and a hazard can run from a caller's TLOAD into a
callee's vector op. So before placing, every ``func.call`` of the entry function is
replaced by the callee's body (transitively), as the compiler does before inserting
sync: each parameter becomes the argument passed, every value the callee defines gets a
fresh name (``<callee><n>_<name>``, one ``n`` per call site), and the call's results
become the callee's returned values. Source locations stay those of the callee, so
diagnostics still point at its text. Recursion is refused.
"""

from __future__ import annotations

import itertools

import attrs

from sim.base.errors import UserError
from sim.isa.dtypes import DType
from sim.isa.program import (
    Call,
    Const,
    For,
    GmPtr,
    If,
    PartView,
    RawAttr,
    Return,
    Scalar,
    Section,
    SourceLoc,
    TensorView,
    walk,
)
from sim.isa.tile import Tile, TileType

__all__ = ["inline_calls"]

_VALUES = (Scalar, Tile, GmPtr, TensorView, PartView)
_LEAVES = (Const, RawAttr, SourceLoc, TileType, DType)


def _map(obj, subst: dict, fresh):
    """``obj`` with every named value replaced through ``subst``; a value not in it gets
    ``fresh(value)`` (or stays, when ``fresh`` is None)."""
    if isinstance(obj, _VALUES):
        got = subst.get(obj)
        if got is None:
            if fresh is None:
                return obj
            got = subst[obj] = attrs.evolve(obj, name=fresh(obj.name))
        return got
    if isinstance(obj, tuple):
        return tuple(_map(x, subst, fresh) for x in obj)
    if isinstance(obj, _LEAVES) or not attrs.has(type(obj)):
        return obj
    changes = {
        f.name: _map(getattr(obj, f.name), subst, fresh)
        for f in attrs.fields(type(obj))
        if f.name != "loc"
    }
    return attrs.evolve(obj, **changes)


def _names(obj, out: set) -> None:
    if isinstance(obj, _VALUES):
        out.add(obj.name)
    elif isinstance(obj, tuple):
        for x in obj:
            _names(x, out)
    elif attrs.has(type(obj)) and not isinstance(obj, _LEAVES):
        for f in attrs.fields(type(obj)):
            if f.name != "loc":
                _names(getattr(obj, f.name), out)


class _Inliner:
    def __init__(self, program):
        self.program = program
        self.taken: set = set()
        for f in program.functions:
            _names(f.args, self.taken)
            _names(f.body, self.taken)
        self.sites = itertools.count()
        self.results: dict = {}  # call result -> returned value (applied at the end)

    def body(self, body, stack) -> list:
        out = []
        for st in body:
            if isinstance(st, Call):
                out += self.call(st, stack)
            elif isinstance(st, For):
                out.append(attrs.evolve(st, body=tuple(self.body(st.body, stack))))
            elif isinstance(st, If):
                out.append(
                    attrs.evolve(
                        st,
                        then_body=tuple(self.body(st.then_body, stack)),
                        else_body=tuple(self.body(st.else_body, stack)),
                    )
                )
            elif isinstance(st, Section):
                out.append(attrs.evolve(st, body=tuple(self.body(st.body, stack))))
            else:
                out.append(st)
        return out

    def call(self, st: Call, stack) -> list:
        where = f" ({st.loc})" if st.loc else ""
        if st.callee in stack:
            raise UserError(
                f"func.call @{st.callee}{where}: recursive call "
                f"({' -> '.join(stack + (st.callee,))}) cannot be inlined for auto mode"
            )
        fn = self.program.callee(st)
        body = list(fn.body)
        ret = body.pop() if body and isinstance(body[-1], Return) else Return(())
        if any(isinstance(s, Return) for s in walk(body)):
            raise UserError(
                f"func.call @{st.callee}{where}: a return before the end of the "
                f"callee cannot be inlined for auto mode"
            )
        site = next(self.sites)

        def fresh(name: str) -> str:
            k = 0
            while True:
                cand = f"{st.callee}{site}_{name}" + (f"_{k}" if k else "")
                if cand not in self.taken:
                    self.taken.add(cand)
                    return cand
                k += 1

        subst = dict(zip(fn.args, st.args, strict=True))
        inner = self.body(tuple(_map(tuple(body), subst, fresh)), stack + (st.callee,))
        # a call whose results are not named binds none of the returned values
        for res, val in zip(st.results, _map(ret.values, subst, fresh), strict=False):
            self.results[res] = val
        return inner


def inline_calls(program):
    """``program`` with every ``func.call`` of its entry function inlined (see the module
    doc); the same object when there is none."""
    fn = program.main
    if not any(isinstance(st, Call) for st in walk(fn.body)):
        return program
    inl = _Inliner(program)
    body = inl.body(fn.body, (fn.name,))
    if inl.results:
        for res, val in inl.results.items():  # a returned value may be a call result too
            while val in inl.results:
                val = inl.results[val]
            inl.results[res] = val
        body = [_map(st, inl.results, None) for st in body]
    new = attrs.evolve(fn, body=tuple(body))
    return attrs.evolve(program, functions=tuple(new if f is fn else f for f in program.functions))
