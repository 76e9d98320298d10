"""Lowering of the statements that make and view memory: tile buffers, global-memory
views, and scalars read from memory or from the runtime.

* ``pto.alloc_tile`` (and ``memref.alloc`` of memref-era kernels) defines a tile buffer of
  a ``!pto.tile_buf`` type; ``pto.multi_tile_get`` picks one buffer of a multi-tile.
* ``pto.make_tensor_view`` describes a global-memory tensor behind a ``!pto.ptr`` (shape,
  strides, layout nd / dn / nz); ``pto.partition_view`` cuts a window of it.
* ``pto.subview`` / ``pto.subset`` and ``pto.treshape`` define tiles aliasing part or all
  of a tile's bytes; ``pto.set_validshape`` changes the valid region of a tile.
* ``pto.load_scalar`` / ``pto.store_scalar`` read and write one element of global memory;
  the getters (``pto.get_block_idx`` ...) and ``pto.get_tensor_view_dim`` give scalars.

Each checks the operands against the declared types and defines its result in the scope.
"""

from __future__ import annotations

import re

from lark import Token

from sim.base.errors import UserError
from sim.frontend.lower_values import ValueScope, int_token
from sim.frontend.pto_types import memref_gm, multi_tile_parts, shorten
from sim.frontend.syntax import (
    PtrType,
    ViewType,
    format_dtype,
    format_type,
    is_int_type,
    value_type,
)
from sim.isa.program import (
    Alloc,
    Const,
    GmPtr,
    MakeTensorView,
    PartitionView,
    PartView,
    RawAttr,
    Reshape,
    Scalar,
    ScalarOp,
    SetValidShape,
    Subview,
    TensorView,
)
from sim.isa.tile import Tile, TileType

__all__ = ["MemoryLowering"]


