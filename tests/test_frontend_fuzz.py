"""Property-based fuzzing of the PTO IR parser.

Random mutations of the example kernels — characters, tokens and lines deleted,
duplicated or swapped, a few at a time — must either parse (and then print back to an
equal program) or raise ``ParseError`` with a ``FILE:LINE:COL: error:`` diagnostic that
points into the text. Any other exception is a bug.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.frontend import ParseError, parse_text, print_program

ROOT = Path(__file__).resolve().parent.parent
# the examples, plus one module with the rarer constructs (pipes, calls, multi-results,
# attributes of every kind, dynamic events)
RARE = """\
!T = !pto.tile_buf<vec, 16x64xf32>
module attributes {"pto.device-spec" = "Ascend910B1"} {
  func.func private @ext(i32) -> i32
  func.func private @helper(%x: index, %t: !T) -> index {
    %y = arith.muli %x, %x : index
    return %y : index
  }
  func.func @main(%p: !pto.ptr<f32>, %q: !pto.ptr<i32>, %n: index, %s: f32) attributes {pto.entry, pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cond = arith.cmpi sgt, %n, %c0 : index
    %a = pto.alloc_tile : !T
    %buf = pto.reserve_buffer {name = "c2v", size = 8192, location = #pto.address_space<mat>, auto = false, base = 0} -> i32
    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 8192} (c2v_consumer_buf = %buf : i32)
    pto.tpush_to_aiv(%a : !T) {split = 1}
    %u = pto.tpop_from_aic {split = 1} -> !T
    pto.tfree_from_aic {split = 1}
    %r:2 = scf.if %cond -> (index, f32) {
      scf.yield %c0, %s : index, f32
    } else {
      %neg = arith.negf %s : f32
      scf.yield %c1, %neg : index, f32
    }
    %t = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
      %h = func.call @helper(%acc, %a) : (index, !T) -> index
      pto.set_flag_dyn[<PIPE_V>, <PIPE_MTE3>, %i]
      pto.wait_flag_dyn[#pto.pipe<PIPE_V>, #pto.pipe<PIPE_MTE3>, %i]
      scf.yield %h : index
    }
    pto.section.vector {
      %b = pto.get_block_idx
      %x = pto.load_scalar %q[%c0] : !pto.ptr<i32> -> i32
      pto.store_scalar %x, %q[%c1] : !pto.ptr<i32>, i32
    }
    pto.tcvt ins(%a {rmode = #pto<round_mode RINT>} : !T) outs(%u : !T) {sat = true, k = 1 : i32}
    pto.record_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]
    pto.wait_event[#pto.sync_op_type<TLOAD>, #pto.sync_op_type<TVEC>, <EVENT_ID0>]
    pto.barrier_sync [<TVEC>]
    return
  }
}
"""
# ... and the spellings compilers emit (tests/data/wild: 5-D views, view arguments and
# yields, multi-tiles, memref.alloc, dense constants, hif8, the ops beyond the reference)
WILD = sorted((ROOT / "tests" / "data" / "wild").rglob("*.pto")) + [
    ROOT / "tests" / "data" / "talloc_to_aiv.pto"
]
SOURCES = (
    [p.read_text() for p in sorted((ROOT / "examples").glob("*.pto"))]
    + [RARE]
    + [p.read_text() for p in WILD]
)
_TOKEN = re.compile(r"\s+|[%@!#]?[\w.$-]+(?:<[^<>\n]*>)?|\"[^\"\n]*\"|.", re.S)

# a few fragments worth splicing in: other spellings, and constructs out of scope
SNIPPETS = [
    "pto.vlds",
    "scf.while",
    '"pto.tmov"',
    "^bb0:",
    "memref<4xf32>",
    "!pto.tile<4x4xf32>",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ",",
    ":",
    "=",
    "->",
    "%",
    "@",
    "!",
    "#",
    "?",
    "0x",
    "08",
    "0x1F",
    "1e999",
    "-",
    "iter_args",
    "else",
    "pto.set_flag",
    "arith.cmpi",
    "!pto.tile_buf<vec, 16x64xf32, valid=?x?>",
    "#pto<cmp lt>",
    "\n",
    "//",
    '"',
    "%c0",
    "%0:2",
    "scf.yield",
    "return",
    "pto.section.cube",
    "func.func private @f()",
    "dense<1.5>",
    "dense<[1, 2]>",
    "!pto.hif8",
    "!pto.multi_tile_buf<vec, 16x16xf16, count=2>",
    "count=0",
    "pto.multi_tile_get",
    "pto.alloc_multi_tile",
    "memref.alloc()",
    "memref<16x16xf32, #pto.address_space<vec>>",
    "!pto.partition_tensor_view<1x2x3x4x8xf32>",
    "pto.talloc_to_aiv",
    "valid_row = %c0",
    "pto.tmrgsort",
    "pto.mgather",
]


def _mutate(text: str, data) -> str:
    ops = data.draw(
        st.lists(
            st.sampled_from(
                [
                    "del_char",
                    "dup_char",
                    "swap_char",
                    "del_tok",
                    "dup_tok",
                    "swap_tok",
                    "del_line",
                    "dup_line",
                    "swap_line",
                    "insert",
                ]
            ),
            min_size=1,
            max_size=4,
        )
    )
    for op in ops:
        unit = op.split("_")[-1]
        if op == "insert":
            pieces = _TOKEN.findall(text)
            i = data.draw(st.integers(0, len(pieces)))
            pieces.insert(i, data.draw(st.sampled_from(SNIPPETS)))
            text = "".join(pieces)
            continue
        if unit == "char":
            pieces = list(text)
        elif unit == "tok":
            pieces = _TOKEN.findall(text)
        else:
            pieces = text.splitlines(keepends=True)
        if len(pieces) < 2:
            continue
        i = data.draw(st.integers(0, len(pieces) - 2))
        if op.startswith("del"):
            del pieces[i]
        elif op.startswith("dup"):
            pieces.insert(i, pieces[i])
        else:
            pieces[i], pieces[i + 1] = pieces[i + 1], pieces[i]
        text = "".join(pieces)
    return text


@settings(
    max_examples=500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(source=st.sampled_from(SOURCES), data=st.data())
def test_mutated_examples_raise_only_parse_errors(source, data):
    text = _mutate(source, data)
    try:
        program = parse_text(text, "fuzz.pto")
    except ParseError as e:
        head = str(e).splitlines()[0]
        assert head.startswith(f"fuzz.pto:{e.line}:{e.col}: error: "), head
        assert 1 <= e.line <= text.count("\n") + 1
        assert e.col >= 1
        return
    printed = print_program(program)
    assert parse_text(printed, "printed.pto") == program


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(source=st.sampled_from(SOURCES), data=st.data())
def test_mutated_kernels_that_parse_check_and_run_without_tracebacks(source, data):
    """What parses, ``check`` and ``run`` (timing-only or functional) either accept or reject with a
    user error (one ``ptosim: error:`` line), never an internal exception."""
    from sim.base.errors import UserError
    from sim.engine.run import simulate
    from sim.frontend import check_program, resolve_target
    from sim.isa.program import Scalar
    from sim.target import load_target

    text = _mutate(source, data)
    try:
        program = parse_text(text, "fuzz.pto")
        target = resolve_target(program, None, where="fuzz.pto")
        check_program(program, load_target(target))
        args = {
            a.name: (True if a.type == "i1" else 1.0 if a.type.startswith(("f", "bf")) else 2)
            for a in program.main.args
            if isinstance(a, Scalar)
        }
        simulate(program, target, inputs=args, functional=data.draw(st.booleans()))
    except UserError:
        pass
