"""Attribute dictionaries outside tile instructions: never dropped in silence.

Every op that can carry ``{...}`` — the module, functions and their arguments, arith and
scf, the view / buffer / scalar / getter ops, flags and barriers, ``pto.set_ffts`` /
``pto.syncall``, the cube <-> vector FIFO ops — is tried with a key the simulator does not
read: the parse keeps one warning located at the key (file:line:col found here by
searching the text, not by the parser), naming the op, the key and value, and the keys
that op understands (written out below from pto-ir-in-the-wild.md §2.6 / §4.2 and what
the engine reads, not taken from ``sim.frontend.attr_keys``). Keys that are understood or
known to have no effect give no warning and survive print -> parse. A FIFO key whose value
the engine would misread is an error. ``ptosim check`` and ``ptosim run`` show the
warnings; no other result moves.
"""

from __future__ import annotations

import json

import pytest

from sim.cli import main
from sim.frontend import ParseError, parse_text, print_program

TB = "!pto.tile_buf<vec, 32x32xf32>"
TV = "!pto.tensor_view<32x32xf32>"
PTV = "!pto.partition_tensor_view<32x32xf32>"
DYN = "!pto.tile_buf<vec, 32x32xf32, valid=?x?>"

PRELUDE = (
    "    %c0 = arith.constant 0 : index\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c32 = arith.constant 32 : index\n"
    "    %f = arith.constant 1.5 : f32\n"
    "    %x = arith.constant 0 : i64\n"
    "    %cond = arith.cmpi slt, %c0, %c1 : index\n"
    f"    %v = pto.make_tensor_view %a, shape = [%c32, %c32], strides = [%c32, %c1] : {TV}\n"
    f"    %t = pto.alloc_tile : {TB}\n"
    f"    %d = pto.alloc_tile valid_row = %c1 valid_col = %c1 : {DYN}\n"
)


def module(body: str, *, module_dict: str = "", func_dict: str = "", arg_dict: str = "") -> str:
    mod = ", ".join(x for x in ('pto.target_arch = "a2a3"', module_dict) if x)
    fattrs = f" attributes {{{func_dict}}}" if func_dict else ""
    adict = f" {{{arg_dict}}}" if arg_dict else ""
    return (
        f"module attributes {{{mod}}} {{\n"
        f"  func.func @k(%a: !pto.ptr<f32>{adict}, %n: index){fattrs} {{\n"
        f"{PRELUDE}{body}"
        "    return\n  }\n}\n"
    )


