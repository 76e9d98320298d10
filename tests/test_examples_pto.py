"""The PTO IR examples (examples/*.pto): each parses, passes ``ptosim check`` and computes
what numpy says it should.

The numerical checks run ``sim.simulate(parse_file(path), target, inputs=...)`` with
explicit inputs and compare the GM outputs with numpy references.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.cli import main as ptosim
from sim.frontend import parse_file, parse_text, print_program, resolve_target

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ALL = sorted(EXAMPLES.glob("*.pto"))
IDS = [p.stem for p in ALL]


def rng(seed=0):
    return np.random.default_rng(seed)


def run(name: str, **inputs):
    program = parse_file(EXAMPLES / f"{name}.pto")
    return sim.simulate(program, resolve_target(program), inputs=inputs)


def out(result, name, shape):
    return np.asarray(result.output(name)).reshape(-1)[: int(np.prod(shape))].reshape(shape)


# --- every example ------------------------------------------------------------------------


def test_the_examples_cover_the_issue_list():
    names = set(IDS)
    assert len(ALL) >= 8
    # each seed op in a vector kernel, softmax, level-3 double buffering, cube matmul,
    # dynamic valid shapes, the compact tile_buf form
    assert {
        "trem",
        "tfmods",
        "tdivs",
        "trelu",
        "tsub",
        "row_softmax",
        "relu_sub_db",
        "matmul",
        "dyn_valid",
        "compact_add",
    } <= names
    text = {p.stem: p.read_text() for p in ALL}
    assert "pto.tdivs ins(%x, %three" in text["tdivs"] and "pto.tdivs ins(%one, %x" in text["tdivs"]
    assert "alloc_tile addr = " in text["relu_sub_db"] and "pto.set_flag[" in text["relu_sub_db"]
    assert "valid_row = " in text["dyn_valid"] and "v_row=?" in text["dyn_valid"]
    assert "loc=" not in text["compact_add"]
    for op in ("pto.textract", "pto.tmov", "pto.tmatmul", "pto.tmatmul.acc"):
        assert op in text["matmul"]


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_example_parses_and_round_trips(path):
    program = parse_file(path)
    assert parse_text(print_program(program), "printed.pto") == program


@pytest.mark.parametrize("path", ALL, ids=IDS)
def test_ptosim_check_exits_0(path, capsys):
    assert ptosim(["check", str(path)]) == 0
    assert "ok" in capsys.readouterr().out


def test_ptosim_check_as_a_command(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [sys.executable, "-m", "sim", "check", str(EXAMPLES / "trem.pto")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "verified for a2a3" in r.stdout


def test_targets_come_from_the_module_attributes():
    assert resolve_target(parse_file(EXAMPLES / "compact_add.pto")) == "a5"
    assert resolve_target(parse_file(EXAMPLES / "matmul.pto")) == "a2a3"  # device-spec
    assert resolve_target(parse_file(EXAMPLES / "tsub.pto")) == "a2a3"  # default


# --- numbers -------------------------------------------------------------------------------


def test_trem():
    x = rng(1).uniform(-50, 50, (32, 64)).astype(np.float32)
    y = rng(2).uniform(0.5, 9, (32, 64)).astype(np.float32) * rng(3).choice([-1, 1], (32, 64))
    y = y.astype(np.float32)
    r = run("trem", px=x, py=y)
    f = np.fmod(x, y)
    ref = np.where((f != 0) & ((f < 0) != (y < 0)), f + y, f)
    np.testing.assert_allclose(out(r, "pm", (32, 64)), ref, rtol=1e-6, atol=1e-5)


def test_tfmods_with_a_scalar_argument():
    x = rng(4).uniform(-20, 20, (16, 64)).astype(np.float32)
    r = run("tfmods", px=x, divisor=-2.5)
    np.testing.assert_allclose(
        out(r, "po", (16, 64)), np.fmod(x, np.float32(2.5)), rtol=1e-6, atol=1e-6
    )


def test_tdivs_both_orders():
    x = rng(5).uniform(0.5, 8, (16, 64)).astype(np.float32) * rng(6).choice([-1, 1], (16, 64))
    x = x.astype(np.float32)
    r = run("tdivs", px=x)
    np.testing.assert_allclose(out(r, "pq", (16, 64)), x / np.float32(3), rtol=1e-6)
    np.testing.assert_allclose(out(r, "pr", (16, 64)), np.float32(1) / x, rtol=1e-6)


def test_trelu_split_over_blocks():
    x = rng(7).standard_normal((64, 64)).astype(np.float32)
    r = run("trelu", px=x, n=64)
    np.testing.assert_array_equal(out(r, "po", (64, 64)), np.maximum(x, 0))


def test_tsub_through_a_called_function():
    a = rng(8).standard_normal((32, 64)).astype(np.float32)
    b = rng(9).standard_normal((32, 64)).astype(np.float32)
    r = run("tsub", pa=a, pb=b)
    np.testing.assert_array_equal(out(r, "po", (32, 64)), a - b)


def test_row_softmax():
    x = rng(10).uniform(-4, 4, (32, 64)).astype(np.float32)
    r = run("row_softmax", px=x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(
        out(r, "py", (32, 64)), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7
    )


def test_relu_sub_double_buffered():
    k = 3
    a = rng(11).standard_normal((64 * k, 64)).astype(np.float32)
    b = rng(12).standard_normal((64 * k, 64)).astype(np.float32)
    r = run("relu_sub_db", pa=a, pb=b, k=k)
    np.testing.assert_array_equal(out(r, "po", (64 * k, 64)), np.maximum(a - b, 0))
    # level 3: the flags the file sets are what orders the pipes; loads overlap compute
    assert (
        r.total_cycles
        < r.pipes["PIPE_MTE2"]["busy_cycles"]
        + r.pipes["PIPE_V"]["busy_cycles"]
        + r.pipes["PIPE_MTE3"]["busy_cycles"]
    )


def test_matmul_through_l1_l0_and_fixpipe():
    a = rng(13).uniform(-1, 1, (64, 64)).astype(np.float16)
    b = rng(14).uniform(-1, 1, (64, 64)).astype(np.float16)
    r = run("matmul", pa=a, pb=b)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(out(r, "pc", (64, 64)), ref, rtol=1e-3, atol=1e-3)


def test_dynamic_valid_shapes():
    x = rng(15).uniform(-4, 4, (32, 128)).astype(np.float16)
    o0 = np.full((32, 128), 7, np.float16)
    vr, vc = 20, 96
    r = run("dyn_valid", px=x, po=o0, vr=vr, vc=vc)
    ref = o0.copy()
    ref[: vr // 2, :vc] = x[: vr // 2, :vc] * np.float16(2)
    np.testing.assert_array_equal(out(r, "po", (32, 128)), ref)


def test_compact_form_kernel():
    a = rng(16).standard_normal((16, 64)).astype(np.float32)
    b = rng(17).standard_normal((16, 64)).astype(np.float32)
    r = run("compact_add", pa=a, pb=b)
    s = a + b
    np.testing.assert_array_equal(out(r, "pc", (16, 64)), s.astype(np.float16))
    np.testing.assert_array_equal(out(r, "pd", (16, 64)), s * np.float32(0.5))
