"""Runs with ranks from the command line, checked as a one-chip run is: the race check
across ranks and inside each rank, --trace / --plot of every rank, --stream on compare and
sweep, and a rank's streams on disjoint cores. Each figure against the Python API."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

import sim
from sim.cli import main

ROOT = Path(__file__).resolve().parent.parent
COMM = ROOT / "examples" / "comm"
ALLGATHER = str(COMM / "allgather.py")
GEMM_AR = str(COMM / "gemm_allreduce.py")
SMALL = ["--arg", "ranks=2", "--arg", "rows=8", "--arg", "cols=64"]

# a race only across ranks, and with signal=true none (see the file)
PUT_THEN_READ = str(ROOT / "tests" / "data" / "put_then_read.py")

# a vector kernel of BLOCKS blocks whose TLOAD and TSTORE of one tile no flag orders: a race
# inside every rank's chip, none across ranks
RACY = """
import sim


def build(blocks=1, name="racy"):
    k = sim.Kernel(name, block_dim=blocks)
    rows = k.block_idx * 16
    buf = k.gm("buf", "f32", (16 * blocks, 64))
    out = k.gm("out", "f32", (16 * blocks, 64))
    t = k.tile("vec", "f32", 16, 64)
    k.TLOAD(t, buf.view(16, 64, row=rows))
    k.TSTORE(out.view(16, 64, row=rows), t)
    k.pipe_barrier("PIPE_ALL")
    return k


def other(others=8):
    return build(others, "other")