# op -> (statement with {D} where the dictionary goes, the keys the op understands as the
# warning lists them ("no attribute" when none))
NONE = "no attribute"
STATEMENTS = {
    "pto.make_tensor_view": (
        f"    %w = pto.make_tensor_view %a, shape = [%c32, %c32], strides = "
        f"[%c32, %c1] {{D}} : {TV}\n",
        "layout",
    ),
    "pto.partition_view": (
        f"    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = "
        f"[%c32, %c32] {{D}} : {TV} -> {PTV}\n",
        NONE,
    ),
    "pto.alloc_tile": (f"    %u = pto.alloc_tile {{D}} : {TB}\n", NONE),
    "memref.alloc": (
        "    %m = memref.alloc() {D} : memref<32x32xf32, #pto.address_space<vec>>\n",
        NONE,
    ),
    "pto.subview": (f"    %s = pto.subview %t[%c0, %c0] sizes [16, 16] {{D}} : {TB}\n", NONE),
    "pto.subset": (f"    %s = pto.subset %t[%c0, %c0] sizes [16, 16] {{D}} : {TB}\n", NONE),
    "pto.treshape": (
        f"    %r = pto.treshape %t {{D}} : {TB} -> !pto.tile_buf<vec, 16x64xf32>\n",
        NONE,
    ),
    "pto.alloc_multi_tile": (
        "    %mt = pto.alloc_multi_tile {D} : !pto.multi_tile_buf<vec, 16x16xf16, count=2>\n",
        NONE,
    ),
    "pto.multi_tile_get": (
        "    %mt = pto.alloc_multi_tile : !pto.multi_tile_buf<vec, 16x16xf16, count=2>\n"
        "    %mg = pto.multi_tile_get %mt[%c1] {D} : !pto.multi_tile_buf<vec, "
        "16x16xf16, count=2> -> !pto.tile_buf<vec, 16x16xf16>\n",
        NONE,
    ),
    "pto.set_validshape": (f"    pto.set_validshape %d, %c1, %c1 {{D}} : {DYN}\n", NONE),
    "pto.load_scalar": ("    %l = pto.load_scalar %a[%c0] {D} : !pto.ptr<f32> -> f32\n", NONE),
    "pto.store_scalar": ("    pto.store_scalar %f, %a[%c0] {D} : !pto.ptr<f32>, f32\n", NONE),
    "pto.get_block_idx": ("    %b = pto.get_block_idx {D} : i64\n", NONE),
    "pto.get_block_num": ("    %b = pto.get_block_num {D} : i64\n", NONE),
    "pto.get_subblock_idx": ("    %b = pto.get_subblock_idx {D} : i64\n", NONE),
    "pto.get_subblock_num": ("    %b = pto.get_subblock_num {D} : i64\n", NONE),
    "pto.get_tensor_view_dim": (
        f"    %g = pto.get_tensor_view_dim %v, %c0 {{D}} : {TV} -> index\n",
        NONE,
    ),
    "pto.tgetval": (f"    %e = pto.tgetval ins(%t, %c0 {{D}} : {TB}, index) outs : f32\n", NONE),
    "arith.addi": ("    %s = arith.addi %c1, %c1 {D} : index\n", NONE),
    "arith.cmpi": ("    %s = arith.cmpi sgt, %c1, %c0 {D} : index\n", NONE),
    "arith.mulf": ("    %s = arith.mulf %f, %f {D} : f32\n", NONE),
    "scf.for": ("    scf.for %i = %c0 to %n step %c1 {\n    } {D}\n", NONE),
    "scf.if": ("    scf.if %cond {\n    } {D}\n", NONE),
    "pto.section.vector": ("    pto.section.vector {\n    } {D}\n", NONE),
    "pto.set_flag": (
        "    pto.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>] {D}\n"
        "    pto.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]\n",
        NONE,
    ),
    "pto.wait_flag": (
        "    pto.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]\n"
        "    pto.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>] {D}\n",
        NONE,
    ),
    "pto.record_event": (
        "    pto.record_event[<TLOAD>, <TVEC>, <EVENT_ID1>] {D}\n"
        "    pto.wait_event[<TLOAD>, <TVEC>, <EVENT_ID1>]\n",
        NONE,
    ),
    "pto.barrier": ("    pto.barrier <PIPE_ALL> {D}\n", NONE),
    "pto.barrier_sync": ("    pto.barrier_sync [<TVEC>] {D}\n", NONE),
    "pto.set_ffts": ("    pto.set_ffts %x {D} : i64\n", NONE),
    "pto.syncall": (
        "    pto.syncall() {D} mode = #pto.sync_all_mode<soft>, core_type = "
        "#pto.sync_core_type<mix>\n",
        NONE,
    ),
    "pto.reserve_buffer": (
        '    %rb = pto.reserve_buffer {name = "c2v", size = 8192, location = '
        "#pto.address_space<vec>, auto = false, base = 0, D} -> i32\n",
        "name, size, location, auto, base",
    ),
    "pto.import_reserved_buffer": (
        '    %ib = pto.import_reserved_buffer {name = "c2v", peer_func = @k, D} -> i32\n',
        "name, peer_func",
    ),
    "pto.aic_initialize_pipe": (
        "    pto.aic_initialize_pipe {id = 0, dir_mask = 1, slot_size = 4096, "
        "D} (c2v_consumer_buf = %x : i64)\n",
        "id, dir_mask, slot_size",
    ),
    "pto.aiv_initialize_pipe": (
        "    pto.aiv_initialize_pipe {id = 0, dir_mask = 1, slot_size = 4096, "
        "D} (c2v_consumer_buf = %x : i64)\n",
        "id, dir_mask, slot_size",
    ),
    "pto.tpush_to_aiv": (
        f"    pto.tpush_to_aiv(%t : {TB}) {{id = 0, split = 1, D}}\n",
        "id, split",
    ),
    "pto.tpush_to_aic": (
        f"    pto.tpush_to_aic(%t : {TB}) {{id = 0, split = 0, D}}\n",
        "id, split",
    ),
    "pto.tpop_from_aic": (
        f"    %q = pto.tpop_from_aic {{id = 0, split = 1, D}} -> {TB}\n",
        "id, split",
    ),
    "pto.tpop_from_aiv": (
        f"    %q = pto.tpop_from_aiv {{id = 0, split = 2, D}} -> {TB}\n",
        "id, split",
    ),
    "pto.tfree_from_aic": ("    pto.tfree_from_aic {id = 0, split = 1, D}\n", "id"),
    "pto.tfree_from_aiv": ("    pto.tfree_from_aiv {id = 0, split = 1, D}\n", "id"),
    "pto.talloc_to_aiv": (f"    %q = pto.talloc_to_aiv {{id = 0, split = 1, D}} -> {TB}\n", "id"),
    "pto.talloc_to_aic": (f"    %q = pto.talloc_to_aic {{id = 0, D}} -> {TB}\n", "id"),
}

