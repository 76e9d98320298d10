"""A sweep over blocks per launch (``block_dim``) and with sampled waves (``sample_waves``):
each row is the single run ``sim.simulate`` makes of its configuration, the block counts are
one more axis in configuration order, the keys of sweeps without them do not move, and a
journal row claims the block count it ran."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import attrs
import pandas as pd
import pytest
from dask_fixtures import local_client

import sim
from sim.base.errors import UserError
from sim.base.version import __version__
from sim.kernel.files import load_kernel
from sim.studies.journal import read
from sim.studies.journal_rows import journal_row, kernel_digest, row_problem
from sim.studies.sweep import configurations, run_config

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
FA = ROOT / "examples" / "flash_attention.pto"
ARGS = {"S1": 256, "S1_TILE": 128}  # two key blocks: ~17 k cycles a block


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2, processes=False) as c:
        yield c


def _single(block_dim, sample_waves=None, s1=ARGS["S1"]):
    kernel = load_kernel(str(FA), [])
    return sim.simulate(
        kernel,
        "a2a3",
        functional=False,
        inputs={**ARGS, "S1": s1},
        block_dim=block_dim,
        races="manual",
        trace="none",
        sample_waves=sample_waves,
    )


def test_block_counts_are_an_axis_and_each_row_is_the_single_run(client, tmp_path, monkeypatch):
    df = sim.sweep(
        FA,
        {"S1": [256, 512], "S1_TILE": [128]},
        block_dim=[1, 3, 26],
        scheduler=client,
        output=tmp_path / "out.parquet",
    )
    order = [(s, b) for s in (256, 512) for b in (1, 3, 26)]
    assert list(zip(df["S1"], df["block_dim"], strict=True)) == order
    assert df["error"].isna().all() and "blocks_simulated" not in df.columns
    assert str(df["block_dim"].dtype) == "Int64"
    cols = list(df.columns)
    assert cols.index("S1_TILE") < cols.index("block_dim") < cols.index("target")
    # busy cycles per unit and pipe, summed over the cores (the journal has them per core)
    assert not [c for c in cols if "core " in c]
    at = cols.index
    assert at("busy_cycles[AIC PIPE_MTE2]") < at("busy_cycles[AIC PIPE_M]")
    assert at("busy_cycles[AIC PIPE_FIX]") < at("busy_cycles[AIV0 PIPE_V]")
    assert at("busy_cycles[AIV0 PIPE_V]") < at("busy_cycles[AIV1 PIPE_V]") < at("syncs")
    for row in df.to_dict("records"):
        r = _single(row["block_dim"], s1=row["S1"])
        assert row["total_cycles"] == r.total_cycles
        assert row["races"] == len(r.races) == 0
        for unit, pipe in (("AIC", "PIPE_M"), ("AIV0", "PIPE_V"), ("AIV1", "PIPE_MTE3")):
            busy = [u["pipes"][pipe]["busy_cycles"] for u in r.units if u["unit"] == unit]
            assert len(busy) == min(row["block_dim"], 24)
            assert row[f"busy_cycles[{unit} {pipe}]"] == sum(busy) > 0
    # more blocks than the 24 cores take longer than one wave of them
    by = df.set_index(["S1", "block_dim"])["total_cycles"]
    for s in (256, 512):
        assert by[(s, 1)] <= by[(s, 3)] < by[(s, 26)]
    # the journal has the rows under their block counts: the same sweep serves them all,
    # with no cluster started
    import sim.studies.sweep as sweep_module

    def no_cluster(*_):
        raise AssertionError("a journalled configuration was run again")

    monkeypatch.setattr(sweep_module, "_client", no_cluster)
    again = sim.sweep(
        FA,
        {"S1": [256, 512], "S1_TILE": [128]},
        block_dim=[1, 3, 26],
        output=tmp_path / "out.parquet",
    )
    assert again.equals(df)


def test_sampled_rows_are_the_sampled_single_runs(client):
    # 24 cores: 26 blocks leave no full wave out (they run exactly), 80 leave two out
    df = sim.sweep(FA, ARGS, block_dim=[26, 80], sample_waves=1, scheduler=client)
    assert list(df["block_dim"]) == [26, 80]
    cols = list(df.columns)
    assert cols.index("total_cycles") + 1 == cols.index("blocks_simulated")
    for row in df.to_dict("records"):
        r = _single(row["block_dim"], sample_waves=1)
        assert row["total_cycles"] == r.total_cycles
        ran = r.sample["blocks_simulated"] if r.sample else row["block_dim"]
        assert row["blocks_simulated"] == ran
    exact, sampled = df["blocks_simulated"]
    assert exact == 26 and sampled == 24 + 80 % 24  # the first wave and the last
    # the estimate of the sampled launch is near its exact run (documented: a few per cent)
    full = _single(80).total_cycles
    assert abs(df["total_cycles"][1] / full - 1) < 0.08


def _old_key(path, params, mode=None, seed=0) -> str:
    """The key of a configuration of a sweep without block counts or sampling, as its
    journal has it: these sweeps' journals must keep serving their rows."""
    ident = [__version__, kernel_digest(path), sorted(params.items()), "", mode, seed]
    return hashlib.sha256(json.dumps(ident, default=repr).encode()).hexdigest()[:20]


