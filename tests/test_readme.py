"""The README's Python examples run as written (in order, in one namespace)."""

import re
from pathlib import Path

import matplotlib

README = Path(__file__).resolve().parent.parent / "README.md"


def test_python_blocks_run(tmp_path, monkeypatch):
    matplotlib.use("Agg")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), ns)
    assert ns["r"].total_cycles > 0
    assert (tmp_path / "run.json").is_file()