# (key as written, key as named in the message, value as shown): a plain key with an
# integer, a dotted key with an enum attribute, a quoted key with a string, a unit key
UNKNOWN_KEYS = [
    ("zz_hint = 7", "zz_hint", " = 7"),
    ("foo.mode = #pto.foo<bar>", "foo.mode", " = #pto.foo<bar>"),
    ('"odd-key" = "s"', "odd-key", ' = "s"'),
    ("zz_unit", "zz_unit", ""),
]


def with_dict(stmt: str, entries: str) -> str:
    """The statement with ``entries`` in its dictionary (``D`` inside a written one,
    ``{D}`` standing for a whole one)."""
    if "{D}" in stmt:
        return stmt.replace("{D}", "{" + entries + "}" if entries else "")
    return stmt.replace(", D}", (", " + entries if entries else "") + "}")


def where(text: str, needle: str, file: str) -> str:
    """``file:line:col`` of the first ``needle`` in ``text`` (1-based), found by search."""
    pos = text.index(needle)
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"{file}:{line}:{col}"


def expected_warning(op: str, key: str, shown: str, understood: str) -> str:
    return (
        f"warning: {op}: attribute {key}{shown} is not modelled for {op}: ignored (its "
        f"timing and values are those without it); understood there: {understood}"
    )


@pytest.mark.parametrize("op", sorted(STATEMENTS))
@pytest.mark.parametrize("written,key,shown", UNKNOWN_KEYS, ids=[k[1] for k in UNKNOWN_KEYS])
def test_an_unknown_key_warns_at_the_key(op, written, key, shown):
    stmt, understood = STATEMENTS[op]
    text = module(with_dict(stmt, written))
    program = parse_text(text, "attr.pto")
    at = where(text, written.split(" =")[0], "attr.pto")
    assert program.warnings == (f"{at}: {expected_warning(op, key, shown, understood)}",)


@pytest.mark.parametrize("op", sorted(STATEMENTS))
def test_without_unknown_keys_no_warning_and_the_program_round_trips(op):
    stmt, _ = STATEMENTS[op]
    program = parse_text(module(with_dict(stmt, "")), "attr.pto")
    assert program.warnings == ()
    again = parse_text(print_program(program), "printed.pto")
    assert again == program and again.warnings == ()


# statements printed in another (canonical) spelling: their keys warn under that name
PRINTED_AS = {
    "memref.alloc": "pto.alloc_tile",
    "pto.alloc_multi_tile": "pto.alloc_tile",
    "pto.barrier_sync": "pto.barrier",
    "pto.record_event": "pto.set_flag",
}


@pytest.mark.parametrize("op", sorted(STATEMENTS))
@pytest.mark.parametrize("written,key,shown", UNKNOWN_KEYS, ids=[k[1] for k in UNKNOWN_KEYS])
def test_the_printed_program_keeps_the_keys_and_warns_the_same(op, written, key, shown):
    # ptosim print dropped them (alloc_tile's {cache = "l2"}, scf.for's {unroll = 4}): the
    # reprinted file no longer warned
    stmt, _ = STATEMENTS[op]
    program = parse_text(module(with_dict(stmt, written)), "attr.pto")
    printed = print_program(program)
    again = parse_text(printed, "printed.pto")
    assert again == program
    # the same warning, now located at the key in the printed text
    as_printed = PRINTED_AS.get(op, op)
    understood = STATEMENTS[as_printed][1] if as_printed in STATEMENTS else NONE
    at = where(printed, written.split(" =")[0], "printed.pto")
    assert again.warnings == (f"{at}: {expected_warning(as_printed, key, shown, understood)}",)