def test_keys_change_with_the_launch_only_when_it_is_given():
    path, values = str(FA), {"S1": [256], "S1_TILE": [128]}

    def keys(**launch):
        return [c.key for c in configurations(path, values, [None], [None], **launch)]

    (plain,) = keys()
    assert plain == _old_key(path, {"S1": 256, "S1_TILE": 128})
    given = keys(block_dims=[4, 8])
    sampled = keys(block_dims=[4, 8], sample_waves=1)
    assert len({plain, *given, *sampled}) == 5
    assert keys(block_dims=[4, 8], sample_waves=2) != sampled


def test_a_journal_row_claims_its_block_count():
    (c,) = configurations(str(FA), {"S1": [256], "S1_TILE": [128]}, [None], [None], block_dims=[2])
    row = journal_row(run_config(str(FA), c.params, c.target, c.sync, block_dim=2), c)
    assert row["error"] is None and row["asked"]["block_dim"] == 2
    assert row["total_cycles"] == _single(2).total_cycles
    assert row_problem(row, c, str(FA)) is None
    other = attrs.evolve(c, block_dim=3)
    assert "block_dim 2" in row_problem(row, other, str(FA))
    # a row of the same configuration without the block count (a sweep that gave none)
    plain = attrs.evolve(c, block_dim=None)
    assert "not this configuration's" in row_problem(row, plain, str(FA))


def test_a_journal_row_with_a_malformed_block_count_is_run_again(tmp_path, capsys):
    journal = tmp_path / "out.parquet.journal"
    good = {"config": "a", "total_cycles": 5, "blocks_simulated": 32}
    bad = {"config": "b", "total_cycles": 5, "blocks_simulated": "32"}
    journal.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    assert set(read(journal)) == {"a"}
    assert 'blocks_simulated is "32", expected a whole number' in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"block_dim": 0}, "block_dim: expected blocks per launch, whole numbers >= 1, found 0"),
        ({"block_dim": [2, True]}, "found True"),
        ({"block_dim": "4"}, "found '4'"),
        ({"block_dim": []}, "block_dim has no values"),
        ({"block_dim": [4, 8, 4]}, "block_dim: 4 is listed twice"),
        ({"sample_waves": 0}, "an integer >= 1, found 0"),
        ({"sample_waves": 1, "ranks": 2}, "sample_waves: not with ranks"),
    ],
)
def test_bad_launch_is_refused_before_any_run(kw, said, tmp_path):
    with pytest.raises(UserError) as e:
        sim.sweep(FA, ARGS, scheduler="tcp://127.0.0.1:9", output=tmp_path / "o.parquet", **kw)
    assert said in str(e.value)
    assert not (tmp_path / "o.parquet").exists()


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "sim", "sweep", str(FA), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--block-dim", "4,x"], "argument --block-dim: expected an integer, found 'x'"),
        (["--block-dim", "0"], "argument --block-dim: expected an integer >= 1, found 0"),
        (["--block-dim", "4,4"], "block_dim: 4 is listed twice"),
        (["--sample-waves", "0"], "argument --sample-waves: expected an integer >= 1"),
    ],
)
def test_cli_refuses_a_bad_launch_in_one_line(flags, said, tmp_path):
    p = _cli("--param", "S1=256", "-o", str(tmp_path / "o.parquet"), *flags)
    assert p.returncode == 2 and said in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_cli_sweeps_block_counts_sampled(tmp_path):
    out = tmp_path / "o.parquet"
    p = _cli(
        "--param", "S1=256", "--param", "S1_TILE=128", "--block-dim", "26,80",
        "--sample-waves", "1", "--workers", "1", "-o", str(out),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr

    df = pd.read_parquet(out)
    assert list(df["block_dim"]) == [26, 80]
    assert list(df["blocks_simulated"]) == [26, 32]
    assert list(df["total_cycles"]) == [_single(b, sample_waves=1).total_cycles for b in (26, 80)]
    header = p.stdout.splitlines()[0].split()
    assert header[:4] == ["S1", "S1_TILE", "block_dim", "target"]
    assert "blocks_simulated" in header


def test_a_row_says_what_the_run_warned_of(client, tmp_path):
    db = ROOT / "examples" / "relu_sub_db.pto"
    df = sim.sweep(db, {"k": [0, 2]}, scheduler=client, output=tmp_path / "w.parquet")
    idle, busy = df.to_dict("records")
    assert idle["warnings"].startswith("warning: the run executed no tile instruction")
    assert "%k = 0" in idle["warnings"] and idle["total_cycles"] == 0
    assert pd.isna(busy["warnings"]) and busy["total_cycles"] > 0
    cols = list(df.columns)
    assert cols.index("races") < cols.index("warnings") < cols.index("error")
    (row,) = [r for r in read(tmp_path / "w.parquet.journal").values() if r["warnings"]]
    assert row["warnings"] == idle["warnings"]
