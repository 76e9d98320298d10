"""``ptosim run / check / print`` on PTO IR files: options, outputs, target resolution and
diagnostics (exit code 2, ``FILE:LINE:COL: error:`` with a caret, never a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sim.cli import main as ptosim
from sim.frontend import parse_file, parse_text

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"


def run(capsys, *argv):
    code = ptosim([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_binds_inputs_and_writes_outputs(tmp_path, capsys):
    x = np.random.default_rng(0).uniform(1, 4, (16, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, out, err = run(
        capsys,
        "run",
        EX / "tdivs.pto",
        "--input",
        f"px={tmp_path / 'x.npy'}",
        "--output",
        f"pq={tmp_path / 'q.npy'}",
        "--output",
        f"%pr={tmp_path / 'r.npy'}",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["kernel"] == "tdivs_16x64" and report["target"] == "a2a3"
    q, r = np.load(tmp_path / "q.npy"), np.load(tmp_path / "r.npy")
    np.testing.assert_allclose(q.reshape(16, 64), x / np.float32(3), rtol=1e-6)
    np.testing.assert_allclose(r.reshape(16, 64), 1 / x, rtol=1e-6)


def test_run_scalar_arguments(tmp_path, capsys):
    a = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((128, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    code, out, err = run(
        capsys,
        "run",
        EX / "relu_sub_db.pto",
        "--arg",
        "k=2",
        "--input",
        f"pa={tmp_path / 'a.npy'}",
        "--input",
        f"pb={tmp_path / 'b.npy'}",
        "--output",
        f"po={tmp_path / 'o.npy'}",
    )
    assert code == 0, err
    assert "%po written to" in out
    np.testing.assert_array_equal(
        np.load(tmp_path / "o.npy").reshape(128, 64), np.maximum(a - b, 0)
    )


def test_unbound_inputs_get_seeded_random_data(tmp_path, capsys):
    outs = []
    for i in range(2):
        code, _, err = run(
            capsys, "run", EX / "tdivs.pto", "--output", f"pq={tmp_path / f'q{i}.npy'}"
        )
        assert code == 0, err
        outs.append(np.load(tmp_path / f"q{i}.npy"))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert np.abs(outs[0]).max() > 0


def test_target_comes_from_the_module_unless_given(capsys):
    code, out, _ = run(capsys, "run", EX / "compact_add.pto", "--json")
    assert code == 0 and json.loads(out)["target"] == "a5"
    code, out, _ = run(capsys, "run", EX / "compact_add.pto", "--json", "--target", "a2a3")
    assert code == 0 and json.loads(out)["target"] == "a2a3"


def test_unknown_target_attribute_is_an_error_unless_overridden(tmp_path, capsys):
    src = (
        (EX / "tdivs.pto").read_text().replace('pto.target_arch = "a2a3"', 'pto.target_arch = "a7"')
    )
    path = tmp_path / "k.pto"
    path.write_text(src)
    code, _, err = run(capsys, "check", path)
    assert code == 2 and '"a7"' in err and "--target" in err
    code, out, err = run(capsys, "check", path, "--target", "a2a3")
    assert code == 0, err


@pytest.mark.parametrize(
    "argv, what",
    [
        (["--arg", "nope=1"], "no scalar argument %nope"),
        (["--arg", "k=abc"], "expected a value of type index"),
        (["--arg", "k"], "expected NAME=VALUE"),
        (["--input", "zz=x.npy"], "no GM pointer argument %zz"),
        (["--input", "pa=missing.npy"], "no such file"),
        (["--output", "k=o.npy"], "no GM pointer argument %k"),
    ],
)
def test_run_option_mistakes(argv, what, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "run", EX / "relu_sub_db.pto", *argv)
    assert code == 2 and what in err and "Traceback" not in err


def test_check_reports_verifier_failures_at_the_instruction(tmp_path, capsys):
    src = (
        (EX / "tdivs.pto")
        .read_text()
        .replace("16x64xf32>", "16x64xi8>")
        .replace("!pto.tile_buf<vec, 16x64xi8>, f32", "!pto.tile_buf<vec, 16x64xi8>, i8")
        .replace("%three = arith.constant 3.000000e+00 : f32", "%three = arith.constant 3 : i8")
        .replace("%one = arith.constant 1.000000e+00 : f32", "%one = arith.constant 1 : i8")
        .replace("f32, !pto.tile_buf", "i8, !pto.tile_buf")
        .replace("!pto.ptr<f32>", "!pto.ptr<i8>")
        .replace("?x?xf32", "?x?xi8")
    )
    path = tmp_path / "bad.pto"
    path.write_text(src)
    code, out, err = run(capsys, "check", path)
    assert code == 2 and out == ""
    head, line, caret = err.splitlines()[:3]
    assert head.startswith(f"{path}:") and ": error: TLOAD" not in head
    assert "error: TDIVS: operand" in head and "dtype" in head
    lineno, col = map(int, head[len(str(path)) + 1 :].split(":")[:2])
    assert line == src.splitlines()[lineno - 1] and caret == " " * (col - 1) + "^"


def test_check_reports_parse_errors_with_a_caret(tmp_path, capsys):
    path = tmp_path / "k.pto"
    path.write_text("module {\n  func.func @k() {\n    %v = pto.vlds %x\n    return\n  }\n}\n")
    code, out, err = run(capsys, "check", path)
    assert code == 2 and out == ""
    assert err.splitlines() == [
        f"{path}:3:10: error: unsupported op 'pto.vlds'",
        "    %v = pto.vlds %x",
        "         ^",
    ]


def test_run_reports_parse_errors_too(tmp_path, capsys):
    path = tmp_path / "k.pto"
    path.write_text(
        "module {\n  func.func @k() {\n    pto.trelu ins(%a) outs(%a)\n    return\n  }\n}\n"
    )
    code, _, err = run(capsys, "run", path)
    assert code == 2 and err.startswith(f"{path}:3:19: error: use of undefined value '%a'")


def test_print_writes_canonical_text_that_parses_back(tmp_path, capsys):
    code, out, _ = run(capsys, "print", EX / "trem.pto")
    assert code == 0 and "!pto.tile_buf<vec, 16x64xf32>" in out and "loc=" not in out
    assert parse_text(out, "printed.pto") == parse_file(EX / "trem.pto")


def test_print_and_check_also_take_python_kernels(capsys):
    code, out, _ = run(capsys, "print", EX / "relu_sub.py")
    assert code == 0 and out.startswith("module {\n  func.func @relu_sub(")
    code, out, err = run(capsys, "check", EX / "relu_sub.py")
    assert code == 0 and "ok" in out, err


def test_check_counts_instructions_in_loops_and_branches(capsys):
    code, out, _ = run(capsys, "check", EX / "matmul.pto")
    assert code == 0 and "7 tile instructions" in out


def test_console_script_exit_code_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.pto"
    bad.write_text('module {\n  func.func @k() {\n    "pto.tmov"() : () -> ()\n  }\n}\n')
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [sys.executable, "-m", "sim", "check", str(bad)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{bad}:3:5: error: unsupported: generic MLIR operation form")