def test_each_unknown_key_warns_once_in_source_order():
    text = module(
        with_dict(STATEMENTS["pto.barrier"][0], "zz_late").replace("<PIPE_ALL>", "<PIPE_V>")
        + with_dict(STATEMENTS["pto.partition_view"][0], "zz_b = 1, zz_a"),
        func_dict="zz_func",
        module_dict="zz_mod",
    )
    got = parse_text(text, "f.pto").warnings
    keys = ("zz_mod", "zz_func", "zz_late", "zz_b", "zz_a")
    assert [w.split(": warning:")[0] for w in got] == [where(text, k, "f.pto") for k in keys]
    assert [f"attribute {k}" in w for k, w in zip(keys, got, strict=True)] == [True] * len(keys)


# --- module, function and argument dictionaries -----------------------------------------------


@pytest.mark.parametrize("written,key,shown", UNKNOWN_KEYS, ids=[k[1] for k in UNKNOWN_KEYS])
@pytest.mark.parametrize(
    "place,op,understood",
    [
        ("module_dict", "module", "pto.target_arch, pto.device-spec"),
        ("func_dict", "func.func", "pto.entry, pto.kernel_kind"),
        ("arg_dict", "func argument", NONE),
    ],
)
def test_an_unknown_module_function_or_argument_key_warns(
    place, op, understood, written, key, shown
):
    text = module("", **{place: written})
    at = where(text, written.split(" =")[0], "m.pto")
    assert parse_text(text, "m.pto").warnings == (
        f"{at}: {expected_warning(op, key, shown, understood)}",
    )


@pytest.mark.parametrize(
    "place,entries",
    [
        ("module_dict", 'pto.backend = "emitc"'),  # known, no effect
        ("module_dict", '"pto.device-spec" = "Ascend910B1"'),
        ("func_dict", "pto.entry"),
        ("func_dict", "pto.kernel"),  # known, no effect
        ("func_dict", "pto.aicore"),  # known, no effect
        ("func_dict", "pto.kernel_kind = #pto.kernel_kind<vector>"),
        ("func_dict", "pto.entry, pto.kernel_kind = #pto.kernel_kind<cube>"),
    ],
)
def test_understood_and_no_effect_keys_do_not_warn_and_round_trip(place, entries):
    program = parse_text(module("", **{place: entries}), "m.pto")
    assert program.warnings == ()
    text = print_program(program)
    for entry in entries.split(", "):
        assert entry.split(" =")[0].strip('"') in text
    assert parse_text(text, "p.pto") == program


def test_the_module_kernel_kind_is_not_read_there_and_warns():
    # real VPTO files put pto.kernel_kind on the module; the engine reads it on functions
    text = module("", module_dict="pto.kernel_kind = #pto.kernel_kind<cube>")
    (w,) = parse_text(text, "m.pto").warnings
    assert "module: attribute pto.kernel_kind = #pto.kernel_kind<cube> is not modelled" in w


# --- understood keys: carried, printed back ---------------------------------------------------


@pytest.mark.parametrize("layout", ["nd", "dn", "nz"])
def test_the_tensor_view_layout_is_understood(layout):
    stmt, _ = STATEMENTS["pto.make_tensor_view"]
    program = parse_text(module(with_dict(stmt, f"layout = #pto.layout<{layout}>")), "l.pto")
    assert program.warnings == ()
    view = [st for st in program.main.body if getattr(st, "layout", None) is not None][-1]
    assert view.layout == layout
    assert parse_text(print_program(program), "p.pto") == program


FIFO_KEYS = [
    ("pto.reserve_buffer", {"name": "c2v", "size": 8192, "auto": False, "base": 0}),
    ("pto.aic_initialize_pipe", {"id": 0, "dir_mask": 1, "slot_size": 4096}),
    ("pto.tpush_to_aiv", {"id": 0, "split": 1}),
    ("pto.tpop_from_aiv", {"id": 0, "split": 2}),
    ("pto.tfree_from_aic", {"id": 0, "split": 1}),
    ("pto.talloc_to_aiv", {"id": 0, "split": 1}),
]


