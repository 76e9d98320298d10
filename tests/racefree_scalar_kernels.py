"""Kernels for the scalar-access race-freedom tests (``tests/test_racefree_scalar.py``): the
synchronised kernels of ``racefree_kernels.py`` with the scalar unit's own accesses mixed in
(``load_scalar`` / ``store_scalar`` of an element of GM array x or y, ``tgetval`` of a tile),
written as ``.pto`` text (the builder has no scalar loads), and small chip kernels whose
blocks read and write GM words with the scalar unit."""

from __future__ import annotations

from racefree_kernels import PIPE, _Synced

import sim

SCALAR_OPS = ["LDS", "STS", "GETVAL"]  # load_scalar, store_scalar, tgetval: PIPE_S
OPS = [*PIPE, *SCALAR_OPS]
_PV = "!pto.tensor_view<?x?xf32>"


class _ScalarSynced(_Synced):
    """``_Synced`` with the scalar unit's accesses: one runs on PIPE_S when the dispatcher
    reaches it, after which the dispatcher knows of it (what is issued later is ordered
    after it: the race detector's order, ``sim.engine.machine``); what it needs of another
    pipe comes through a flag to PIPE_S (a wait that holds the dispatcher) or a barrier.
    Scalar accesses touch element ``(k * b + c) % elems`` of their GM array or tile."""

    def __init__(self, alias: bool, elems: int):
        super().__init__(alias)
        self.elems = elems

    def statement(self, name: str, a: int, b: int, c: int) -> tuple:
        gm, n = "xy"[c % 2], self.elems
        if name == "LDS":
            return (name, gm, (7 * b + c) % n)
        if name == "STS":
            return (name, gm, (5 * b + a) % n)
        if name == "GETVAL":
            return (name, a, (3 * b + c) % n)
        return super().statement(name, a, b, c)

    def op(self, stmt: tuple, how: int, eid: int) -> None:
        name = stmt[0]
        if name not in SCALAR_OPS:
            super().op(stmt, how, eid)
            return
        p = "PIPE_S"
        res = stmt[1] // 2 if self.alias and type(stmt[1]) is int else stmt[1]
        write = name == "STS"
        for q, (w, r) in sorted(self.last.get(res, {}).items()):
            if q != p and self._knows(p, q) < (max(w, r) if write else w):
                self.sync(q, p, 5 if how == 6 else how, eid)
        own = self._item(p)[p]
        w, r = self.last.setdefault(res, {}).get(p, (0, 0))
        self.last[res][p] = (own, r) if write else (w, own)
        self.d = dict(self.clk[p])
        self.out.append(stmt)


def synced(plan, alias=False, elems=64) -> list:
    """A synchronised kernel of ``plan`` steps (name, a, b, c, how, eid): ``racefree_kernels``'
    statements and ("LDS" | "STS", gm, element), ("GETVAL", tile, element)."""
    return _ScalarSynced(alias, elems).run(plan)