class MemoryLowering(ValueScope):
    """``s_alloc`` .. ``s_tvdim``: buffers, views and scalar memory access."""

    def s_alloc(self, st) -> Alloc:
        _, first, c = st
        ((rtok, rname),) = self.result_names(c[0], 1, "pto.alloc_tile")
        kv = {}
        kept = self.kept_attrs(str(c[1]), c)  # alloc_tile reads no attribute: each key warns
        for x in c[2:-1]:
            if x[0] == "kv":
                key = str(x[1])
                if key not in ("addr", "valid_row", "valid_col"):
                    self.fail(
                        x[1],
                        f"pto.alloc_tile: unknown operand '{key}'; expected addr, "
                        f"valid_row, valid_col",
                    )
                if key in kv:
                    self.fail(x[1], f"pto.alloc_tile: '{key}' given twice")
                kv[key] = (
                    self.scalar_operand(x[2], "i64" if key == "addr" else "index", role=f"{key} ")
                    if isinstance(x[2], tuple)
                    else self.scalar_operand(x[2], role=f"{key} ")
                )
        t = self.type_of(c[-1])
        if not isinstance(t, TileType):
            self.fail(
                c[-1], f"pto.alloc_tile: expected a !pto.tile_buf type, found {format_type(t)}"
            )
        tile = Tile(rname, t)
        self.define(rtok, tile)
        return Alloc(
            tile,
            kv.get("addr"),
            kv.get("valid_row"),
            kv.get("valid_col"),
            loc=self.loc(first),
            attrs=kept,
        )

    def s_memref_alloc(self, st) -> Alloc:
        """``%b = memref.alloc() : memref<RxCxT, #pto.address_space<LOC>>`` (memref-era
        kernels): a tile buffer the compiler places, as ``pto.alloc_tile``."""
        _, first, c = st
        ((rtok, rname),) = self.result_names(c[0], 1, "memref.alloc")
        if any(isinstance(x, tuple) and x[0] == "ops" for x in c):
            self.fail(c[1], "unsupported: memref.alloc with dynamic sizes")
        kept = self.kept_attrs("memref.alloc", c)
        if memref_gm(str(c[-1])) is not None:  # GM memrefs are kernel arguments only
            self.fail(
                c[-1],
                "unsupported type 'memref<...>': memref.alloc of GM (a GM memref is a "
                "kernel argument; memref.alloc makes on-chip tiles)",
            )
        t = self.type_of(c[-1])
        if not isinstance(t, TileType):
            self.fail(c[-1], f"memref.alloc: expected an on-chip memref, found {format_type(t)}")
        tile = Tile(rname, t)
        self.define(rtok, tile)
        return Alloc(tile, loc=self.loc(first), attrs=kept)

    def s_multi_get(self, st) -> Subview:
        """``%t = pto.multi_tile_get %m[%i] : MT [-> TB]``: buffer ``%i`` of a multi-tile,
        a tile aliasing that block of the stacked allocation."""
        _, first, c = st
        op = c[1]
        ((rtok, rname),) = self.result_names(c[0], 1, "pto.multi_tile_get")
        src = self.lookup(c[2])
        index = self.scalar_operand(c[3])
        kept = self.kept_attrs("pto.multi_tile_get", c)
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
        if (
            not isinstance(elem, TileType)
            or elem.loc is not src.loc
            or src.type.nbytes % elem.nbytes
        ):
            self.fail(
                op,
                "pto.multi_tile_get: expected a result !pto.tile_buf whose size "
                "divides the multi-tile's",
            )
        tile = Tile(rname, elem)
        self.define(rtok, tile)
        return Subview(
            tile,
            src,
            (index,),
            (elem.rows, elem.cols),
            (),
            "pto.multi_tile_get",
            loc=self.loc(first),
            attrs=kept,
        )

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
        ((rtok, rname),) = self.result_names(c[0], 1, "pto.make_tensor_view")
        ptr = self.lookup(c[2])
        if not isinstance(ptr, GmPtr):
            self.fail(
                c[2],
                f"type mismatch: {c[2]} has type {format_type(value_type(ptr))}, "
                f"but a !pto.ptr is expected here",
            )
        shape = self._index_list(self._between(c, "SHAPE", ("STRIDES",)))
        strides = self._index_list(self._between(c, "STRIDES", ()))
        attrs = self.attrs(next((x for x in c if isinstance(x, tuple) and x[0] == "dict"), None))
        kept = self.kept_attrs("pto.make_tensor_view", c)
        t = self.type_of(c[-1])
        if not (isinstance(t, ViewType) and t.kind == "tensor_view"):
            self.fail(
                c[-1],
                f"pto.make_tensor_view: expected a !pto.tensor_view type, found {format_type(t)}",
            )
        if t.dtype != ptr.dtype:
            self.fail(
                c[-1],
                f"type mismatch: {c[2]} points to {format_dtype(ptr.dtype)}, the "
                f"view type has {format_dtype(t.dtype)}",
            )
        for what, xs in (("shape", shape), ("strides", strides)):
            if len(xs) != len(t.shape):
                self.fail(
                    c[-1],
                    f"pto.make_tensor_view: {what} has {len(xs)} entries, the "
                    f"view type has rank {len(t.shape)}",
                )
        layout = attrs.get("layout", "nd")
        if isinstance(layout, RawAttr):
            m = re.fullmatch(r"#pto\.layout<\s*(\w+)\s*>", layout.text)
            layout = m.group(1) if m else layout.text
        if layout not in ("nd", "dn", "nz"):
            self.fail(
                c[1],
                f"pto.make_tensor_view: layout must be #pto.layout<nd>, <dn> or "
                f"<nz>, found {shorten(str(layout))}",
            )
        view = TensorView(rname, t.dtype, t.shape)
        self.define(rtok, view)
        return MakeTensorView(
            view, ptr, shape, strides, str(layout), loc=self.loc(first), attrs=kept
        )

    def s_pv(self, st) -> PartitionView:
        _, first, c = st
        ((rtok, rname),) = self.result_names(c[0], 1, "pto.partition_view")
        src = self.lookup(c[2])
        src_t = self.type_of(c[-3])
        if not isinstance(src, TensorView):
            self.fail(
                c[2],
                f"type mismatch: {c[2]} has type {format_type(value_type(src))}, "
                f"but a !pto.tensor_view is expected here",
            )
        if value_type(src) != src_t:
            self.mismatch(c[2], src, src_t)
        offsets = self._index_list(self._between(c, "OFFSETS", ("SIZES",)))
        sizes = self._index_list(self._between(c, "SIZES", ()))
        kept = self.kept_attrs("pto.partition_view", c)
        t = self.type_of(c[-1])
        if not (isinstance(t, ViewType) and t.kind == "partition_tensor_view"):
            self.fail(
                c[-1],
                f"pto.partition_view: expected a !pto.partition_tensor_view "
                f"result type, found {format_type(t)}",
            )
        if t.dtype != src.dtype:
            self.fail(
                c[-1],
                f"type mismatch: {c[2]} has element type {format_dtype(src.dtype)}, "
                f"the partition has {format_dtype(t.dtype)}",
            )
        for what, xs in (("offsets", offsets), ("sizes", sizes)):
            if len(xs) != len(src.shape):
                self.fail(
                    c[1],
                    f"pto.partition_view: {what} has {len(xs)} entries, the "
                    f"source view has rank {len(src.shape)}",
                )
        pv = PartView(rname, t.dtype, t.shape)
        self.define(rtok, pv)
        return PartitionView(pv, src, offsets, sizes, loc=self.loc(first), attrs=kept)

    def s_subview(self, st) -> Subview:
        _, first, c = st
        op = c[1]
        ((rtok, rname),) = self.result_names(c[0], 1, str(op))
        src = self.lookup(c[2])
        if not isinstance(src, Tile):
            self.fail(
                c[2],
                f"type mismatch: {c[2]} has type {format_type(value_type(src))}, "
                f"but a tile is expected here",
            )
        offsets = self._index_list(self._between(c, op.type, ("SIZES",)))
        size_ops = self._between(c, "SIZES", ())
        sizes = []
        for s in size_ops[1] if size_ops else []:
            if not (isinstance(s, tuple) and s[1].type == "INT"):
                self.fail(
                    s[1] if isinstance(s, tuple) else s, f"{op}: sizes must be integer constants"
                )
            sizes.append(int_token(str(s[1])))
        valid = ()
        for x in c:
            if isinstance(x, tuple) and x[0] == "valid":
                valid = self._index_list(x[2])
        kept = self.kept_attrs(str(op), c)
        types = [
            x
            for x in c
            if isinstance(x, Token) and x.type in ("PTO_TYPE", "NAME", "TYPE_ALIAS", "BUILTIN")
        ]
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
                rt = TileType(
                    src.type.loc,
                    src.dtype,
                    sizes[0],
                    sizes[1],
                    blayout=src.type.blayout,
                    slayout=src.type.slayout,
                    fractal=src.type.fractal,
                    pad=src.type.pad,
                )
            except UserError as e:
                self.fail(op, f"{op}: {e}")
        tile = Tile(rname, rt)
        self.define(rtok, tile)
        return Subview(
            tile, src, offsets, tuple(sizes), valid, str(op), loc=self.loc(first), attrs=kept
        )

    def s_reshape(self, st) -> Reshape:
        """``%r = pto.treshape %t : !pto.tile_buf<A> -> !pto.tile_buf<B>``."""
        _, first, c = st
        op = c[1]
        ((rtok, rname),) = self.result_names(c[0], 1, str(op))
        src = self.lookup(c[2])
        if not isinstance(src, Tile):
            self.fail(
                c[2],
                f"type mismatch: {c[2]} has type {format_type(value_type(src))}, "
                f"but a tile is expected here",
            )
        src_t, rt = self.type_of(c[-3]), self.type_of(c[-1])
        if value_type(src) != src_t:
            self.mismatch(c[2], src, src_t)
        kept = self.kept_attrs(str(op), c)
        if not isinstance(rt, TileType):
            self.fail(c[-1], f"{op}: expected a !pto.tile_buf result type, found {format_type(rt)}")
        if rt.loc is not src_t.loc:
            self.fail(
                c[-1],
                f"{op}: the result must be in the source's buffer "
                f"({src_t.loc.value}), found {rt.loc.value}",
            )
        if rt.nbytes != src_t.nbytes:
            self.fail(
                c[-1],
                f"{op}: the result type has {rt.nbytes} bytes, the source "
                f"{src_t.nbytes}; expected the same total size",
            )
        tile = Tile(rname, rt)
        self.define(rtok, tile)
        return Reshape(tile, src, loc=self.loc(first), attrs=kept)

    def s_setvalid(self, st) -> SetValidShape:
        _, first, c = st
        ops = c[1][1]
        if len(ops) != 3:
            self.fail(
                first, f"pto.set_validshape takes a tile, rows and cols; found {len(ops)} operands"
            )
        tile = self.lookup(ops[0]) if not isinstance(ops[0], tuple) else None
        if not isinstance(tile, Tile):
            self.fail(
                ops[0] if not isinstance(ops[0], tuple) else ops[0][1],
                "pto.set_validshape: the first operand must be a tile",
            )
        t = self.type_of(c[-1])
        if tile.type != t:
            self.mismatch(ops[0], tile, t)
        rows = self.scalar_operand(ops[1], role="rows ")
        cols = self.scalar_operand(ops[2], role="cols ")
        kept = self.kept_attrs("pto.set_validshape", c)
        return SetValidShape(tile, rows, cols, loc=self.loc(first), attrs=kept)

    def s_load_scalar(self, st) -> ScalarOp:
        _, first, c = st
        ((rtok, rname),) = self.result_names(c[0], 1, "pto.load_scalar")
        ptr = self.lookup(c[2])
        types = [x for x in c[4:] if isinstance(x, Token) and x.type != "ARROW"]
        pt = self.type_of(types[0])
        if value_type(ptr) != pt:
            self.mismatch(c[2], ptr, pt)
        if not isinstance(ptr, GmPtr):
            self.fail(c[2], "pto.load_scalar: the address must be a !pto.ptr")
        offset = self.scalar_operand(c[3], role="offset ")
        kept = self.kept_attrs("pto.load_scalar", c)
        rt = self.type_of(types[1]) if len(types) > 1 else format_dtype(ptr.dtype)
        if not isinstance(rt, str):
            self.fail(
                types[1], f"pto.load_scalar: expected a scalar result type, found {format_type(rt)}"
            )
        res = Scalar(rname, rt)
        self.define(rtok, res)
        return ScalarOp((res,), "pto.load_scalar", (ptr, offset), attrs=kept, loc=self.loc(first))

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
        kept = self.kept_attrs("pto.store_scalar", c)
        return ScalarOp(
            (), "pto.store_scalar", (value, ptr, offset), attrs=kept, loc=self.loc(first)
        )

    def s_getter(self, st) -> ScalarOp:
        _, first, c = st
        op = c[1]
        ((rtok, rname),) = self.result_names(c[0], 1, str(op))
        t = "i64"
        attrs = {}
        for x in c[2:]:
            if isinstance(x, tuple) and x[0] == "dict":
                attrs = self.attrs(x)
                self.check_keys(str(op), x)
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
        ((rtok, rname),) = self.result_names(c[0], 1, "pto.get_tensor_view_dim")
        view = self.lookup(c[2])
        if not isinstance(view, TensorView):
            self.fail(c[2], "pto.get_tensor_view_dim: expected a !pto.tensor_view operand")
        index = self.scalar_operand(c[3], role="dim ")
        kept = self.kept_attrs("pto.get_tensor_view_dim", c)
        types = [x for x in c[4:] if isinstance(x, Token) and x.type != "ARROW"]
        rt = self.type_of(types[1]) if len(types) > 1 else "index"
        res = Scalar(rname, rt if isinstance(rt, str) else "index")
        self.define(rtok, res)
        return ScalarOp(
            (res,), "pto.get_tensor_view_dim", (view, index), attrs=kept, loc=self.loc(first)
        )


# the partition view a GM memref argument stands for is named after it with this suffix
GM_MEMREF_VIEW = "_window"


def gm_memref_views(name: str, dt, shape: tuple, strides: tuple, loc) -> tuple:
    """A GM memref kernel argument of a memref-era kernel (``%x: memref<32x32xf32,
    #pto.address_space<gm>>`` passed straight to ``pto.tload`` / ``pto.tstore``;
    instructions-more.md §3.10): the pointer argument ``%x`` and the statements that make
    its whole tensor one partition view, ``%x_window``, which the argument's name then
    denotes in the body."""
    ptr = GmPtr(name, dt)
    index = [Const(int(d), "index") for d in shape]
    tensor = TensorView(f"{name}_tensor", dt, tuple(shape))
    window = PartView(f"{name}{GM_MEMREF_VIEW}", dt, tuple(shape))
    return ptr, [
        MakeTensorView(tensor, ptr, index, [Const(int(s), "index") for s in strides], loc=loc),
        PartitionView(window, tensor, [Const(0, "index")] * len(shape), index, loc=loc),
    ]
