"""The static check of addresses, sizes and bounds, shared by every way a kernel runs.

``ptosim check``, ``ptosim run`` in every sync mode, a builder ``Kernel`` given to
``sim.simulate`` and each row of ``ptosim sweep`` all call ``static_problems`` before
anything runs, so they can never disagree about a kernel again (``check`` once said ok
to an ``alloc_tile addr=`` that ``run`` refused, and auto mode ran a ``TASSIGN`` to
address 3 that manual mode refused). Two rules:

* **Addresses.** Every hand-placed tile whose address is known before the run (a
  literal, an ``arith.constant``, arithmetic of constants) in *any* function: the tile
  lies inside its buffer's capacity, starts on an ``alignment_bytes`` boundary (32 B,
  programming-model.md §5, §8) and stays out of the target's reserved ranges (the A2/A3
  TMP_UB_OFFSET scratch). Auto mode drops hand addresses of tiles it places itself, but
  an address no hardware accepts is the kernel's mistake in every mode. ``address_problems``
  is the rule itself; the interpreter applies it to addresses known only at run time.
* **Scalar arguments that size or bound something.** A scalar argument that flows (through
  ``arith`` and calls) into a tensor-view shape, a partition size, a valid region or a loop
  bound must not be negative: ``--arg n=-16`` of a kernel whose loop runs to ``n`` ran no
  iteration and reported 0 cycles. (Values beyond the argument's type are refused where
  ``--arg`` is parsed, ``sim.kernel.files.scalar_value``; a tensor view whose bound
  shape reaches more bytes than a 64-bit address is refused too.)
"""

from __future__ import annotations

from typing import Any

from sim.isa.known import HAND_PLACEMENTS, known
from sim.isa.program import (
    Alloc,
    Arith,
    Call,
    Const,
    For,
    Instr,
    MakeTensorView,
    PartitionView,
    Scalar,
    SetValidShape,
    walk,
)

__all__ = [
    "address_problems",
    "negative_arguments",
    "placements",
    "sized_arguments",
    "span_message",
    "static_problems",
    "view_spans",
]

_FOLD = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
}


def address_problems(tile, addr: int, target) -> list:
    """[(rule, text)] of every rule a hand-placed ``tile`` at byte ``addr`` of its buffer
    breaks: capacity, alignment, reserved range (empty: none)."""
    buf = target.buffer(tile.loc.buffer)
    end = addr + tile.type.nbytes
    what = f"tile %{tile.name} ({tile.type.nbytes} B) at [{addr:#x}, {end:#x}) in {buf.name}"
    out = []
    if addr < 0 or end > buf.capacity_bytes:
        out.append(
            (
                "capacity",
                f"{what}: outside the {buf.capacity_bytes}-byte {buf.name} "
                f"of {target.name} (rule: capacity)",
            )
        )
    if addr % buf.alignment_bytes:
        out.append(
            (
                "alignment",
                f"{what}: the address is not a multiple of "
                f"{buf.alignment_bytes} bytes (rule: alignment)",
            )
        )
    for name, lo, hi in buf.reserved:
        if addr < hi and lo < end:
            out.append(
                (
                    "reserved",
                    f"{what}: overlaps the reserved range [{lo:#x}, {hi:#x}) "
                    f"({name}) (rule: reserved range)",
                )
            )
    return out


def _constants(fn, seed=None) -> dict:
    """Scalar -> value of the integer SSA values of ``fn`` known before the run (``seed``:
    values already known, the scalar arguments a run binds)."""
    known: dict = dict(seed or {})
    for st in walk(fn.body):
        if not isinstance(st, Arith):
            continue
        if st.op == "arith.constant":
            v = st.operands[0] if st.operands else None
            if isinstance(v, Const) and type(v.value) is int:
                known[st.result] = v.value
            continue
        vals = [o.value if isinstance(o, Const) else known.get(o) for o in st.operands]
        if any(type(v) is not int for v in vals):
            continue
        if st.op == "arith.index_cast" and len(vals) == 1:
            known[st.result] = vals[0]
        elif st.op in _FOLD and len(vals) == 2:
            known[st.result] = _FOLD[st.op](*vals)
    return known


def placements(program):
    """(statement, tile, constant address, how) of every hand placement known statically."""
    for fn in program.functions:
        known = None
        for st in walk(fn.body):
            if isinstance(st, Alloc) and st.addr is not None:
                tile, op, how = st.tile, st.addr, "alloc_tile addr="
            elif isinstance(st, Instr) and st.opcode == "TASSIGN" and st.ins:
                tile, op, how = st.outs[0], st.ins[0], "TASSIGN"
            else:
                continue
            addr: Any
            if isinstance(op, Const):
                addr = op.value
            else:
                known = _constants(fn) if known is None else known
                addr = known.get(op)
            if type(addr) is int:
                yield st, tile, addr, how


