"""The notebooks in notebooks/ run, use only the public API, and are committed clean.

Each notebook is executed with nbclient in a fresh ipykernel started from this test's
own interpreter (a temporary ``python3`` kernel spec placed first on ``JUPYTER_PATH``,
so a user-level spec for another Python cannot be picked up), in a temporary working
directory ``notebooks/`` beside a link to the repository's ``examples/`` (so the
notebooks reach ``../examples`` as they do in the repository), and must finish without an
error. The time limit is a guard against a hang, not a speed target (how fast the
notebooks' runs are is measured in ``bench/``).
"""

from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TIME_LIMIT_S = 180  # a hang guard, far above any notebook's run time on a loaded machine


@pytest.fixture(scope="module")
def kernel_path(tmp_path_factory):
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "pto-sim test kernel",
                "language": "python",
            }
        )
    )
    return root


def _ids(paths):
    return [p.name for p in paths]


def test_the_two_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == [
        "01_cycle_count.ipynb",
        "02_occupancy_and_stalls.ipynb",
        "03_manual_vs_auto_placement.ipynb",
        "04_gemm_multicore.ipynb",
        "05_sweep.ipynb",
        "06_ranks.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_imports_only_the_public_api(path):
    nb = nbformat.read(path, as_version=4)
    imported = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Lambda)):
                pytest.fail(f"{path.name}: defines {type(node).__name__}; keep logic in sim/")
    assert imported == {"sim"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes(path, kernel_path, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_path))
    nb = nbformat.read(path, as_version=4)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "notebooks").mkdir()
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=TIME_LIMIT_S,
        resources={"metadata": {"path": str(tmp_path / "notebooks")}},
    )
    t0 = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - t0
    assert elapsed < TIME_LIMIT_S, f"{path.name} took {elapsed:.1f} s"
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure shown inline"
