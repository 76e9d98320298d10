"""``.py`` kernels take parameters: every ``--arg NAME=VALUE`` of ``run``, ``check`` and
``compare`` goes to ``build(NAME=VALUE)``, parsed as an int, float or bool when it reads as
one; ``build()`` without parameters still works; unknown, missing and mistyped parameters
are one-line user errors naming what ``build()`` accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main as ptosim

ROOT = Path(__file__).resolve().parent.parent
TILED = ROOT / "examples" / "relu_sub_tiled.py"
PLAIN = ROOT / "examples" / "relu_sub.py"

ECHO = """\
import json
from pathlib import Path

import sim

def build(n, scale=1.0, flag=False, name="x", **extra):
    seen = {"n": n, "scale": scale, "flag": flag, "name": name, **extra}
    Path(__file__).with_suffix(".json").write_text(json.dumps(seen))
    k = sim.Kernel("echo")
    a, c = k.gm("a", "f32", (16, 64)), k.gm("c", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, 64)
    e = k.TLOAD(t, a)
    for _ in range(n):
        e = k.TMULS(t, t, scale, e)
    k.TSTORE(c, t, e)
    return k
"""


def run(capsys, *argv):
    code = ptosim([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def instructions(capsys, *argv) -> int:
    code, out, err = run(capsys, "run", *argv, "--json", "--timing-only")
    assert code == 0, err
    return json.loads(out)


def test_args_reach_build_and_change_the_kernel(capsys):
    default = instructions(capsys, TILED)
    wide = instructions(capsys, TILED, "--arg", "cols=128", "--arg", "buffers=1")
    assert default["kernel"] == "relu_sub_32x64_x2" and wide["kernel"] == "relu_sub_32x128_x1"
    # a 256x256 matrix in 32x64 tiles is 32 tiles, in 32x128 tiles 16; 5 ops per tile
    assert (default["instructions"], wide["instructions"]) == (32 * 5, 16 * 5)


def test_values_are_parsed_like_pto_scalars(tmp_path, capsys):
    path = tmp_path / "echo.py"
    path.write_text(ECHO)
    code, _, err = run(
        capsys,
        "check",
        path,
        "--arg",
        "n=0x3",
        "--arg",
        "scale=2",
        "--arg",
        "flag=true",
        "--arg",
        "name=16",
        "--arg",
        "dt=f16",
        "--arg",
        "eps=1e-3",
    )
    assert code == 0, err
    seen = json.loads(path.with_suffix(".json").read_text())
    assert seen == {"n": 3, "scale": 2.0, "flag": True, "name": "16", "dt": "f16", "eps": 1e-3}
    assert type(seen["scale"]) is float and type(seen["n"]) is int
    code, out, err = run(capsys, "compare", path, "--arg", "n=2", "--json")
    assert code == 0, err
    assert json.loads(path.with_suffix(".json").read_text())["n"] == 2


def test_a_build_without_parameters_still_runs(capsys):
    assert instructions(capsys, PLAIN)["kernel"] == "relu_sub"


@pytest.mark.parametrize(
    "kernel, argv, what",
    [
        (PLAIN, ["--arg", "rows=8"], "build() has no parameter 'rows' (parameters: none)"),
        (
            TILED,
            ["--arg", "depth=2"],
            "build() has no parameter 'depth' (parameters: rows, cols, buffers, height, width)",
        ),
        (TILED, ["--arg", "rows=2.5"], "--arg rows=2.5: expected int like the default 32"),
        (
            TILED,
            ["--arg", "rows=24"],
            "relu_sub_tiled.py:28: ValueError while building the kernel: "
            "a 24x64 tile does not divide the 256x256 matrix",
        ),
        ("echo.py", [], "build() needs --arg n=VALUE"),
    ],
)
@pytest.mark.parametrize("command", ["run", "check", "compare"])
def test_parameter_mistakes_are_user_errors(
    command, kernel, argv, what, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "echo.py").write_text(ECHO)
    code, out, err = run(capsys, command, kernel, *argv)
    assert code == 2 and what in err and "Traceback" not in err
    assert err.startswith("ptosim: error: ") and err.count("\n") == 1
