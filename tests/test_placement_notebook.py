"""notebooks/03_manual_vs_auto_placement.ipynb runs (nbclient, a fresh ipykernel of this
interpreter), uses only ``import sim``, is committed without outputs, and shows the
comparison it describes."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from dma_formula import dma_cycles

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = (
    Path(__file__).resolve().parent.parent / "notebooks" / "03_manual_vs_auto_placement.ipynb"
)


def test_committed_clean_and_public_api_only():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    imported = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [] and cell.execution_count is None
        src = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module or "")
    assert imported == {"sim"}


def test_notebook_executes(tmp_path, monkeypatch):
    spec = tmp_path / "jupyter" / "kernels" / "python3"
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
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=60, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure shown"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    # the numbers the notebook's prose explains (tests/test_placement_compare.py derives them)
    assert "relu_sub_hand: clean: no races, no deadlock" in text
    total = 16 * dma_cycles("GM_UB", 8192) + 180 + dma_cycles("UB_GM", 8192)
    assert f"total_cycles            {total + 32:6,}  {total:6,}            -32" in text
    assert "busy_cycles[PIPE_V]      1,696   1,440           -256" in text
    # chunks 2..7 reload a and b while the TSUB two chunks back may still read them: 6 * 2 WAR
    assert "12 findings, the first three:" in text
