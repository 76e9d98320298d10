"""Scalar code and control flow of the interpreter: arith, scf.for / scf.if, func.call,
sections, subviews and the PTO scalar ops.

Loops and branches run with concrete values, so the pipes see the dynamic instruction
stream a real core would issue. SSA values live in one frame per function activation;
tiles and GM pointers passed to a callee share the caller's state.
"""

from __future__ import annotations

from sim.engine.items import SCALAR, Issued
from sim.engine.races import Access
from sim.engine.scalars import coerce, compile_op
from sim.errors import SimulationError, UserError
from sim.isa.program import (Arith, Call, Const, For, GmPtr, If, PartView, PipeOp, Reshape,
                             Return, Scalar, ScalarOp, Section, Subview, TensorView, Tile, Yield)
from sim.isa.tile import BLayout

__all__ = ["ControlFlow"]


def _where(st) -> str:
    return f" ({st.loc})" if getattr(st, "loc", None) else ""


class ControlFlow:
    """Mixin of ``Interpreter``: executes the non-tile statements of a block."""

    _calls: tuple = ()           # the functions being called, outermost first

    def _block(self, body):
        """Run ``body``; yields pipe items and returns the values of its Yield / Return."""
        instr_type = self._instr_type
        fixed = self._sync_items     # sync statements issue the same checked item every time
        for st in body:
            kind = type(st)
            if kind is instr_type:
                yield self._instr(st)
                continue
            item = fixed.get(id(st))
            if item is not None:
                self.seq += 1
                yield item
                continue
            if kind is Yield or kind is Return:
                return tuple(self._value(v) for v in st.values)
            handler = self._handlers.get(kind)
            if handler is None:
                raise UserError(f"statement {kind.__name__}{_where(st)} is not supported by the "
                                f"simulator yet")
            out = handler(st)
            if out is None:
                continue
            if isinstance(out, Issued):
                yield out
            else:
                yield from out
        return ()

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
            self.epoch += 1         # the tile may now have another address / valid region
        elif isinstance(target, GmPtr):
            self.values[target.name] = value
        else:
            self.values[target.name] = coerce(value, target.type) if not isinstance(value, Tile) else value

    # --- scalar code ---------------------------------------------------------------------

    def _arith(self, st: Arith) -> None:
        fn = self._arith_fns.get(id(st))      # statements live as long as the program
        if fn is None:
            fn = self._arith_fns[id(st)] = compile_op(
                st.op, [getattr(o, "type", "index") for o in st.operands], st.result.type,
                dict(st.attrs))
        args = [self.scalar(o) for o in st.operands]
        try:
            self.values[st.result.name] = fn(args)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise SimulationError(f"{st.op}{_where(st)}: cannot evaluate with operands {args}: {e}") from None
        except SimulationError as e:
            # e.g. a division by a value read from random GM data (ASSUMPTION: 0 in a
            # timing-only run)
            self.data_error(f"{e}{_where(st)}")
            self.values[st.result.name] = coerce(0, st.result.type)

    def _scalar_op(self, st: ScalarOp):
        name = st.op.removeprefix("pto.")
        ids = self.ids
        if name in ids:
            self.values[st.results[0].name] = ids[name]
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
        c = int(self.target.scalar.get(f"{name}_cycles", 1))   # [scalar] of machine.toml
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
        key = self.values.get(base.name, base.name)
        size = base.dtype.size_bytes
        return Access(f"GM:{key}", index * size, (index + 1) * size, write, f"%{base.name}")

    def _scalar_cell(self, st: ScalarOp, first: int = 0):
        """(flat array, index) addressed by a load_scalar / store_scalar."""
        base, idx = st.operands[first], st.operands[first + 1:]
        index = sum(int(self.scalar(i)) for i in idx[:1])
        if isinstance(base, Tile):
            s = self._state(base, st.op)
            data = self.tile_view(base, s, base.type.rows, base.type.cols).reshape(-1) \
                if base.type.blayout is BLayout.ROW_MAJOR else self.tile_view(base, s, base.type.rows, base.type.cols).T.reshape(-1)
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
            self.data_error(f"{st.op}{_where(st)}: index {index} outside the "
                            f"{getattr(data, 'size', 0)} elements")
            return None, 0
        return data, index

    def _subview(self, st: Subview) -> None:
        src = self._state(st.source, st.op)
        offs = [int(self.scalar(o)) for o in st.offsets]
        t = st.source.type
        r0, c0 = (offs + [0, 0])[:2]
        elem = (r0 * t.cols + c0) if t.blayout is BLayout.ROW_MAJOR else (c0 * t.rows + r0)
        if st.op == "pto.multi_tile_get":      # buffer r0 of the stacked allocation
            size = st.result.type.rows * st.result.type.cols
            if not 0 <= r0 < t.rows * t.cols // size:
                raise SimulationError(f"{st.op}{_where(st)}: buffer {r0} of a multi-tile of "
                                      f"{t.rows * t.cols // size}")
            elem = r0 * size
        valid = [int(self.scalar(v)) for v in st.valid] or [st.result.type.valid_rows, st.result.type.valid_cols]
        from sim.engine.execute import _TileState
        self.tiles[st.result] = _TileState(src.addr + elem * t.dtype.size_bytes, *valid)
        self.epoch += 1

    def _reshape(self, st: Reshape) -> None:
        # the same bytes seen with another tile type; its valid region is the one declared
        src = self._state(st.source, "pto.treshape" + _where(st))
        t = st.result.type
        from sim.engine.execute import _TileState
        self.tiles[st.result] = _TileState(src.addr, t.valid_rows, t.valid_cols)
        self.epoch += 1

    # --- control flow --------------------------------------------------------------------

    def _for(self, st: For):
        lb, ub, step = (int(self.scalar(x)) for x in (st.lower, st.upper, st.step))
        if step <= 0:
            self.data_error(f"scf.for{_where(st)}: step must be positive, found {step}")
        carried = [self._value(v) for v in st.inits]
        for i in range(lb, ub, step) if step > 0 else ():
            self.values[st.iv.name] = i
            for var, val in zip(st.iter_args, carried):
                self._bind(var, val)
            out = yield from self._block(st.body)
            if st.iter_args:
                carried = list(out)
        for res, val in zip(st.results, carried):
            self._bind(res, val)

    def _if(self, st: If):
        body = st.then_body if self.scalar(st.cond) else st.else_body
        out = yield from self._block(body)
        for res, val in zip(st.results, out):
            self._bind(res, val)

    def _call(self, st: Call):
        fn = self.program.callee(st)
        chain = self._calls or (self.program.main.name,)
        if st.callee in chain:          # no call stack on the hardware to recurse with
            raise UserError(f"func.call @{st.callee}{_where(st)}: recursive call ("
                            + " -> ".join(f"@{c}" for c in (*chain, st.callee))
                            + "): a kernel's functions cannot call themselves")
        args = [self._value(a) for a in st.args]
        saved, saved_calls = self.values, self._calls
        self.values, self._calls = {}, (*chain, st.callee)
        for param, val in zip(fn.args, args):
            self._bind(param, val)
        try:
            out = yield from self._block(fn.body)
        finally:
            self.values, self._calls = saved, saved_calls
        for res, val in zip(st.results, out):
            self._bind(res, val)

    def _section(self, st: Section):
        # A unit's program holds only the sections of its kind (sim.engine.units); the
        # single-unit model keeps both, issuing to the pipes of one unit in program order.
        # The body's walk itself, not a generator around it: a kernel built section by
        # section passes every item through it.
        return self._block(st.body)

    def _control_handlers(self) -> dict:
        return {Arith: self._arith, ScalarOp: self._scalar_op, Subview: self._subview,
                Reshape: self._reshape,
                For: self._for, If: self._if, Call: self._call, Section: self._section,
                PipeOp: self._pipe_op, Yield: None, Return: None}