@pytest.mark.parametrize("op,want", FIFO_KEYS, ids=[f[0] for f in FIFO_KEYS])
def test_fifo_keys_are_carried_and_printed_back(op, want):
    stmt, _ = STATEMENTS[op]
    program = parse_text(module(with_dict(stmt, "")), "f.pto")
    assert program.warnings == ()
    (st,) = [s for s in program.main.body if getattr(s, "op", None) == op]
    assert {k: v for k, v in st.attrs if k in want} == want
    text = print_program(program)
    assert all(f"{k} = " in text for k in want)
    assert parse_text(text, "p.pto") == program


@pytest.mark.parametrize("typed", ["1 : i32", "1 : i64", "1 : index", "0x1 : i32"])
def test_a_typed_integer_fifo_key_reads_as_the_integer(typed):
    program = parse_text(module(f"    pto.tpush_to_aiv(%t : {TB}) {{split = {typed}}}\n"), "t.pto")
    (st,) = [s for s in program.main.body if getattr(s, "op", None) == "pto.tpush_to_aiv"]
    assert dict(st.attrs)["split"] == 1


@pytest.mark.parametrize(
    "op,key,value,expected",
    [
        ("pto.tpush_to_aiv", "split", "3", "0 (whole tile), 1 (rows halved) or 2"),
        ("pto.tpop_from_aic", "split", "-1", "0 (whole tile), 1 (rows halved) or 2"),
        ("pto.tpush_to_aic", "split", '"1"', "0 (whole tile), 1 (rows halved) or 2"),
        ("pto.tpop_from_aiv", "id", "#pto.id<x>", "a FIFO id"),
        ("pto.tfree_from_aic", "id", "1.5", "a FIFO id"),
        ("pto.aic_initialize_pipe", "dir_mask", "0", "1 (cube -> vector), 2 (vector -> cube) or 3"),
        ("pto.aiv_initialize_pipe", "dir_mask", "4", "1 (cube -> vector), 2 (vector -> cube) or 3"),
        ("pto.aic_initialize_pipe", "slot_size", "0", "the bytes of a slot"),
        ("pto.reserve_buffer", "size", "-8", "the buffer's bytes"),
        ("pto.reserve_buffer", "auto", "1", "true or false"),
        ("pto.reserve_buffer", "base", "-32", "a byte address"),
        ("pto.reserve_buffer", "name", "7", 'a string ("name")'),
    ],
)
def test_a_fifo_key_the_engine_would_misread_is_an_error(op, key, value, expected):
    stmt, _ = STATEMENTS[op]
    # the key replaces its understood value where the statement writes one
    head, sep, tail = stmt.partition(f"{key} = ")
    if sep:
        rest = (
            tail.split(",", 1)[1] if "," in tail.split("}", 1)[0] else "}" + tail.split("}", 1)[1]
        )
        stmt = f"{head}{key} = {value}" + ("," + rest if not rest.startswith("}") else rest)
        text = module(with_dict(stmt, ""))
    else:
        text = module(with_dict(stmt, f"{key} = {value}"))
    with pytest.raises(ParseError) as e:
        parse_text(text, "bad.pto")
    assert e.value.message.startswith(f"{op}: {key}: expected {expected}")
    assert f"bad.pto:{e.value.line}:{e.value.col}" == where(text, f"{key} = {value}", "bad.pto")


def test_a_named_operand_the_fifo_set_up_does_not_read_warns():
    text = module(
        "    pto.aic_initialize_pipe {id = 0, dir_mask = 3, slot_size = 4096} "
        "(c2v_consumer_buf = %x : i64, v2c_consumer_buf = %x : i64, "
        "scratch_buf = %x : i64)\n"
    )
    (w,) = parse_text(text, "o.pto").warnings
    assert w == (
        f"{where(text, 'scratch_buf', 'o.pto')}: warning: pto.aic_initialize_pipe: "
        f"operand scratch_buf is not modelled for pto.aic_initialize_pipe: ignored (its "
        f"timing and values are those without it); understood there: c2v_consumer_buf, "
        f"v2c_consumer_buf"
    )


