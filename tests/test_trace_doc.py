"""The documented trace format is the one the code uses."""

import re
from pathlib import Path

from sim.trace.schema import COLUMNS, RANK_COLUMNS, describe, describe_ranks

README = Path(__file__).resolve().parent.parent / "traces" / "README.md"


def test_readme_table_matches_schema():
    text = README.read_text()
    block = re.search(r"<!-- schema:begin -->\n(.*)\n<!-- schema:end -->", text, re.S).group(1)
    assert block == describe()


def test_readme_rank_table_matches_schema():
    text = README.read_text()
    block = re.search(
        r"<!-- rank-schema:begin -->\n(.*)\n<!-- rank-schema:end -->", text, re.S
    ).group(1)
    assert block == describe_ranks()


def test_every_column_documented_once():
    text = README.read_text()
    for col in (*COLUMNS, *RANK_COLUMNS):
        assert text.count(f"| `{col}` |") == 1, col