def sized_arguments(program) -> dict:
    """Name -> (what, where) of every scalar argument of the entry function that sizes or
    bounds something (see the module doc), through arith and calls."""
    defs: dict = {}  # (function, scalar name) -> operand keys it is computed from
    sinks: list = []  # (operand key, what, where)
    for fn in program.functions:
        for st in walk(fn.body):
            where = str(st.loc) if getattr(st, "loc", None) else f"@{fn.name}"
            if isinstance(st, Arith):
                defs[(fn.name, st.result.name)] = [
                    (fn.name, o.name) for o in st.operands if isinstance(o, Scalar)
                ]
            elif isinstance(st, Call):
                callee = program.callee(st)
                for param, arg in zip(callee.args, st.args, strict=True):
                    if isinstance(param, Scalar) and isinstance(arg, Scalar):
                        defs.setdefault((callee.name, param.name), []).append((fn.name, arg.name))
            ops: tuple = ()
            if isinstance(st, MakeTensorView):
                ops, what = st.shape, "a tensor view's shape"
            elif isinstance(st, PartitionView):
                ops, what = st.sizes, "a partition view's sizes"
            elif isinstance(st, For):
                ops, what = (st.lower, st.upper), "a loop bound"
            elif isinstance(st, Alloc):
                ops, what = (st.valid_row, st.valid_col), "a tile's valid region"
            elif isinstance(st, SetValidShape):
                ops, what = (st.rows, st.cols), "a tile's valid region"
            sinks += [((fn.name, o.name), what, where) for o in ops if isinstance(o, Scalar)]
    args = {a.name for a in program.main.args if isinstance(a, Scalar)}
    out: dict = {}
    for key, what, where in sinks:
        seen, todo = set(), [key]
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            if k[0] == program.main.name and k[1] in args and k[1] not in out:
                out[k[1]] = (what, where)
            todo += defs.get(k, ())
    return out


def view_spans(program, scalars: dict) -> list:
    """Tensor views of the entry function whose shape and strides, with the scalar
    arguments bound, reach more bytes than a 64-bit address (``--arg n=2**63-1``)."""
    fn = program.main
    seed = {
        a: scalars[a.name]
        for a in fn.args
        if isinstance(a, Scalar) and type(scalars.get(a.name)) is int
    }
    if not seed:
        return []
    known = _constants(fn, seed)
    out = []
    for st in walk(fn.body):
        if not isinstance(st, MakeTensorView):
            continue
        vals: list[Any] = [
            o.value if isinstance(o, Const) else known.get(o) for o in (*st.shape, *st.strides)
        ]
        if any(type(v) is not int for v in vals):
            continue
        shape, strides = vals[: len(st.shape)], vals[len(st.shape) :]
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0)
        if span * st.ptr.dtype.size_bytes >= 2**63:
            where = f"make_tensor_view %{st.result.name}" + (f" ({st.loc})" if st.loc else "")
            out.append(
                ("span", st.result.name, span_message(where, shape, strides, span, st.ptr.dtype))
            )
    return out


def span_message(where: str, shape, strides, span: int, dtype) -> str:
    """The one text of a view too large for a 64-bit address (static and run time)."""
    return (
        f"{where}: shape {list(shape)} with strides {list(strides)} spans {span} "
        f"elements of {dtype}: more bytes than a 64-bit address reaches; expected "
        f"smaller sizes"
    )


def static_problems(program, target, scalars=None) -> list:
    """[(rule, tile or argument name, message)] of every static problem of ``program`` on
    ``target`` with scalar argument values ``scalars`` (name -> value; missing ones are
    not checked)."""
    out: list = []
    if _placed_well(program, target):
        if not scalars:
            return out
        return view_spans(program, scalars) + negative_arguments(sized_arguments(program), scalars)
    for st, tile, addr, how in placements(program):
        where = f"{st.loc}: " if st.loc else ""
        out += [
            (rule, tile.name, f"{where}{how} places {text}")
            for rule, text in address_problems(tile, addr, target)
        ]
    if scalars:
        out += view_spans(program, scalars) + negative_arguments(sized_arguments(program), scalars)
    return out


def _placed_well(program, target) -> bool:
    """Whether the producer of ``program`` (the builder, ``sim.isa.known``) noted every
    statement that places a tile by hand and each places it at a constant address that
    breaks no rule: then no walk is needed (a builder kernel repeats a few distinct
    statements 10^5 times). Otherwise (no note, an address known only through ``arith``,
    a broken rule) the walk of ``placements`` finds the problems in text order."""
    noted = known(program, HAND_PLACEMENTS)
    if noted is None:
        return False
    for st in noted:
        if type(st) is Alloc:
            tile, op = st.tile, st.addr
        elif st.ins:  # TASSIGN
            tile, op = st.outs[0], st.ins[0]
        else:
            continue
        if (
            type(op) is not Const
            or type(op.value) is not int
            or address_problems(tile, op.value, target)
        ):
            return False
    return True


def negative_arguments(sized: dict, scalars: dict) -> list:
    """[(rule, name, message)] of the arguments of ``sized`` (``sized_arguments``) whose
    value in ``scalars`` is negative."""
    out = []
    for name, (what, where) in sized.items():
        v = scalars.get(name)
        if type(v) is int and v < 0:
            out.append(
                (
                    "argument",
                    name,
                    f"scalar argument %{name} = {v}: it sizes or bounds "
                    f"{what} ({where}); expected a value >= 0",
                )
            )
    return out