@pytest.mark.parametrize(
    "stmt",
    [
        "    pto.sync.set #pto.pipe<PIPE_MTE3>, 0 {ffts_mode = 2 : i32, zz_key = 1}\n",
        "    pto.sync.wait #pto.pipe<PIPE_MTE3>, 0 {zz_key}\n",
        "    pto.set_intra_block #pto.pipe<PIPE_MTE3>, 1 {zz_key = 1}\n",
        "    pto.wait_intra_block #pto.pipe<PIPE_MTE3>, 1 {ffts_mode = 2 : i32}\n",
    ],
)
def test_a_cross_core_flag_takes_only_ffts_mode_and_refuses_any_other_key(stmt):
    text = module(stmt)
    with pytest.raises(ParseError) as e:
        parse_text(text, "x.pto")
    key = "zz_key" if "zz_key" in stmt else "ffts_mode"
    assert f"unknown attribute '{key}'" in e.value.message
    assert f"x.pto:{e.value.line}:{e.value.col}" == where(text, key, "x.pto")


def test_warnings_take_no_part_in_program_equality():
    plain = parse_text(module(""), "a.pto")
    noted = parse_text(module("", arg_dict="zz"), "a.pto")
    assert noted.warnings and not plain.warnings
    assert plain == noted


# --- the command line -------------------------------------------------------------------------

KERNEL_WITH_KEYS = f"""module attributes {{pto.target_arch = "a2a3", zz_module = 1}} {{
  func.func @k(%a: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %v = pto.make_tensor_view %a, shape = [%c32, %c32], strides = [%c32, %c1] {{zz_view}} : {TV}
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c32, %c32] : {TV} -> {PTV}
    %t = pto.alloc_tile : {TB}
    pto.tload ins(%p : {PTV}) outs(%t : {TB})
    pto.tadd ins(%t, %t : {TB}, {TB}) outs(%t : {TB})
    pto.tstore ins(%t : {TB}) outs(%p : {PTV})
    return
  }}
}}
"""


def _cli(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_and_run_report_the_warnings(tmp_path, capsys):
    path = tmp_path / "keys.pto"
    path.write_text(KERNEL_WITH_KEYS)
    wanted = [where(KERNEL_WITH_KEYS, k, str(path)) for k in ("zz_module", "zz_view")]
    code, out, err = _cli(["check", str(path)], capsys)
    assert code == 0 and "2 warnings" in out
    assert [
        line.split(": warning:")[0] for line in err.splitlines() if ": warning:" in line
    ] == wanted
    code, out, err = _cli(["run", str(path)], capsys)
    assert code == 0
    shown = [line for line in out.splitlines() if ": warning:" in line]
    assert [line.split(": warning:")[0] for line in shown] == wanted
    assert "attribute zz_view is not modelled for pto.make_tensor_view" in shown[1]
    code, out, err = _cli(["run", "--json", str(path)], capsys)
    got = json.loads(out)["warnings"]
    assert [w.split(": warning:")[0] for w in got[:2]] == wanted


def test_the_run_of_the_kernel_without_the_keys_gives_the_same_cycles(tmp_path, capsys):
    with_keys, without = tmp_path / "a.pto", tmp_path / "b.pto"
    with_keys.write_text(KERNEL_WITH_KEYS)
    without.write_text(KERNEL_WITH_KEYS.replace(", zz_module = 1", "").replace(" {zz_view}", ""))
    runs = []
    for path in (with_keys, without):
        code, out, _ = _cli(["run", "--json", str(path)], capsys)
        assert code == 0
        runs.append(json.loads(out))
    assert runs[0]["total_cycles"] == runs[1]["total_cycles"]
    assert runs[0]["pipes"] == runs[1]["pipes"]
    assert len(runs[0]["warnings"]) == len(runs[1]["warnings"]) + 2


def test_simulate_carries_the_front_end_warnings_first(tmp_path):
    """A study or notebook calling ``simulate`` sees what ``ptosim run`` shows."""
    import sim

    path = tmp_path / "keys.pto"
    path.write_text(KERNEL_WITH_KEYS)
    wanted = [where(KERNEL_WITH_KEYS, k, str(path)) for k in ("zz_module", "zz_view")]
    result = sim.simulate(sim.parse_file(str(path)), functional=False)
    assert [w.split(": warning:")[0] for w in result.warnings[:2]] == wanted
