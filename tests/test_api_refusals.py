"""What the Python API refuses in one line, as the command line does: a run of something
that is no kernel, an input name the kernel has no argument for, the data of a run that
computed none, module attributes that name two targets, a float scalar argument its type
cannot hold.

Each of these used to go through: ``simulate(None)`` was a TypeError from deep inside
("cannot create weak reference"), an unknown input name was ignored (the argument it meant
ran on random data), ``output()`` of a timing-only run returned zeros, and an a2a3
``target_arch`` beside an Ascend950 ``device-spec`` ran a2a3 without a word (as did a
program whose attributes named a5: ``simulate`` took a2a3 unless told), and
``--arg f=1e40`` on an f32 printed numpy's RuntimeWarning and ran as an infinity.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.frontend import parse_text, resolve_target, target_from_attrs
from sim.frontend.targets import target_conflict


def _copy_kernel() -> sim.Kernel:
    k = sim.Kernel("copy")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    a = k.tile("vec", "f32", 16, 64, name="a")
    k.TSTORE(y, a, k.TLOAD(a, x))
    return k


@pytest.mark.parametrize(
    "thing, said",
    [
        (None, "found NoneType"),
        (42, "found int"),
        ("examples/tsub.pto", "found str (a path: sim.parse_file reads a .pto file)"),
    ],
)
def test_simulating_what_is_no_kernel_is_one_line(thing, said):
    with pytest.raises(sim.UserError) as e:
        sim.simulate(thing)
    assert f"simulate: expected a sim.Kernel or a parsed Program, {said}" in str(e.value)


def test_an_input_name_the_kernel_has_no_argument_for_is_refused():
    k = _copy_kernel()
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    with pytest.raises(sim.UserError) as e:
        sim.simulate(k, inputs={"xx": x})
    assert "has no argument 'xx'" in str(e.value) and "x, y" in str(e.value)
    # the right name is read: the copy is the input
    assert np.array_equal(sim.simulate(k, inputs={"x": x}).output("y").reshape(16, 64), x)


def test_outputs_of_a_timing_only_run_are_an_error_not_zeros():
    k = _copy_kernel()
    timed = sim.simulate(k, functional=False)
    with pytest.raises(sim.UserError, match="timing-only .* computed no data"):
        timed.output("y")
    # the same run with its functional units gives the data (and the same cycles)
    full = sim.simulate(k)
    assert full.output("y").shape == (16 * 64,) and full.total_cycles == timed.total_cycles


_MODULE = """module attributes {{{attrs}}} {{
  func.func @k(%px: !pto.ptr<f32>) {{
    return
  }}
}}
"""


@pytest.mark.parametrize(
    "arch, device, target",
    [("a2a3", "Ascend950", "a5"), ("a5", "Ascend910B1", "a2a3"), ("a3", "Ascend950PR", "a5")],
)
def test_target_attributes_naming_different_targets_are_refused(arch, device, target):
    attrs = f'pto.target_arch = "{arch}", "pto.device-spec" = "{device}"'
    program = parse_text(_MODULE.format(attrs=attrs))
    with pytest.raises(sim.UserError) as e:
        target_from_attrs(program.attrs)
    said = str(e.value)
    assert f'pto.target_arch = "{arch}"' in said and f'"pto.device-spec" = "{device}"' in said
    assert f"({target}) name different targets" in said
    assert target_conflict(program.attrs) is not None
    # an explicit target settles it (the command line warns: tests below)
    assert resolve_target(program, "a5") == "a5"


def test_simulate_runs_on_the_target_the_module_names_and_refuses_two():
    copy = (
        "  func.func @k(%px: !pto.ptr<f32>, %py: !pto.ptr<f32>) {\n"
        "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
        "    %c16 = arith.constant 16 : index\n    %c64 = arith.constant 64 : index\n"
        "    %tx = pto.make_tensor_view %px, shape = [%c16, %c64], strides = [%c64, %c1]"
        " : !pto.tensor_view<?x?xf32>\n"
        "    %vx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c16, %c64]"
        " : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>\n"
        "    %t = pto.alloc_tile : !pto.tile_buf<vec, 16x64xf32>\n"
        "    pto.tload ins(%vx : !pto.partition_tensor_view<16x64xf32>)"
        " outs(%t : !pto.tile_buf<vec, 16x64xf32>)\n"
        "    return\n  }\n"
    )
    for attrs, named in (
        ('pto.target_arch = "a5"', "a5"),
        ('"pto.device-spec" = "Ascend950"', "a5"),
        ('pto.target_arch = "a3"', "a2a3"),
    ):
        program = parse_text(f"module attributes {{{attrs}}} {{\n{copy}}}\n")
        assert sim.simulate(program).target.name == named  # as ptosim run picks it
        assert sim.simulate(program, "a2a3").target.name == "a2a3"  # an explicit one rules
    assert sim.simulate(parse_text(f"module {{\n{copy}}}\n")).target.name == "a2a3"
    both = 'pto.target_arch = "a2a3", "pto.device-spec" = "Ascend950"'
    program = parse_text(f"module attributes {{{both}}} {{\n{copy}}}\n")
    with pytest.raises(sim.UserError, match="name different targets"):
        sim.simulate(program)


def test_agreeing_target_attributes_are_no_conflict():
    attrs = '"pto.device-spec" = "Ascend950", pto.target_arch = "a5"'
    program = parse_text(_MODULE.format(attrs=attrs))
    assert target_conflict(program.attrs) is None and resolve_target(program) == "a5"


def test_the_command_line_refuses_the_conflict_and_warns_under_target(cli, tmp_path):
    path = tmp_path / "k.pto"
    path.write_text(
        _MODULE.format(attrs='pto.target_arch = "a2a3", "pto.device-spec" = "Ascend950"')
    )
    code, out, err = cli("check", str(path))
    assert code == 2 and "name different targets; make them agree" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    code, out, err = cli("check", str(path), "--target", "a5")
    assert code == 0 and "warning" in err and "running --target a5" in err


TFMODS = Path(__file__).resolve().parent.parent / "examples" / "tfmods.pto"  # %divisor: f32


@pytest.mark.parametrize("value", ["1e40", "-1e40", "3.40282357e38"])
def test_a_float_argument_past_its_types_range_is_refused(cli, value):
    # as an integer out of range is: the run would divide by an infinity
    code, out, err = cli("run", TFMODS, "--arg", f"divisor={value}")
    assert code == 2 and "Traceback" not in err and "RuntimeWarning" not in err
    assert err.strip() == (
        f"ptosim: error: --arg divisor={value}: out of range for f32: its largest finite "
        f"value is 3.4028235e+38 (pass inf for an infinity)"
    )
    program = sim.parse_file(TFMODS)
    with pytest.raises(sim.UserError, match=r"%divisor \(f32\) = .* is out of range for f32"):
        sim.simulate(program, inputs={"divisor": float(value)})


@pytest.mark.parametrize("value", ["3.4028234e38", "inf", "-inf", "1e-45", "1e-50", "-0.0"])
def test_a_float_argument_the_type_holds_runs(cli, value):
    code, out, err = cli("run", TFMODS, "--arg", f"divisor={value}")
    assert code == 0 and "RuntimeWarning" not in err, err


@pytest.mark.parametrize("bad", ["my kernel", "a\nb", 'q"', "x/y", "%t", 7])
def test_builder_names_pto_ir_cannot_spell_are_refused_where_given(bad):
    # they were accepted and printed as IR that does not parse back
    said = f"{bad!r}: PTO IR names are letters, digits and _ $ . -"
    with pytest.raises(sim.UserError, match="Kernel name " + re.escape(said)):
        sim.Kernel(bad)
    k = sim.Kernel("k")
    with pytest.raises(sim.UserError, match="name " + re.escape(said)):
        k.gm(bad, "f32", (16, 64))
    with pytest.raises(sim.UserError, match="name " + re.escape(said)):
        k.tile("vec", "f32", 16, 64, name=bad)


def test_every_name_the_builder_takes_prints_as_ir_that_parses_back():
    from sim.frontend import print_program

    k = sim.Kernel("k.v-2$")
    x = k.gm("in_0.a-b$", "f32", (16, 64))
    y = k.gm("Out9", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, 64, name="t.1-$")
    k.TSTORE(y, t, k.TLOAD(t, x))
    program = k.program()
    again = parse_text(print_program(program))
    assert print_program(again) == print_program(program)
    assert again.main.name == "k.v-2$"
