"""The user cache of parsed ``.pto`` files (``sim.frontend.program_cache``): a kept program
is the one a parse gives, served only for the same file name and text, and every failure
falls back to parsing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import sim
from sim.base.errors import UserError
from sim.frontend import parse as parse_module
from sim.frontend import program_cache, user_cache
from sim.frontend.diagnostics import source_line

ROOT = Path(__file__).resolve().parent.parent
FA = (ROOT / "examples" / "flash_attention.pto").read_text()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(where))
    return where / "programs"


def _no_parser(monkeypatch):
    def refuse():
        raise AssertionError("the file was parsed again")

    monkeypatch.setattr(parse_module, "pto_parser", refuse)


def test_a_second_parse_of_a_file_loads_the_program_the_first_built(cache, tmp_path, monkeypatch):
    f = tmp_path / "fa.pto"
    f.write_text(FA)
    first = sim.parse_file(f)
    assert len(list(cache.glob("*.pickle"))) == 1
    _no_parser(monkeypatch)
    again = sim.parse_file(f)
    assert again == first and again is not first
    assert again.warnings == first.warnings
    # the locations name the file as given, and a later diagnostic finds its lines
    assert source_line(str(f), 1) == FA.splitlines()[0]


def test_the_cached_program_simulates_as_the_parsed_one(cache, tmp_path):
    f = tmp_path / "fa.pto"
    f.write_text(FA)
    args = dict(inputs={"S1": 256, "S1_TILE": 128}, block_dim=2, functional=False)
    parsed = sim.simulate(sim.parse_file(f), "a2a3", **args)
    loaded = sim.simulate(sim.parse_file(f), "a2a3", **args)
    assert loaded.total_cycles == parsed.total_cycles
    assert loaded.trace.equals(parsed.trace)


def test_an_edited_file_is_parsed_again_and_replaces_its_entry(cache, tmp_path):
    f = tmp_path / "fa.pto"
    f.write_text(FA)
    sim.parse_file(f)
    edited = FA.replace("%c3 = arith.constant 3 : index", "%c3 = arith.constant 7 : index", 1)
    assert edited != FA
    f.write_text(edited)
    program = sim.parse_file(f)
    assert program == sim.parse_text(edited, str(f)) != sim.parse_text(FA, str(f))
    assert len(list(cache.glob("*.pickle"))) == 1


def test_the_same_text_under_another_name_is_its_own_entry(cache, tmp_path, monkeypatch):
    a, b = tmp_path / "a.pto", tmp_path / "b.pto"
    a.write_text(FA)
    b.write_text(FA)
    pa, pb = sim.parse_file(a), sim.parse_file(b)
    _no_parser(monkeypatch)
    loc = next(st.loc for st in sim.parse_file(b).main.body if getattr(st, "loc", None))
    assert str(b) in str(loc) and str(a) not in str(loc)
    assert len(list(cache.glob("*.pickle"))) == 2 and pa == pb


@pytest.mark.parametrize("damage", [b"", b"garbage\n", None])
def test_a_foreign_or_corrupt_entry_is_never_served(cache, tmp_path, damage):
    f = tmp_path / "fa.pto"
    f.write_text(FA)
    want = sim.parse_file(f)
    entry = next(cache.glob("*.pickle"))
    data = entry.read_bytes()
    if damage is None:  # the right digest line, a truncated pickle
        entry.write_bytes(data[: len(data) // 2])
    else:
        entry.write_bytes(damage + data[data.index(b"\n") + 1 :])
    assert sim.parse_file(f) == want


def test_small_files_errors_and_a_cache_turned_off_keep_nothing(cache, tmp_path, monkeypatch):
    small = next(
        p
        for p in sorted((ROOT / "examples").glob("*.pto"))
        if len(p.read_text()) < program_cache.MIN_BYTES
    )
    sim.parse_file(small)
    bad = tmp_path / "bad.pto"
    bad.write_text(FA.replace("func.func", "func.fnuc", 1))
    with pytest.raises(UserError):
        sim.parse_file(bad)
    assert not cache.exists() or not list(cache.glob("*.pickle"))
    monkeypatch.setenv("PTOSIM_CACHE_DIR", "")
    good = tmp_path / "fa.pto"
    good.write_text(FA)
    sim.parse_file(good)
    assert not cache.exists()


def test_at_most_max_entries_are_kept_the_least_recently_used_go(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(program_cache, "MAX_ENTRIES", 2)
    files = []
    for name in "abc":
        f = tmp_path / f"{name}.pto"
        f.write_text(FA)
        files.append(f)
    sim.parse_file(files[0])
    sim.parse_file(files[1])
    old = time.time() - 100
    os.utime(next(cache.glob("*.pickle")), (old, old))  # make one entry the oldest
    ages = sorted(cache.glob("*.pickle"), key=lambda p: p.stat().st_mtime)
    sim.parse_file(files[2])
    kept = set(cache.glob("*.pickle"))
    assert len(kept) == 2 and ages[0] not in kept


def test_a_read_only_cache_directory_still_parses(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(user_cache, "_write_private", _failing)
    f = tmp_path / "fa.pto"
    f.write_text(FA)
    assert sim.parse_file(f) == sim.parse_text(FA, str(f))


def _failing(path, *args, **kwargs):
    raise PermissionError(f"{path}: read-only")