def kernel_text(stmts, rows=16, cols=64, alias=False) -> str:
    """The ``.pto`` text of ``stmts`` on f32 tiles of ``rows`` x ``cols`` at fixed UB
    addresses (tiles 0 and 1, 2 and 3 overlapping by half with ``alias``) and GM arrays x, y
    of one tile each."""
    size = rows * cols * 4
    at = [0, size // 2, 2 * size, 5 * size // 2] if alias else [0, size, 2 * size, 3 * size]
    tile = f"!pto.tile_buf<vec, {rows}x{cols}xf32>"
    part = f"!pto.partition_tensor_view<{rows}x{cols}xf32>"
    index = sorted({s[2] for s in stmts if s[0] in SCALAR_OPS})
    head = [
        'module attributes {pto.target_arch = "a2a3"} {',
        "  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes "
        "{pto.kernel_kind = #pto.kernel_kind<vector>} {",
        "    %c0 = arith.constant 0 : index",
        "    %c1 = arith.constant 1 : index",
        f"    %cr = arith.constant {rows} : index",
        f"    %cc = arith.constant {cols} : index",
        "    %one = arith.constant 1.0 : f32",
        *(f"    %i{i} = arith.constant {i} : index" for i in index),
    ]
    for g in "xy":
        head += [
            f"    %t{g} = pto.make_tensor_view %{g}, shape = [%cr, %cc], strides = [%cc, %c1]"
            f" : {_PV}",
            f"    %v{g} = pto.partition_view %t{g}, offsets = [%c0, %c0], sizes = [%cr, %cc]"
            f" : {_PV} -> {part}",
        ]
    for i, a in enumerate(at):
        head += [
            f"    %a{i} = arith.constant {a} : i64",
            f"    %t{i} = pto.alloc_tile addr = %a{i} : {tile}",
        ]
    body = []
    for n, s in enumerate(stmts):
        op = s[0]
        if op == "TLOAD":
            body.append(f"    pto.tload ins(%v{s[2]} : {part}) outs(%t{s[1]} : {tile})")
        elif op == "TSTORE":
            body.append(f"    pto.tstore ins(%t{s[2]} : {tile}) outs(%v{s[1]} : {part})")
        elif op == "TADD":
            body.append(
                f"    pto.tadd ins(%t{s[2]}, %t{s[3]} : {tile}, {tile}) outs(%t{s[1]} : {tile})"
            )
        elif op == "TEXP":
            body.append(f"    pto.texp ins(%t{s[2]} : {tile}) outs(%t{s[1]} : {tile})")
        elif op in ("set", "wait"):
            body.append(f"    pto.{op}_flag[<{s[1]}>, <{s[2]}>, <EVENT_ID{s[3]}>]")
        elif op == "barrier":
            body.append("    pto.barrier <PIPE_ALL>")
        elif op == "LDS":
            body.append(f"    %s{n} = pto.load_scalar %{s[1]}[%i{s[2]}] : !pto.ptr<f32> -> f32")
        elif op == "STS":
            body.append(f"    pto.store_scalar %one, %{s[1]}[%i{s[2]}] : !pto.ptr<f32>, f32")
        else:
            body.append(
                f"    %s{n} = pto.tgetval ins(%t{s[1]}, %i{s[2]} : {tile}, index) outs : f32"
            )
    return "\n".join([*head, *body, "    return", "  }", "}", ""])


def program(stmts, alias=False):
    return sim.parse_text(kernel_text(stmts, alias=alias), "scalar.pto")


# --- chip kernels: blocks reading and writing GM words with the scalar unit -----------------

_CHIP_HEAD = """!T = !pto.tile_buf<vec, 16x64xf32>
!P = !pto.partition_tensor_view<16x64xf32>
!V = !pto.tensor_view<?x?xf32>
module attributes {pto.target_arch = "a2a3"} {
  func.func @k(%ctx: !pto.ptr<f32>, %x: !pto.ptr<f32>, %y: !pto.ptr<f32>)
      attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %b = pto.get_block_idx : index
    %nb = pto.get_block_num : index
    %rows = arith.muli %nb, %c16 : index
    %tx = pto.make_tensor_view %x, shape = [%rows, %c64], strides = [%c64, %c1] : !V
    %ty = pto.make_tensor_view %y, shape = [%rows, %c64], strides = [%c64, %c1] : !V
    %r0 = arith.muli %b, %c16 : index
    %a0 = arith.constant 0 : i64
    %t = pto.alloc_tile addr = %a0 : !T
    %vx = pto.partition_view %tx, offsets = [%r0, %c0], sizes = [%c16, %c64] : !V -> !P
    %vy = pto.partition_view %ty, offsets = [%r0, %c0], sizes = [%c16, %c64] : !V -> !P
    %s = pto.load_scalar %ctx[%b] : !pto.ptr<f32> -> f32
    pto.tload ins(%vx : !P) outs(%t : !T)
    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]
    pto.tadds ins(%t, %s : !T, f32) outs(%t : !T)
    pto.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.tstore ins(%t : !T) outs(%vy : !P)
"""
# what each block does after storing its rows of y: nothing, a store_scalar of its own word
# of %ctx or of word 0, or a load_scalar of the first element of its own rows of y or of its
# neighbour's, after a flag MTE3 -> S or with none
CHIP_TAILS = {
    "nothing more": "",
    "own word written": "    pto.store_scalar %s, %ctx[%b] : !pto.ptr<f32>, f32\n",
    "one word written by all": "    pto.store_scalar %s, %ctx[%c0] : !pto.ptr<f32>, f32\n",
    "own rows read back, flagged": "    pto.set_flag[<PIPE_MTE3>, <PIPE_S>, <EVENT_ID1>]\n"
    "    pto.wait_flag[<PIPE_MTE3>, <PIPE_S>, <EVENT_ID1>]\n"
    "    %e = arith.muli %r0, %c64 : index\n"
    "    %back = pto.load_scalar %y[%e] : !pto.ptr<f32> -> f32\n",
    "own rows read back, no flag": "    %e = arith.muli %r0, %c64 : index\n"
    "    %back = pto.load_scalar %y[%e] : !pto.ptr<f32> -> f32\n",
    "neighbour's rows read, flagged": "    pto.set_flag[<PIPE_MTE3>, <PIPE_S>, <EVENT_ID1>]\n"
    "    pto.wait_flag[<PIPE_MTE3>, <PIPE_S>, <EVENT_ID1>]\n"
    "    %nxt0 = arith.addi %b, %c1 : index\n"
    "    %nxt = arith.remsi %nxt0, %nb : index\n"
    "    %r1 = arith.muli %nxt, %c16 : index\n"
    "    %e = arith.muli %r1, %c64 : index\n"
    "    %back = pto.load_scalar %y[%e] : !pto.ptr<f32> -> f32\n",
}


def chip_kernel(tail: str):
    """Every block: a scalar read of its word of ``%ctx`` (no unit writes it), its 16 rows
    of x loaded, that word added, stored to its rows of y; then ``CHIP_TAILS[tail]``."""
    text = _CHIP_HEAD + CHIP_TAILS[tail] + "    return\n  }\n}\n"
    return sim.parse_text(text, "chip_scalar.pto")
