"""The documented trace format is the one the code uses."""

import re
from pathlib import Path

from sim.trace.schema import COLUMNS, describe

README = Path(__file__).resolve().parent.parent / "traces" / "README.md"


def test_readme_table_matches_schema():
    text = README.read_text()
    block = re.search(r"<!-- schema:begin -->\n(.*)\n<!-- schema:end -->", text, re.S).group(1)
    assert block == describe()


def test_every_column_documented_once():
    text = README.read_text()
    for col in COLUMNS:
        assert text.count(f"| `{col}` |") == 1, col
