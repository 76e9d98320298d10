"""The user cache (``sim.frontend.user_cache``) loads only what this user's pto-sim wrote for
this very input: planted, moved, foreign-owned, shared-writable or foreign-named files
are never unpickled, used or pruned, and everything it makes is private whatever the
umask."""

from __future__ import annotations

import os
import pickle
import stat
from pathlib import Path

import pytest

import sim
from sim.frontend import lark_cache, program_cache, user_cache
from sim.frontend import parse as parse_module
from sim.isa.program import Program

ROOT = Path(__file__).resolve().parent.parent
FA = (ROOT / "examples" / "flash_attention.pto").read_text()
EDITED = FA.replace("%c3 = arith.constant 3 : index", "%c3 = arith.constant 7 : index", 1)


class _Runs:
    """A pickle that creates ``marker`` when loaded (what a planted entry could do)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "cache"
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(where))
    return where


@pytest.fixture
def parses(monkeypatch):
    """How many times the grammar parsed a file from here on."""
    count = [0]
    real = parse_module.pto_parser

    def counting():
        count[0] += 1
        return real()

    monkeypatch.setattr(parse_module, "pto_parser", counting)
    return count


def _kernel(tmp_path, name="fa.pto", text=FA) -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


def _entry(f: Path) -> Path:
    return program_cache.entry(str(f), f.read_text())[0]


@pytest.mark.parametrize("mac_line", [False, True])
def test_a_planted_entry_with_the_public_digest_never_runs(cache, tmp_path, mac_line):
    f = _kernel(tmp_path)
    path, digest = program_cache.entry(str(f), FA)
    path.parent.mkdir(parents=True)
    marker = tmp_path / "ran"
    evil = pickle.dumps(_Runs(marker))
    path.write_bytes(digest + b"\n" + (b"0" * 64 + b"\n" if mac_line else b"") + evil)
    program = sim.parse_file(f)
    assert not marker.exists()
    assert program == sim.parse_text(FA, str(f))


def test_a_planted_lalr_table_never_runs(cache, tmp_path):
    grammar = ROOT / "sim" / "frontend" / "types.lark"
    options = dict(parser="lalr", lexer="contextual")
    digest = lark_cache._digest(grammar.read_text(), options)
    cache.mkdir()
    marker = tmp_path / "ran"
    (cache / f"types-{digest[:40]}.lark.pickle").write_bytes(
        digest.encode() + b"\n" + pickle.dumps(_Runs(marker))
    )
    assert lark_cache.cached_lark(grammar, **options).parse("!pto.ptr<f32>")
    assert not marker.exists()


def test_an_entry_holding_another_files_program_is_not_used(cache, tmp_path, parses):
    a, b = _kernel(tmp_path, "a.pto"), _kernel(tmp_path, "b.pto", EDITED)
    sim.parse_file(a)
    sim.parse_file(b)
    entry_a = program_cache.entry(str(a), FA)[0]
    data_a = entry_a.read_bytes()
    data_b = program_cache.entry(str(b), EDITED)[0].read_bytes()
    # a's digest line in front of b's program: the seal covers both, so it fails
    entry_a.write_bytes(data_a.split(b"\n", 1)[0] + b"\n" + data_b.split(b"\n", 1)[1])
    before = parses[0]
    assert sim.parse_file(a) == sim.parse_text(FA, str(a)) != sim.parse_text(EDITED, str(a))
    assert parses[0] > before  # parsed, not loaded


def test_an_entry_holding_something_else_than_a_program_is_parsed(cache, tmp_path, capsys):
    f = _kernel(tmp_path)
    program_cache.store(program_cache.entry(str(f), FA), {"not": "a program"})
    assert program_cache.entry(str(f), FA)[0].exists()
    program = sim.parse_file(f)
    assert isinstance(program, Program) and program == sim.parse_text(FA, str(f))
    assert "Traceback" not in capsys.readouterr().err


def test_a_group_writable_entry_or_folder_is_not_used(cache, tmp_path, parses):
    f = _kernel(tmp_path)
    sim.parse_file(f)
    entry = _entry(f)
    sim.parse_file(f)
    assert parses[0] == 1  # the entry serves while private
    entry.chmod(0o664)
    sim.parse_file(f)
    assert parses[0] == 2
    sim.parse_file(f)  # the parse replaced it with a private entry
    assert parses[0] == 2 and stat.S_IMODE(entry.stat().st_mode) == 0o600
    entry.parent.chmod(0o777)
    assert user_cache.read(entry, program_cache.entry(str(f), FA)[1]) is None


def test_a_cache_folder_owned_by_someone_else_is_not_used(cache, tmp_path, parses, monkeypatch):
    f = _kernel(tmp_path)
    sim.parse_file(f)
    monkeypatch.setattr(user_cache, "_uid", lambda: os.getuid() + 1)
    sim.parse_file(f)
    assert parses[0] == 2
    assert user_cache.folder() is None


def test_a_symlinked_entry_is_not_followed(cache, tmp_path, parses):
    f = _kernel(tmp_path)
    sim.parse_file(f)
    entry = _entry(f)
    moved = tmp_path / "elsewhere"
    entry.rename(moved)
    entry.symlink_to(moved)
    sim.parse_file(f)
    assert parses[0] == 2


def test_everything_made_is_private_under_umask_000(cache, tmp_path):
    old = os.umask(0)
    try:
        f = _kernel(tmp_path)
        sim.parse_file(f)
        lark_cache.cached_lark(
            ROOT / "sim" / "frontend" / "types.lark", parser="lalr", lexer="contextual"
        )
    finally:
        os.umask(old)

    def mode(p):
        return stat.S_IMODE(p.stat().st_mode)

    assert mode(cache) == mode(cache / "programs") == 0o700
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert len(files) >= 3  # the key, a program, a parser
    assert {mode(p) for p in files} == {0o600}


def test_prune_and_load_leave_files_the_cache_did_not_name_alone(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(program_cache, "MAX_ENTRIES", 1)
    programs = cache / "programs"
    programs.mkdir(parents=True)
    foreign = programs / "notes.pickle"
    foreign.write_bytes(pickle.dumps([1, 2, 3]))
    os.utime(foreign, (1, 1))  # the oldest file in the folder
    sim.parse_file(_kernel(tmp_path, "a.pto"))
    sim.parse_file(_kernel(tmp_path, "b.pto"))
    assert foreign.exists()
    assert len([p for p in programs.iterdir() if p != foreign]) == 1
