"""Scalar code and control flow of the interpreter: arith, scf.for / scf.if, func.call,
sections, subviews and the PTO scalar ops.

Loops and branches run with concrete values, so the pipes see the dynamic instruction
stream a real core would issue. SSA values (scalars, GM pointers and views, tiles) live in
one frame per function activation; tiles and GM pointers passed to a callee share the
caller's state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sim.base.errors import SimulationError, UserError
from sim.engine.items import SCALAR, Issued
from sim.engine.races import Access
from sim.engine.scalars import coerce, compile_op
from sim.engine.tilestate import TileState
from sim.isa.program import (
    Arith,
    Call,
    Const,
    For,
    GmPtr,
    If,
    Instr,
    PartView,
    PipeOp,
    Reshape,
    Return,
    Scalar,
    ScalarOp,
    Section,
    Subview,
    TensorView,
    Tile,
    Yield,
)
from sim.isa.tile import BLayout

if TYPE_CHECKING:
    import numpy as np

    from sim.isa.program import Program
    from sim.target.model import Target

__all__ = ["ControlFlow"]


def _where(st) -> str:
    return f" ({st.loc})" if getattr(st, "loc", None) else ""


class ControlFlow:
    """Mixin of ``Interpreter``: executes the non-tile statements of a block."""

    # What the interpreter provides (class-level declarations only, for the type checker).
    program: Program
    target: Target
    values: dict[str, Any]
    views: dict[str, tuple]
    tiles: dict[Tile, TileState]
    ids: dict[str, int]
    seq: int
    epoch: int
    track_accesses: bool
    _filled: dict
    _scalar_reads: set[str]
    _arith_fns: dict
    _arith_reads: dict
    _sync_items: dict
    _handlers: dict
    _instr_type: type
    scalar: Callable[[Any], Any]
    tile_view: Callable[[Tile, TileState, int | None, int | None], np.ndarray]
    data_error: Callable[..., None]
    _state: Callable[[Tile, str], TileState]
    _instr: Callable[[Instr], Issued]
    _pipe_op: Callable[[PipeOp], Any]
    _gm_array: Callable[[GmPtr, int], np.ndarray]
    _touch: Callable[[str, np.ndarray, int, int], None]

    _calls: tuple = ()  # the functions being called, outermost first
    limits = None  # sim.engine.limits.Limits of the run (Chip sets it), or None
    idle_iterations = 0  # loop iterations that issued no item (scalar code only)

    def _block(self, body):
        """Run ``body``; yields pipe items and returns the values of its Yield / Return.

        Nested loops, branches, calls and sections run inside this one generator, on an
        explicit stack of the bodies they interrupt: an item issued four loops deep passes
        through one generator, not two per level (a third of a tiled GEMM's walk was
        generators handing items up)."""
        instr_type = self._instr_type
        fixed = self._sync_items  # sync statements issue the same checked item every time
        handlers = self._handlers
        stack = []  # (the rest of an interrupted body, the frame of what interrupted it)
        rest = iter(body)
        while True:
            out = None  # stays None when a nested body was entered
            for st in rest:
                kind = type(st)
                if kind is instr_type:
                    yield self._instr(st)
                    continue
                item = fixed.get(id(st))
                if item is not None:
                    self.seq += 1
                    yield item
                    continue
                if kind is For:
                    frame = self._loop(st)
                    if frame is None:
                        continue
                    stack.append((rest, frame))
                    rest = iter(st.body)
                    break
                if kind is If:
                    stack.append((rest, (If, st)))
                    rest = iter(st.then_body if self.scalar(st.cond) else st.else_body)
                    break
                if kind is Call:
                    frame, callee_body = self._enter_call(st)
                    stack.append((rest, frame))
                    rest = iter(callee_body)
                    break
                if kind is Section:
                    # A unit's program holds only the sections of its kind
                    # (sim.engine.units); the single-unit model keeps both, issuing to the
                    # pipes of one unit in program order.
                    stack.append((rest, (Section, st)))
                    rest = iter(st.body)
                    break
                if kind is Yield or kind is Return:
                    out = tuple(self._value(v) for v in st.values)
                    break
                handler = handlers.get(kind)
                if handler is None:
                    raise UserError(
                        f"statement {kind.__name__}{_where(st)} is not supported "
                        f"by the simulator yet"
                    )
                issued = handler(st)
                if issued is None:
                    continue
                if isinstance(issued, Issued):
                    yield issued
                else:
                    yield from issued
            else:
                out = ()
            if out is None:
                continue
            # the current body ended, with the values ``out``
            if not stack:
                return out
            rest, frame = stack.pop()
            kind = frame[0]
            if kind is For:
                if frame[1].iter_args:
                    frame[3] = list(out)
                if self._iterate(frame):
                    stack.append((rest, frame))
                    rest = iter(frame[1].body)
            elif kind is If:
                # results left unnamed (``scf.if ... -> (T)`` without ``%r =``) bind nothing
                for res, val in zip(frame[1].results, out, strict=False):
                    self._bind(res, val)
            elif kind is Call:
                _, st, saved, saved_calls = frame
                (
                    self.values,
                    self.views,
                    self.tiles,
                    self._ptr_offsets,
                    self._view_layouts,
                ) = saved
                self._calls = saved_calls
                self.epoch += 1  # the caller's tiles are bound again
                for res, val in zip(st.results, out, strict=False):  # unnamed: none
                    self._bind(res, val)

    def _value(self, op):
        """Run-time value of an operand: a number, a tile's state, a GM pointer key or the
        (pointer, base, sizes, strides) of a GM view."""
        if isinstance(op, (Const, Scalar)):
            return self.scalar(op)
        if isinstance(op, GmPtr):
            return self.values.get(op.name, op.name)
        if isinstance(op, (TensorView, PartView)):
            try:
                return self.views[op.name]
            except KeyError:
                raise UserError(f"view %{op.name} is used before it is defined") from None
        if isinstance(op, Tile):
            # its state now: a yield that swaps two tiles (ping-pong iter_args) hands each
            # its partner's state, not whatever the partner is bound to after the first bind
            return self._state(op, f"%{op.name}")
        return op

    def _bind(self, target, value) -> None:
        if isinstance(target, (TensorView, PartView)):
            self.views[target.name] = value
        elif isinstance(target, Tile):
            self.tiles[target] = self.tiles[value] if isinstance(value, Tile) else value
            self.epoch += 1  # the tile may now have another address / valid region
        elif isinstance(target, GmPtr):
            self.values[target.name] = value
        else:
            self.values[target.name] = (
                coerce(value, target.type) if not isinstance(value, Tile) else value
            )

    # --- scalar code ---------------------------------------------------------------------

    def _arith(self, st: Arith) -> None:
        fn = self._arith_fns.get(id(st))  # statements live as long as the program
        if fn is None:
            fn = self._arith_fns[id(st)] = compile_op(
                st.op,
                [getattr(o, "type", "index") for o in st.operands],
                st.result.type,
                dict(st.attrs),
            )
        reads = self._arith_reads.get(id(st))
        if reads is None:  # each operand: (True, its name) or (False, its value)
            reads = self._arith_reads[id(st)] = tuple(
                (True, o.name)
                if type(o) is Scalar
                else (False, o.value if type(o) is Const else self.scalar(o))
                for o in st.operands
            )
        values = self.values
        try:
            args = [values[a] if named else a for named, a in reads]
        except KeyError:  # one used before it has a value: said as scalar() says it
            args = [self.scalar(o) for o in st.operands]
        try:
            values[st.result.name] = fn(args)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise SimulationError(
                f"{st.op}{_where(st)}: cannot evaluate with operands {args}: {e}"
            ) from None
        except SimulationError as e:
            # e.g. a division by a value read from random GM data (ASSUMPTION: 0 in a
            # timing-only run)
            self.data_error(f"{e}{_where(st)}")
            self.values[st.result.name] = coerce(0, st.result.type)

    _ptr_offsets: dict[str, int]  # pointer name -> element offset (pto.addptr)
    warnings: dict[str, None]

    def _scalar_op(self, st: ScalarOp):
        name = st.op.removeprefix("pto.")
        ids = self.ids
        if name in ids:
            self.values[st.results[0].name] = ids[name]
            return None
        if name == "get_validshape":  # instructions-more.md §3.7: scalar reads, cost 0
            s = self._state(st.operands[0], f"{st.op}{_where(st)}")
            if s.rows is None or s.cols is None:
                raise SimulationError(
                    f"{st.op}{_where(st)}: %{st.operands[0].name}'s dynamic valid region "
                    f"was never set"
                )
            self.values[st.results[0].name] = s.rows
            self.values[st.results[1].name] = s.cols
            return None
        if name in ("set_quant_vector", "set_quant_scalar"):  # §3.2: one config write
            self.warnings.setdefault(
                f"{st.op}{_where(st)}: warning: the fixpipe quantisation it sets up is not "
                f"modelled: a later quantising push moves its values unquantised (the "
                f"reference gives no cost for it either)",
                None,
            )
            c = int(self.target.scalar.get(f"{name}_cycles", 1))
            self.seq += 1
            return Issued(SCALAR, "PIPE_S", name, c, c, text=name, source=str(st.loc or ""))
        if name == "addptr":  # §3.8: the same GM array, ``off`` elements further; cost 0
            ptr, off = st.operands
            q = st.results[0].name
            self.values[q] = self.values.get(ptr.name, ptr.name)
            self._ptr_offsets[q] = self._ptr_offsets.get(ptr.name, 0) + int(self.scalar(off))
            return None
        if name == "get_tensor_view_dim":
            view, dim = st.operands
            shape = self.views[view.name][2]
            d = int(self.scalar(dim))
            if not 0 <= d < len(shape):
                raise SimulationError(f"{st.op}{_where(st)}: dim {d} of a rank-{len(shape)} view")
            self.values[st.results[0].name] = shape[d]
            return None
        if name == "load_scalar":
            data, index = self._scalar_cell(st)
            value = data[index].item() if data is not None else 0
            self.values[st.results[0].name] = coerce(value, st.results[0].type)
        elif name == "store_scalar":
            data, index = self._scalar_cell(st, first=1)
            if data is not None:
                data[index] = self.scalar(st.operands[0])
        elif name == "tgetval":
            # ASSUMPTION: the index is the element offset from the tile's base address in
            # storage order (row-major r * cols + c for a row-major tile), over the whole
            # capacity, as load_scalar addresses a tile.
            data, index = self._scalar_cell(st)
            self.values[st.results[0].name] = coerce(data[index].item(), st.results[0].type)
        else:
            raise UserError(f"unsupported op '{st.op}'{_where(st)}")
        c = int(self.target.scalar.get(f"{name}_cycles", 1))  # [scalar] of machine.toml
        self.seq += 1
        item = Issued(SCALAR, "PIPE_S", name, c, c, text=name, source=str(st.loc or ""))
        if self.track_accesses:
            item.accesses = (self._scalar_access(st, write=name == "store_scalar"),)
        return item

    def _scalar_access(self, st: ScalarOp, write: bool) -> Access:
        """The element a scalar load / store / tgetval touches, for race detection."""
        base, idx = (st.operands[1], st.operands[2]) if write else st.operands[:2]
        index = int(self.scalar(idx))
        if isinstance(base, Tile):
            size = base.dtype.size_bytes
            start = self.tiles[base].addr + index * size
            return Access(base.loc.buffer, start, start + size, write, f"%{base.name}")
        if isinstance(base, GmPtr):  # the element the load / store reaches (_scalar_cell)
            index += self._ptr_offsets.get(base.name, 0)
        key = self.values.get(base.name, base.name)
        size = base.dtype.size_bytes
        return Access(f"GM:{key}", index * size, (index + 1) * size, write, f"%{base.name}")

    def _scalar_cell(self, st: ScalarOp, first: int = 0):
        """(flat array, index) addressed by a load_scalar / store_scalar."""
        base, idx = st.operands[first], st.operands[first + 1 :]
        index = sum(int(self.scalar(i)) for i in idx[:1])
        if isinstance(base, GmPtr):
            index += self._ptr_offsets.get(base.name, 0)
        if isinstance(base, Tile):
            s = self._state(base, st.op)
            data = (
                self.tile_view(base, s, base.type.rows, base.type.cols).reshape(-1)
                if base.type.blayout is BLayout.ROW_MAJOR
                else self.tile_view(base, s, base.type.rows, base.type.cols).T.reshape(-1)
            )
        else:
            data = None
            if isinstance(base, GmPtr) and index >= 0:
                key = self.values.get(base.name, base.name)
                data = self._gm_array(base, index + 1)
                self._touch(key, data, index, index + 1)
                if key in self._filled and st.op.endswith("load_scalar"):
                    self._scalar_reads.add(key)
        if data is None or not 0 <= index < data.size:
            # a negative GM index (data-dependent): ASSUMPTION for a timing-only run, the
            # load reads 0 and the store is dropped
            self.data_error(
                f"{st.op}{_where(st)}: index {index} outside the "
                f"{getattr(data, 'size', 0)} elements"
            )
            return None, 0
        return data, index

    def _subview(self, st: Subview) -> None:
        src = self._state(st.source, st.op)
        offs = [int(self.scalar(o)) for o in st.offsets]
        t = st.source.type
        r0, c0 = (offs + [0, 0])[:2]
        elem = (r0 * t.cols + c0) if t.blayout is BLayout.ROW_MAJOR else (c0 * t.rows + r0)
        if st.op == "pto.multi_tile_get":  # buffer r0 of the stacked allocation
            size = st.result.type.rows * st.result.type.cols
            if not 0 <= r0 < t.rows * t.cols // size:
                raise SimulationError(
                    f"{st.op}{_where(st)}: buffer {r0} of a multi-tile of {t.rows * t.cols // size}"
                )
            elem = r0 * size
        valid: list[int | None] = [int(self.scalar(v)) for v in st.valid] or [
            st.result.type.valid_rows,
            st.result.type.valid_cols,
        ]
        self.tiles[st.result] = TileState(src.addr + elem * t.dtype.size_bytes, *valid)
        self.epoch += 1

    def _reshape(self, st: Reshape) -> None:
        # the same bytes seen with another tile type; its valid region is the one declared
        src = self._state(st.source, "pto.treshape" + _where(st))
        t = st.result.type
        self.tiles[st.result] = TileState(src.addr, t.valid_rows, t.valid_cols)
        self.epoch += 1

    # --- control flow --------------------------------------------------------------------

    def _loop(self, st: For):
        """The frame of an ``scf.for`` about to run its first iteration — [For, the loop,
        its induction values, the carried values] — or None when it runs none (its
        results bound)."""
        lb, ub, step = (int(self.scalar(x)) for x in (st.lower, st.upper, st.step))
        if step <= 0:
            self.data_error(f"scf.for{_where(st)}: step must be positive, found {step}")
        frame = [
            For,
            st,
            iter(range(lb, ub, step) if step > 0 else ()),
            [self._value(v) for v in st.inits],
            -1,
        ]
        return frame if self._iterate(frame) else None

    def _iterate(self, frame) -> bool:
        """Start a loop's next iteration (bind its induction variable and iter_args); at
        its end bind the loop's results and say so.

        An iteration that issued nothing (scalar code only) issues no item either for the
        run's limits to count: they are counted here, so that ``--max-instructions`` and
        the progress line see a scalar loop of 10^9 iterations too (``Limits.idle``)."""
        _, st, ivs, carried, seq = frame
        if seq == self.seq:
            self.idle_iterations += 1
            if not self.idle_iterations & 4095 and self.limits is not None:
                self.limits.idle(4096)
        frame[4] = self.seq
        i = next(ivs, None)
        if i is None:  # the loop's results, when named, take the carried values
            for res, val in zip(st.results, carried, strict=False):
                self._bind(res, val)
            return False
        self.values[st.iv.name] = i
        for var, val in zip(st.iter_args, carried, strict=True):
            self._bind(var, val)
        return True

    def _enter_call(self, st: Call):
        """(the frame of a ``func.call``, the callee's body): the callee runs in a fresh
        frame of SSA values, restored to the caller's when its body ends.

        Every name-keyed binding is per activation: scalars and GM pointers (``values``),
        GM views and their layouts, pointer offsets (``pto.addptr``) and tiles. A callee
        sees only its parameters, bound to its arguments' values (a tile argument shares
        the caller's state object, so a valid region set in the callee is the caller's
        too), and a value it defines under a name the caller also uses leaves the
        caller's binding alone."""
        fn = self.program.callee(st)
        chain = self._calls or (self.program.main.name,)
        if st.callee in chain:  # no call stack on the hardware to recurse with
            raise UserError(
                f"func.call @{st.callee}{_where(st)}: recursive call ("
                + " -> ".join(f"@{c}" for c in (*chain, st.callee))
                + "): a kernel's functions cannot call themselves"
            )
        args = [self._value(a) for a in st.args]
        offsets, layouts = self._ptr_offsets, self._view_layouts
        saved = (self.values, self.views, self.tiles, offsets, layouts)
        frame = (Call, st, saved, self._calls)
        self.values, self.views, self.tiles = {}, {}, {}
        self._ptr_offsets, self._view_layouts = {}, {}
        self._calls = (*chain, st.callee)
        self.epoch += 1  # the callee's tiles are bound anew
        for param, arg, val in zip(fn.args, st.args, args, strict=True):
            self._bind(param, val)
            # what travels with a pointer or a view besides its value
            if isinstance(arg, GmPtr) and arg.name in offsets:
                self._ptr_offsets[param.name] = offsets[arg.name]
            elif isinstance(arg, (TensorView, PartView)) and arg.name in layouts:
                self._view_layouts[param.name] = layouts[arg.name]
        return frame, fn.body

    def _control_handlers(self) -> dict:
        # scf.for / scf.if / func.call / sections and Yield / Return are the walk's own
        # (_block)
        return {
            Arith: self._arith,
            ScalarOp: self._scalar_op,
            Subview: self._subview,
            Reshape: self._reshape,
            PipeOp: self._pipe_op,
        }
