"""A sweep's journal rows are served on resume only when they still are what they claim:
the kernel's helper modules unchanged (those the file imports are in the key, those
``build()`` imports are checked per row), the row's configuration the one asked for, its
content as written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import attrs
import pytest
from dask_fixtures import local_client

import sim
from sim.kernel.files import load_kernel
from sim.studies.journal_rows import journal_row, row_problem
from sim.studies.sweep import configurations

distributed = pytest.importorskip("distributed")

KERNEL = textwrap.dedent("""\
    import sim
    from shapes import ROWS      # imported by the file

    def build(n=1):
        import inner             # imported by build() only
        k = sim.Kernel("helpers")
        x = k.gm("x", "f32", (ROWS, inner.COLS))
        y = k.gm("y", "f32", (ROWS, inner.COLS))
        a = k.tile("vec", "f32", ROWS, inner.COLS, name="a")
        e = k.TLOAD(a, x)
        for _ in range(n):
            e = k.TADDS(a, a, 1.0, e)
        k.TSTORE(y, a, e)
        return k
    """)


@pytest.fixture
def kernel(tmp_path):
    (tmp_path / "kern.py").write_text(KERNEL)
    (tmp_path / "shapes.py").write_text("ROWS = 16\n")
    (tmp_path / "inner.py").write_text("COLS = 64\n")
    return tmp_path / "kern.py"


def _keys(path: Path) -> list:
    from sim.kernel.files import forget_local_modules, kernel_source

    forget_local_modules(str(path))  # the test edits them on disk between loads
    kernel_source(str(path))  # what sweep() does before it makes the keys
    return [c.key for c in configurations(str(path), {"n": [1, 2]}, [None], [None])]


def test_the_key_covers_the_modules_the_kernel_file_imports(kernel):
    before = _keys(kernel)
    assert before == _keys(kernel)
    (kernel.parent / "shapes.py").write_text("ROWS = 32\n")
    after = _keys(kernel)
    assert not set(before) & set(after)


def _config(path, n=1, target=None, sync=None):
    (c,) = [
        c for c in configurations(str(path), {"n": [n]}, [target], [sync]) if c.params == {"n": n}
    ]
    return c


def _row(path, c, **metrics):
    from sim.studies.sweep import run_config

    row = run_config(str(path), c.params, c.target, c.sync)
    return journal_row({**row, **metrics}, c)


def _resign(row):
    from sim.studies.journal_rows import row_digest

    return {**row, "digest": row_digest(row)}


def test_a_row_is_served_only_as_written_for_its_configuration(kernel):
    c = _config(kernel)
    row = _row(kernel, c)
    assert row["error"] is None and row["total_cycles"] > 0
    assert row_problem(row, c, str(kernel)) is None
    # hand edits: a metric, a parameter column, the claimed parameters, target, sync
    edited = {**row, "total_cycles": 1}
    assert "digest does not match" in row_problem(edited, c, str(kernel))
    assert "column 'n'" in row_problem(_resign({**row, "n": 9999}), c, str(kernel))
    claims = _resign({**row, "params": {"n": 9999}})
    assert "claims parameters {'n': 9999}" in row_problem(claims, c, str(kernel))
    other = attrs.evolve(c, sync="manual")
    assert "not this configuration's" in row_problem(row, other, str(kernel))
    ran = _resign({**row, "asked": {"target": None, "sync": "auto"}, "sync": "manual"})
    assert "ran sync manual, not auto" in row_problem(ran, attrs.evolve(c, sync="auto"), kernel)
    old = {k: v for k, v in row.items() if k not in ("params", "asked", "digest")}
    assert "without its configuration" in row_problem(old, c, str(kernel))
    unsigned = {k: v for k, v in row.items() if k != "digest"}
    assert "without its configuration" in row_problem(unsigned, c, str(kernel))
    ran = _resign({**row, "asked": {"target": "a5", "sync": None}, "target": "a2a3"})
    assert "ran target a2a3, not a5" in row_problem(ran, attrs.evolve(c, target="a5"), kernel)
    outside = _resign({**row, "sources": {"../x.py": ""}})
    assert "outside the kernel's directory" in row_problem(outside, c, str(kernel))


def test_a_row_computed_with_another_build_time_helper_is_not_served(kernel):
    c = _config(kernel)
    row = _row(kernel, c)
    assert set(row["sources"]) == {"shapes.py", "inner.py"}
    (kernel.parent / "inner.py").write_text("COLS = 128\n")
    assert row_problem(row, c, str(kernel)) == "was computed with another inner.py (changed since)"


@pytest.fixture(scope="module")
def client():
    with local_client(workers=1, processes=True) as c:
        yield c


def test_an_edited_helper_gives_fresh_cycles_on_the_same_worker(kernel, client, capsys):
    out = kernel.parent / "r.parquet"

    def cycles(**params):
        return sim.simulate(load_kernel(str(kernel), list(params.items())), functional=False)

    first = sim.sweep(kernel, {"n": [1, 2]}, scheduler=client, output=out)
    # the worker that imported inner.py keeps running; build() imports it again
    (kernel.parent / "inner.py").write_text("COLS = 128\n")
    second = sim.sweep(kernel, {"n": [1, 2]}, scheduler=client, output=out)
    err = capsys.readouterr().err
    assert err.count("was computed with another inner.py (changed since); it is run again") == 2
    assert list(second["config"]) == list(first["config"])  # the file's own imports did not change
    assert list(second["total_cycles"]) != list(first["total_cycles"])
    assert second["total_cycles"][1] == cycles(n=2).total_cycles
    journal = [json.loads(line) for line in Path(f"{out}.journal").read_text().splitlines()]
    assert len(journal) == 4
