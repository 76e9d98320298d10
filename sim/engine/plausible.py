"""``--inputs plausible``: index-like GM inputs drawn inside the ranges the kernel uses them.

A GM argument nobody gives is filled with seeded random data (``sim.engine.gmviews``):
integers in [-100, 100) or [0, 200). When the kernel reads indices or window offsets from
such an argument, a random value sends a gather outside its table or a window outside its
tensor, and the run stops (the stop names the ``--input`` to give). With ``plausible`` fill
the integer elements of the arguments the kernel uses as indices are drawn instead,
uniformly and deterministically (same seed, same data), from ``[0, bound)``, where the bound
is what the program shows statically. The heuristic, per argument:

* its data reaches a tile by ``TLOAD`` (through a partition view of a tensor view of it),
  and that tile is the index operand of
  - ``TGATHER``: bound = the table's valid elements (rows x cols of its type);
  - ``MGATHER``: bound = the elements the GM view reaches (its sizes, when constant);
  - ``TSCATTER``: bound = the destination's allocation (rows x cols);
  - ``TCONCATIDX`` (``idx0`` / ``idx1``): bound = dst's valid cols x the index size + 1
    (the counts are in bytes of the index type);
* its elements are read by ``pto.load_scalar`` into a value that (directly, through
  ``arith`` casts, or multiplied by a constant k: a block index) is an offset of a
  ``partition_view``: bound = (the tensor's extent - the window's size) // k + 1 on that
  dim (constant extents and sizes only).

* it is the signal of a ``pto.comm.tnotify`` / ``twait`` / ``ttest`` (through a partition
  view of a tensor view of it): bound = 1, zeros — the host zeroes the signal words before
  the launch (communication.md §7), and a random count would leave a wait unsatisfiable.

Several uses keep the smallest bound. Arguments the analysis does not place are filled as
before; float arguments are never changed. A documented, deterministic heuristic — not a
guarantee: an index computed from the data (``idx + k``) is not followed.
"""

from __future__ import annotations

from sim.isa.comm import CommOp
from sim.isa.program import Arith, Const, Instr, MakeTensorView, PartitionView, ScalarOp, walk
from sim.isa.tile import Tile

__all__ = ["index_bounds", "PLAUSIBLE_KEY", "FILLS"]

FILLS = ("random", "plausible")
# communication ops whose first operand is a signal word (sim.isa.comm)
_SIGNAL_OPS = frozenset({"pto.comm.tnotify", "pto.comm.twait", "pto.comm.ttest"})
# the entry of a run's inputs that carries the bounds to the interpreter (no SSA name)
PLAUSIBLE_KEY = " plausible index bounds"


def _const(x) -> int | None:
    return int(x.value) if isinstance(x, Const) else None


def index_bounds(program) -> dict[str, int]:
    """GM argument name -> exclusive upper bound of its index-like integer elements."""
    ptr_of_tensor: dict[str, str] = {}
    tensor_shape: dict[str, tuple] = {}
    part: dict[str, tuple] = {}  # part view name -> (tensor name, sizes)
    loads: dict[Tile, set] = {}  # tile -> GM arguments TLOADed into it
    scalar_src: dict[str, tuple] = {}  # scalar -> (GM argument it was loaded from, scale)
    bounds: dict[str, int] = {}

    def keep(arg: str | None, hi: int | None) -> None:
        if arg is not None and hi is not None and hi > 0:
            bounds[arg] = min(hi, bounds.get(arg, hi))

    def sizes_of(x) -> int | None:
        return _const(x) if isinstance(x, Const) else constants.get(getattr(x, "name", ""))

    def args_of_tile(t) -> set:
        return loads.get(t, set()) if isinstance(t, Tile) else set()

    body = [st for f in program.functions for st in walk(f.body)]
    constants: dict[str, int] = {}
    for st in body:
        if isinstance(st, Arith) and st.op == "arith.constant" and st.operands:
            v = st.operands[0]
            if isinstance(v, Const) and isinstance(v.value, int):
                constants[st.result.name] = int(v.value)
    for st in body:  # the data paths first: views, loads, scalar loads
        if isinstance(st, MakeTensorView):
            ptr_of_tensor[st.result.name] = st.ptr.name
            tensor_shape[st.result.name] = tuple(sizes_of(x) for x in st.shape)
        elif isinstance(st, PartitionView):
            part[st.result.name] = (st.source.name, tuple(sizes_of(x) for x in st.sizes))
        elif isinstance(st, Instr) and st.opcode == "TLOAD" and isinstance(st.outs[0], Tile):
            view = part.get(getattr(st.ins[0], "name", ""))
            if view is not None and view[0] in ptr_of_tensor:
                loads.setdefault(st.outs[0], set()).add(ptr_of_tensor[view[0]])
        elif isinstance(st, ScalarOp) and st.op == "pto.load_scalar" and st.results:
            scalar_src[st.results[0].name] = (st.operands[0].name, 1)
        elif isinstance(st, Arith) and st.operands and not st.op.endswith("constant"):
            names = [str(getattr(o, "name", "")) for o in st.operands]
            if len(st.operands) == 1 and names[0] in scalar_src:  # casts keep the origin
                scalar_src[st.result.name] = scalar_src[names[0]]
            elif st.op == "arith.muli" and len(st.operands) == 2:  # a block index * size
                for a, b in ((0, 1), (1, 0)):
                    k = constants.get(names[b], _const(st.operands[b]))
                    if names[a] in scalar_src and k is not None and k > 0:
                        arg, scale = scalar_src[names[a]]
                        scalar_src[st.result.name] = (arg, scale * k)
                        break

    for st in body:
        if isinstance(st, Instr):
            tiles = [o for o in st.ins if isinstance(o, Tile)]
            if st.opcode == "TGATHER" and len(tiles) >= 2:
                table = tiles[0].type
                for a in args_of_tile(tiles[1]):
                    keep(a, (table.valid_rows or table.rows) * (table.valid_cols or table.cols))
            elif st.opcode == "MGATHER" and tiles:
                sizes = getattr(st.ins[0], "shape", ())
                n = 1
                for d in sizes:
                    n = n * d if isinstance(d, int) else 0
                for a in args_of_tile(tiles[0]):
                    keep(a, n or None)
            elif st.opcode == "TSCATTER" and len(tiles) >= 2:
                dst = st.outs[0].type
                for a in args_of_tile(tiles[1]):
                    keep(a, dst.rows * dst.cols)
            elif st.opcode == "TCONCATIDX" and len(tiles) >= 4:
                dst = st.outs[0].type
                for t in tiles[2:4]:
                    for a in args_of_tile(t):
                        keep(a, (dst.valid_cols or dst.cols) * t.dtype.size_bytes + 1)
        elif isinstance(st, CommOp) and st.op in _SIGNAL_OPS and st.operands:
            view = part.get(getattr(st.operands[0], "name", ""))
            if view is not None:
                keep(ptr_of_tensor.get(view[0]), 1)
        elif isinstance(st, PartitionView):
            shape = tensor_shape.get(st.source.name, ())
            for d, off in enumerate(st.offsets):
                src = scalar_src.get(getattr(off, "name", ""))
                size = sizes_of(st.sizes[d]) if d < len(st.sizes) else None
                cap = shape[d] if d < len(shape) else None
                if src is not None and size is not None and cap is not None and cap >= size:
                    arg, scale = src
                    keep(arg, (cap - size) // scale + 1)
    return bounds
