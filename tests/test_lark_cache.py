"""The user cache of built LALR parsers (``sim.frontend.lark_cache``): a cached parser
parses as a freshly built one, a changed grammar is never served an old parser, and a
missing, corrupt or unwritable cache only means building."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lark.exceptions import UnexpectedInput

from sim.frontend import lark_cache
from sim.frontend.grammar import _PtoLexer, _Shapes
from sim.frontend.lark_cache import cached_lark

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "sim" / "frontend" / "grammar.lark"
TYPES = ROOT / "sim" / "frontend" / "types.lark"
KERNELS = [
    "examples/matmul.pto",
    "examples/flash_attention.pto",
    "examples/gemm.pto",
    "examples/relu_sub_db.pto",
]


def _pto(**extra):
    return cached_lark(
        GRAMMAR,
        parser="lalr",
        lexer=_PtoLexer,
        transformer=_Shapes(),
        maybe_placeholders=False,
        **extra,
    )


def _plain(tree):
    """A parse result without token identity: tokens as (type, value, line, column)."""
    if hasattr(tree, "type") and hasattr(tree, "line"):
        return (tree.type, str(tree), tree.line, tree.column)
    if isinstance(tree, (tuple, list)):
        return type(tree)(_plain(t) for t in tree)
    return tree


def _files(where: Path) -> list[Path]:
    return sorted(where.glob("*.pickle"))


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_cached_parser_parses_as_a_built_one(tmp_path, monkeypatch, kernel):
    text = (ROOT / kernel).read_text()
    monkeypatch.setenv("PTOSIM_CACHE_DIR", "")
    built = _plain(_pto().parse(text))
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(tmp_path))
    first = _pto()  # builds and writes the cache
    assert len(_files(tmp_path)) == 1
    second = _pto()  # loads it
    assert _plain(first.parse(text)) == built
    assert _plain(second.parse(text)) == built


def test_the_types_grammar_is_cached_too(tmp_path, monkeypatch):
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(tmp_path))
    t = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64>"
    a = cached_lark(TYPES, parser="lalr", lexer="contextual").parse(t)
    b = cached_lark(TYPES, parser="lalr", lexer="contextual").parse(t)
    assert a == b and len(_files(tmp_path)) == 1


def test_a_changed_grammar_is_never_served_the_old_parser(tmp_path, monkeypatch):
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(tmp_path))
    g = tmp_path / "g.lark"
    for word in ("alpha", "beta", "alpha"):
        g.write_text(f'start: "{word}"\n%ignore " "\n')
        p = cached_lark(g, parser="lalr")
        p.parse(word)
        with pytest.raises(UnexpectedInput):
            p.parse("beta" if word == "alpha" else "alpha")
    assert len(_files(tmp_path)) == 2  # one per grammar text


def test_a_file_whose_digest_does_not_match_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(tmp_path))
    g = tmp_path / "g.lark"
    g.write_text('start: "alpha"\n')
    cached_lark(g, parser="lalr")
    (path,) = _files(tmp_path)
    other = tmp_path / "h.lark"
    other.write_text('start: "beta"\n')
    cached_lark(other, parser="lalr")
    # put the other grammar's parser under this grammar's name: its digest line differs
    foreign = [p for p in _files(tmp_path) if p != path][0]
    path.write_bytes(foreign.read_bytes())
    assert cached_lark(g, parser="lalr").parse("alpha")
    # rebuilt and replaced: the file has this grammar's digest again
    assert path.read_bytes().split(b"\n")[0] != foreign.read_bytes().split(b"\n")[0]


@pytest.mark.parametrize("damage", [b"", b"garbage\n", None])
def test_a_corrupt_cache_file_is_rebuilt(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(tmp_path))
    cached_lark(GRAMMAR.with_name("types.lark"), parser="lalr", lexer="contextual")
    (path,) = _files(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if damage is None else damage)  # truncated
    p = cached_lark(TYPES, parser="lalr", lexer="contextual")
    assert p.parse("!pto.ptr<f32>")
    again = path.read_bytes()  # rebuilt whole (pickles need not be byte-identical)
    assert again.split(b"\n")[0] == data.split(b"\n")[0] and len(again) > len(data) // 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_cache_directory_only_means_building(tmp_path, monkeypatch):
    where = tmp_path / "ro"
    where.mkdir()
    where.chmod(0o500)
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(where))
    try:
        assert cached_lark(TYPES, parser="lalr", lexer="contextual").parse("!pto.ptr<f32>")
        assert not _files(where)
    finally:
        where.chmod(0o700)


def test_a_cache_directory_that_cannot_be_made_only_means_building(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PTOSIM_CACHE_DIR", str(blocker / "sub"))  # under a plain file
    assert cached_lark(TYPES, parser="lalr", lexer="contextual").parse("!pto.ptr<f32>")


def test_the_cache_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("PTOSIM_CACHE_DIR", "")
    assert lark_cache.cache_dir() is None
    monkeypatch.delenv("PTOSIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert lark_cache.cache_dir() == tmp_path / "pto-sim"
