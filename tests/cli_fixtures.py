"""Fixtures shared by the command-line test modules."""

from __future__ import annotations

import pytest

from sim.cli import main


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``ptosim ARGS`` in-process from tmp_path -> (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)

    def run(*args):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def one_line_error(code, err, *needles):
    """The run ended as a user error should: exit 2, one line ``ptosim: error: ...``
    holding every needle, no traceback."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ptosim: error:"), err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]
