"""TREM, TFMOD, TREMS, TFMODS: per-row step sequences (timing-model.md §4 rows of the same
names; instructions.md §3.1, §3.4).

Each op repeats a fixed sequence once per valid row. The sequences are data: a step is
``name`` (count mode over the row's C elements, ceil(C/E) effective repeats, mask not full
so F-ops pay the floor), ``name:full`` (one norm-mode full-mask repeat), ``name:cmp``
(ceil(C/64) norm repeats — the compare writing the select mask), ``name:cfg`` (a one-cycle
config write such as ``set_cmpmask``); ``|`` is ``pipe_barrier(PIPE_V)``, which drains the
pipe so the next instruction restarts the stream (plan.py: its cost follows the target's
``barrier_restart`` rule; §4's figures are the "latency" rule). ``vconv`` stands for every
``vconv_*`` variant (one cost row, §2.4).

Config writes (§2.6): ``once`` cycles before the row loop (count-mode bracket) and
``per_row`` cycles inside it (TREM switches count -> norm for the vector_dup/vcmpvs
and back: 8 per row, which makes §4's ≈329/row at C <= 64).

Reference per-row figures at r = ceil(C/E) = 1 (table costs of §2.4, floor 16 on F-ops):
TREM f32 ≈ 329 (+2 once), TFMOD f32 ≈ 167 (+4 once), TFMODS ≈ 177, TREMS ≈ 280. This
model marks vmuls and vadds as F-ops and sets vadds' latency to 25 (evidence in
vector_costs.csv), so TFMODS is 177 + 16 = 193 per row and TREMS 279 - 6 + 3*16 = 321
per row here; TREM and TFMOD are unchanged.
"""

from __future__ import annotations

import math

from sim.timing.plan import Item
from sim.timing.vpath import BAR, cfg, v

__all__ = ["OPS", "SEQUENCES", "lower"]

_TREM_F32_TAIL = "vmul | vector_dup:full | set_cmpmask:cfg | vcmpvs:cmp | vadd | vsel |"
_TREMS_F32 = (
    "vector_dup | vdiv | vconv | vmuls | vsub | vmuls | vcmpvs | set_cmpmask:cfg | vadds | vsel |"
)

# (opcode, "f32" | "i32") -> (cfg once, cfg per row, per-row steps)
SEQUENCES = {
    # §4: [count C] vdiv bar vconv_f322f32f(floor) bar vmul bar vsub bar vmul bar [norm]
    # vector_dup(1 rep) bar set_cmpmask bar vcmpvs_lt bar [count C] vadd bar vsel bar; + 8 cfg
    ("TREM", "f32"): (2, 8, "vdiv | vconv | vmul | vsub | " + _TREM_F32_TAIL),
    # §4: 2x vconv_s322f32 bar vdiv bar vconv_f322s32f bar 2x vconv_f322s32r bar vmul bar
    # vsub bar 2x vconv_s322f32 bar vmul bar vector_dup bar set_cmpmask bar vcmpvs_lt bar
    # vadd bar vsel bar vconv_f322s32z bar (mode switches as f32: 8 cfg per row)
    ("TREM", "i32"): (
        2,
        8,
        "vconv vconv | vdiv | vconv | vconv vconv | vmul | vsub | "
        "vconv vconv | " + _TREM_F32_TAIL + " vconv |",
    ),
    # §4: per row, count C: vdiv bar vconv_f322f32z bar vmul bar vsub bar (+4 cfg once)
    ("TFMOD", "f32"): (4, 0, "vdiv | vconv | vmul | vsub |"),
    # §4: per row, count C: vector_dup bar vdiv bar vconv_f322f32z bar vmuls bar vsub bar
    ("TFMODS", "f32"): (4, 0, "vector_dup | vdiv | vconv | vmuls | vsub |"),
    # §4: per row, count C: vector_dup bar vdiv bar vconv_f322f32f bar vmuls bar vsub bar
    # vmuls bar vcmpvs_lt bar set_cmpmask bar vadds bar vsel bar
    ("TREMS", "f32"): (4, 0, _TREMS_F32),
    # ASSUMPTION (§3.4 only says the i32 path converts src to f32 in place and back): one
    # vconv in, the f32 sequence, then dst to i32 and src back (two vconv).
    ("TREMS", "i32"): (4, 0, "vconv | " + _TREMS_F32 + " vconv vconv |"),
}
OPS = ("TREM", "TFMOD", "TREMS", "TFMODS")


def _row_items(steps: str, C: int, E: int, on: str = "") -> list[Item]:
    """One row's items; ``on`` = the element type the steps compute on ("" = the op's)."""
    out: list[Item] = []
    for tok in steps.split():
        if tok == "|":
            out.append(BAR)
            continue
        name, _, mode = tok.partition(":")
        if mode == "cfg":
            out += cfg(1, name)
        elif mode == "full":
            out += v(name, [(1, False)], on)
        elif mode == "cmp":
            out += v(name, [(math.ceil(C / 64), False)], on)
        else:
            out += v(name, [(math.ceil(C / E), True)], on)
    return out


def lower(s, dtype) -> list[Item]:
    """Items of a remainder op: config once, then the per-row sequence R times."""
    kind = "f32" if dtype.is_float else "i32"
    once, per_row, steps = SEQUENCES.get((s.opcode, kind)) or SEQUENCES[(s.opcode, "f32")]
    E = 256 // dtype.size_bytes
    # the integer sequences convert to f32 and compute there: their steps cost the float
    # rows, not the integer ones of vector_costs.csv (vconv has one row for every pair)
    on = "" if dtype.is_float else "f32"
    row = cfg(per_row) + _row_items(steps, s.valid_cols, E, on)
    return cfg(once) + row * s.valid_rows
