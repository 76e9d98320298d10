"""The wheel ships the target data inside the package (sim/models/...), nothing at top level.

Builds a wheel with the venv's pip (no build isolation: hatchling comes from the venv, so
no network is needed; the test is skipped if the build cannot run here). One build is
shared by the tests of this module; the whole module takes a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_TIMEOUT_S = 20


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("hatchling", reason="hatchling is not installed in this environment")
    out = tmp_path_factory.mktemp("wheel")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-q",
        "-w",
        str(out),
        str(ROOT),
    ]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        pytest.skip(f"wheel build did not finish in {BUILD_TIMEOUT_S} s")
    if p.returncode != 0:
        text = (p.stdout + p.stderr).lower()
        if any(
            w in text
            for w in (
                "network",
                "connection",
                "could not find a version",
                "no matching distribution",
                "no module named pip",
            )
        ):
            pytest.skip(f"cannot build a wheel here: {p.stderr.strip().splitlines()[-1:]}")
        pytest.fail(f"pip wheel failed:\n{p.stdout}\n{p.stderr}")
    wheels = list(out.glob("pto_sim-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def test_wheel_contains_the_target_data(names):
    for f in (
        "sim/models/a2a3/machine.toml",
        "sim/models/a2a3/vector_costs.csv",
        "sim/models/a5/machine.toml",
    ):
        assert f in names, f
    targets = {n.split("/")[2] for n in names if n.startswith("sim/models/") and n.count("/") == 3}
    assert {"a2a3", "a5"} <= targets
    for t in targets:  # every target has its legality table
        assert f"sim/models/{t}/ops.toml" in names, t


def test_wheel_data_matches_the_checkout(wheel):
    with zipfile.ZipFile(wheel) as z:
        for rel in ("a2a3/machine.toml", "a2a3/vector_costs.csv", "a5/machine.toml"):
            assert z.read(f"sim/models/{rel}") == (ROOT / "models" / rel).read_bytes(), rel


def test_wheel_has_no_top_level_models_or_traces(names):
    tops = {n.split("/")[0] for n in names}
    assert "models" not in tops and "traces" not in tops
    assert {t for t in tops if not t.endswith(".dist-info")} == {"sim"}


def test_wheel_declares_the_console_script(wheel):
    with zipfile.ZipFile(wheel) as z:
        ep = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = z.read(ep).decode()
    assert "ptosim = sim.cli:main" in text


def test_unpacked_wheel_finds_its_own_models(wheel, tmp_path):
    """Run the package from the unpacked wheel (first on sys.path), in an unrelated cwd:
    models_dir() must be the wheel's sim/models and a cost must come out of it."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    code = (
        "import sim, sim.target as t\n"
        "print(sim.__file__)\n"
        "print(t.models_dir())\n"
        "print(sim.simulate_op('TADD', 'f32', (16, 64)).total_cycles)\n"
    )
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run(
        [sys.executable, "-c", code],
        cwd=run_dir,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    sim_file, models, cycles = p.stdout.split()
    assert Path(sim_file).is_relative_to(site)
    assert Path(models) == site / "sim" / "models"
    assert int(cycles) == 24 + 2 * 16  # vadd, 16 repeats (timing-model §4)
