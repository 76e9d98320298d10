"""The sweep journal on disk (``sim.studies.journal``): never written through a symbolic
link, and a malformed row is skipped with a warning naming its line, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sim
from sim.base.errors import UserError
from sim.cli import main as ptosim
from sim.studies import journal

pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
TILED = ROOT / "examples" / "relu_sub_tiled.py"
SMALL = {"height": 64, "width": 64, "rows": [16, 32]}


def test_a_journal_that_is_a_symbolic_link_is_refused(tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "s.parquet"
    Path(f"{out}.journal").symlink_to(victim)
    with pytest.raises(UserError, match="symbolic link"):
        sim.sweep(TILED, SMALL, output=out, processes=False, workers=1)
    assert victim.read_text() == "precious\n" and not out.exists()
    code = ptosim(["sweep", str(TILED), "--param", "rows=16", "-o", str(out)])
    err = capsys.readouterr().err
    assert code != 0 and "symbolic link" in err and len(err.strip().splitlines()) == 1
    assert victim.read_text() == "precious\n"


def test_malformed_journal_rows_are_skipped_with_a_warning(tmp_path, capsys):
    out = tmp_path / "s.parquet"
    first = sim.sweep(TILED, SMALL, output=out, processes=False, workers=1)
    path = Path(f"{out}.journal")
    good, second = (json.loads(line) for line in path.read_text().splitlines())
    listed = {**good, "config": [good["config"]]}
    wordy = {**second, "total_cycles": "many"}
    path.write_text(json.dumps(listed) + "\n" + json.dumps(wordy) + "\n")
    again = sim.sweep(TILED, SMALL, output=out, processes=False, workers=1)
    err = capsys.readouterr().err
    assert f"{path}:1: row skipped (config is a list, expected text)" in err
    assert f'{path}:2: row skipped (total_cycles is "many", expected a whole number)' in err
    assert "Traceback" not in err
    assert again["total_cycles"].tolist() == first["total_cycles"].tolist()


@pytest.mark.parametrize(
    "field, value, why",
    [
        ("error", 3, "error is 3, expected text"),
        ("busy_cycles[PIPE_V]", 1.5, "busy_cycles[PIPE_V] is 1.5, expected a whole number"),
        ("races", True, "races is true, expected a whole number"),
        ("config", None, "config is null, expected text"),
    ],
)
def test_what_makes_a_row_malformed(field, value, why):
    row = {"config": "abc", "target": "a2a3", "sync": "auto", "error": None, "total_cycles": 5}
    assert journal.malformed(row) is None
    assert journal.malformed({**row, field: value}) == why
