"""The constructs real kernels use that the simulator does not accept.
The reference gives none of these a semantics the simulator models, so each is refused
in one line naming the construct and its line:col — never a traceback, never a message
about a neighbouring token — by ``check`` and ``run`` alike."""

import subprocess
import sys

import pytest

from sim.frontend import parse_text
from sim.frontend.diagnostics import ParseError

T = "!pto.tile_buf<vec, 16x16xf32>"
TI = "!pto.tile_buf<vec, 16x16xi32>"


def _kernel(body: str, args: str = "") -> str:
    return f"""module {{
  func.func @k(%p: !pto.ptr<f32>, %n: index{args}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %t = pto.alloc_tile : {T}
    %u = pto.alloc_tile : {T}
    %i = pto.alloc_tile : {TI}
{body}
    %z = arith.addi %c0, %c1 : index
    return
  }}
}}
"""


# (construct, statement, expected message, column of the construct on line 8)
CASES = [
    (
        "build_async_session",
        f"    pto.build_async_session %p, %t : !pto.ptr<f32>, {T}",
        "unsupported op 'pto.build_async_session'",
        5,
    ),
    ("memref", "    %m = pto.alloc_tile : memref<16x16xf32>", "unsupported type 'memref<...>'", 27),
    (
        "vector",
        "    %v = arith.constant dense<0.0> : vector<8xf32>",
        "unsupported type 'vector<...>'",
        38,
    ),
    (
        "f8E8M0",
        "    %f = pto.alloc_tile : !pto.tile_buf<vec, 32x32x!pto.f8E8M0>",
        "unsupported element type '!pto.f8E8M0': E8M0 holds the shared exponents of MX "
        "quantisation",
        52,
    ),
    (
        "partition_view without its result type",
        "    %tv = pto.make_tensor_view %p, shape = [%c1, %c1], strides = [%c1, %c1] : "
        "!pto.tensor_view<?x?xf32>\n    %pv = pto.partition_view %tv, offsets = [%c0, %c0], "
        "sizes = [%c1, %c1] : !pto.tensor_view<?x?xf32>",
        "'pto.partition_view': expected '->' and the result type after its operand types, "
        "found '%z'",
        None,
    ),
    (
        "treshape without its result type",
        f"    %r = pto.treshape %t : {T}",
        "'pto.treshape': expected '->' and the result type after its operand types, found '%z'",
        10,
    ),
    (
        "func.call without its result types",
        "    func.call @k(%p, %c0) : (!pto.ptr<f32>, index)",
        "'func.call': expected '->' and the result type after its operand types, found '%z'",
        5,
    ),
]


@pytest.mark.parametrize("what,stmt,message,col", CASES, ids=[c[0] for c in CASES])
def test_a_construct_real_kernels_use_is_refused_at_its_line_and_column(what, stmt, message, col):
    with pytest.raises(ParseError) as e:
        parse_text(_kernel(stmt), "k.pto")
    text = str(e.value).splitlines()[0]
    assert message in text, text
    line = 8 if col is not None else 9
    assert text.startswith(f"k.pto:{line}:{col if col is not None else ''}"), text


def test_a_row_major_tile_narrower_than_32_bytes_is_refused_citing_the_rule():
    """programming-model.md 3.4: an unboxed row-major tile needs Cols*sizeof(T) to be a
    multiple of 32 B (a static_assert of the C++ template)."""
    for shape, found in (("16x4xf32", 16), ("8x8xf16", 16), ("4x24xi8", 24)):
        with pytest.raises(ParseError) as e:
            parse_text(_kernel(f"    %f = pto.alloc_tile : !pto.tile_buf<vec, {shape}>"), "k.pto")
        text = str(e.value).splitlines()[0]
        assert text.startswith("k.pto:8:") and "a row-major tile needs cols*sizeof" in text
        assert f"multiple of 32 bytes, found {found}" in text


@pytest.mark.parametrize("command", ["check", "run"])
def test_check_and_run_refuse_in_one_line_with_exit_2(tmp_path, command):
    for what, stmt, message, _ in CASES[::4]:
        path = tmp_path / "k.pto"
        path.write_text(_kernel(stmt))
        p = subprocess.run(
            [sys.executable, "-m", "sim", command, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 2, (what, p.stderr)
        assert "Traceback" not in p.stderr and message in p.stderr, (what, p.stderr)