"""


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, COMM / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _kernel(tmp_path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_run_with_ranks_finds_a_race_that_exists_only_across_ranks(capsys, tmp_path):
    racy = PUT_THEN_READ
    assert main(["run", racy, "--ranks", "2", "--json"]) == 0
    got = _json(capsys)
    assert got["races"]["checked"]
    assert got["races"]["found"] == 1
    [found] = got["races"]["findings"]
    assert found.startswith("race on rank 1 %buf[0:512]")  # rank 0's rows, not rank 1's
    assert "rank 0 block 0 AIV0 pto.comm.tput" in found and "rank 1 block 0 AIV0 TLOAD" in found
    # each rank alone is race-free: its own check ran and found nothing
    assert [r["races"] for r in got["per_rank"]] == [
        {"checked": True, "found": 0, "by": "proof"}
    ] * 2
    assert main(["run", racy, "--ranks", "2"]) == 0
    assert "races across ranks: 1: race on rank 1 %buf[0:512]" in capsys.readouterr().out
    # the signal orders the read after the write: no race, same check
    ok = [PUT_THEN_READ, "--arg", "signal=true"]
    assert main(["run", *ok, "--ranks", "2", "--json"]) == 0
    assert _json(capsys)["races"] == {"checked": True, "found": 0, "findings": []}
    assert main(["run", *ok, "--ranks", "2"]) == 0
    assert "races across ranks: checked, none found" in capsys.readouterr().out
    # --no-races: neither check
    assert main(["run", racy, "--ranks", "2", "--no-races", "--json"]) == 0
    got = _json(capsys)
    assert got["races"] == {"checked": False, "found": 0, "findings": []}
    assert not any(r["races"]["checked"] for r in got["per_rank"])


def test_a_correct_example_reports_no_race_in_any_rank_or_across(capsys):
    argv = ["run", GEMM_AR, "--ranks", "2", "--arg", "ranks=2", "--timing-only", "--json"]
    assert main([*argv, "--stream", f"{GEMM_AR}:comm"]) == 0
    got = _json(capsys)
    assert got["races"] == {"checked": True, "found": 0, "findings": []}
    for rs in got["per_stream"]:
        assert [s["races"]["checked"] and s["races"]["found"] for s in rs] == [0, 0]


def test_each_ranks_chip_checks_its_own_races(capsys, tmp_path):
    racy = _kernel(tmp_path, "racy", RACY)
    assert main(["run", racy, "--ranks", "2", "--json"]) == 0
    got = _json(capsys)
    want = sim.simulate(sim.kernel.files.load_kernel(racy), races=True)  # one chip's check
    assert len(want.races) == 1
    for r in got["per_rank"]:
        assert r["races"]["checked"] and r["races"]["found"] == len(want.races)
        assert any(want.races[0].message in w for w in r["warnings"])
    assert got["races"]["found"] == 0  # nothing crosses a rank


def test_compare_with_ranks_counts_every_ranks_own_races(capsys, tmp_path):
    racy = _kernel(tmp_path, "racy", RACY)
    assert main(["compare", racy, "--ranks", "2", "--timing-only", "--json"]) == 0
    got = _json(capsys)["manual"]
    assert got["races"] == 2  # one in each rank's chip, none across
    assert [f.split(":")[0] for f in got["race_findings"]] == ["rank 0", "rank 1"]


def test_trace_and_plot_of_a_run_with_ranks(capsys, tmp_path):
    from sim.trace import read_trace

    argv = ["run", ALLGATHER, "--ranks", "2", *SMALL]
    csv, chrome, png = tmp_path / "t.csv", tmp_path / "t.json", tmp_path / "p.png"
    assert main([*argv, "--trace", str(csv), "--plot", str(png)]) == 0
    assert f"trace written to {csv}" in capsys.readouterr().out
    t = read_trace(csv)
    assert list(t.columns[:2]) == ["rank", "launch"]
    want = sim.simulate(_example("allgather").build(2, 8, 64), ranks=2, races="manual")
    for r in range(2):  # every rank's rows, as the API gives them
        mine = t[t["rank"] == r]
        assert len(mine) == len(want.ranks[r].trace) > 0
        assert mine["end_cycle"].max() == want.ranks[r].total_cycles
    assert png.read_bytes()[:4] == b"\x89PNG"
    # Chrome JSON: a process per core of each rank; the rows come back with their rank
    assert main([*argv, "--trace", str(chrome)]) == 0
    capsys.readouterr()
    events = json.loads(chrome.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {"rank 0 core 0", "rank 1 core 0"}
    back = read_trace(chrome)
    assert sorted(back["rank"].value_counts().items()) == sorted(t["rank"].value_counts().items())
    # a flag pairs inside one rank's chip: each arrow's ends in one process
    flows = [e for e in events if e.get("ph") in ("s", "f")]
    ends: dict = {}
    for e in flows:
        ends.setdefault(e["id"], set()).add(e["pid"])
    assert flows and all(len(p) == 1 for p in ends.values())


def test_compare_takes_a_second_stream(capsys):
    g = _example("gemm_allreduce")
    argv = ["compare", GEMM_AR, "--ranks", "2", "--arg", "ranks=2", "--timing-only", "--json"]
    assert main([*argv, "--stream", f"{GEMM_AR}:comm"]) == 0
    got = _json(capsys)
    want = sim.simulate(
        g.compute(2), ranks=2, streams=[g.comm(2)], races=True, sync="manual", functional=False
    )
    assert got["manual"]["total_cycles"] == want.total_cycles
    assert got["manual"]["races"] == 0 and got["auto"]["total_cycles"] is not None
    assert main(argv) == 0  # without the stream: the compute kernel alone, shorter
    alone = _json(capsys)
    assert alone["manual"]["total_cycles"] < got["manual"]["total_cycles"]


def test_sweep_takes_a_second_stream(capsys, tmp_path, monkeypatch):
    from sim.studies.sweep import configurations, run_config

    g = _example("gemm_allreduce")
    spec = f"{GEMM_AR}:comm"
    row = run_config(GEMM_AR, {"ranks": 2}, None, None, 0, (2, None, spec))
    assert row["error"] is None
    want = sim.simulate(
        g.compute(2), ranks=2, streams=[g.comm(2)], races=True, sync="manual", functional=False
    )
    assert row["total_cycles"] == want.total_cycles
    alone = run_config(GEMM_AR, {"ranks": 2}, None, None, 0, (2, None))
    assert alone["total_cycles"] < row["total_cycles"]
    keys = {
        next(configurations(GEMM_AR, {"ranks": [2]}, [None], [None], 0, multi)).key
        for multi in ((2, None), (2, None, spec))
    }
    assert len(keys) == 2  # a journal never hands the row of one launch to the other
    monkeypatch.chdir(tmp_path)  # the flag reaches the sweep (refused before any run)
    assert main(["sweep", GEMM_AR, "--ranks", "2", "--stream", "nope.py", "-o", "x.parquet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--stream nope.py: nope.py: no such file" in err and len(err.splitlines()) == 1


def test_streams_on_the_same_units_get_disjoint_cores(capsys, tmp_path):
    racy = _kernel(tmp_path, "racy", RACY)
    cores = 24  # models/a2a3/machine.toml [chip] cores
    argv = ["run", racy, "--ranks", "2", "--no-races", "--timing-only", "--trace"]
    ok = [*argv, str(tmp_path / "t.csv"), "--arg", "blocks=16", "--stream", f"{racy}:other"]
    assert main(ok) == 0
    capsys.readouterr()
    from sim.trace import read_trace

    t = read_trace(tmp_path / "t.csv")
    first, second = (set(t[t["launch"] == s]["core"]) for s in (0, 1))
    assert first == set(range(16)) and second == set(range(16, 24))
    # 20 + 8 blocks on the vector units of 24 cores: they would share cores
    bad = [*argv, str(tmp_path / "u.csv"), "--arg", "blocks=20", "--stream", f"{racy}:other"]
    assert main(bad) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for part in ("racy (block_dim 20", "other (block_dim 8", "20 + 8", f"the {cores} cores"):
        assert part in err
    # cube beside vector: different units of the cores, whatever the block counts
    g = _example("gemm_allreduce")
    r = sim.simulate(
        g.compute(2, m=512, n=512), ranks=2, streams=[g.comm(2, m=512, n=512)], functional=False
    )
    assert r.ranks[0].block_dim > cores  # 64 blocks in waves on the cube units


def test_streams_core_split_rule():
    from sim.engine.streams import first_cores
    from sim.target import load_target

    t = load_target("a2a3")
    aic, aiv, mixed = frozenset({"AIC"}), frozenset({"AIV0"}), frozenset({"AIC", "AIV0", "AIV1"})
    assert first_cores([("a", 24, aic), ("b", 100, aiv)], t) == [0, 0]
    assert first_cores([("a", 10, aiv), ("b", 14, aiv)], t) == [0, 10]
    assert first_cores([("a", 4, aic), ("b", 4, aiv), ("c", 16, mixed)], t) == [0, 0, 4]
    with pytest.raises(sim.UserError, match=r"a \(block_dim 30, on AIC\) and b"):
        first_cores([("a", 30, aic), ("b", 1, mixed)], t)  # a's waves hold every AIC
    with pytest.raises(sim.UserError, match="10 \\+ 15, exceed the 24 cores"):
        first_cores([("a", 10, aiv), ("b", 15, aiv)], t)


def test_a_deadlock_with_streams_names_the_rank_and_the_kernel():
    g = _example("gemm_allreduce")
    # the communication kernel beside an idle one: no tile is ever ready
    idle = sim.Kernel("idle")
    idle.gm("x", "f32", (1, 64))
    with pytest.raises(sim.DeadlockError) as e:
        sim.simulate(idle, ranks=2, streams=[g.comm(2)], functional=False)
    text = str(e.value)
    assert "rank 1 @allreduce core 1 AIV0: TWAIT" in text and "rank 3" not in text


@pytest.mark.parametrize("ranks", [2, 3])
def test_output_of_a_run_with_ranks_has_a_rank_axis(capsys, tmp_path, ranks):
    """--output with --ranks writes every rank's GM, rank r's at index r: after the
    all-gather each rank's out holds every rank's src block by rows."""
    import numpy as np

    out, src = tmp_path / "out.npy", tmp_path / "src.npy"
    args = ["--arg", f"ranks={ranks}", "--arg", "rows=8", "--arg", "cols=64"]
    cmd = ["run", ALLGATHER, "--ranks", str(ranks), *args, "--no-races"]
    assert main([*cmd, "--output", f"out={out}", "--output", f"src={src}"]) == 0
    capsys.readouterr()
    got, blocks = np.load(out), np.load(src)
    assert got.shape == (ranks, ranks * 8, 64)
    assert blocks.shape == (ranks, 8, 64)
    assert len({blocks[r].tobytes() for r in range(ranks)}) == ranks  # seeded per rank
    for r in range(ranks):
        np.testing.assert_array_equal(got[r], np.concatenate(list(blocks)))
