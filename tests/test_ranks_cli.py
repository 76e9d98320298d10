"""Ranks from the command line: --ranks on compare and sweep, --stream on run, and their
one-line errors; each figure against the same run through the Python API."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import sim
from sim.cli import main

ROOT = Path(__file__).resolve().parent.parent
COMM = ROOT / "examples" / "comm"
ALLGATHER = str(COMM / "allgather.py")
GEMM_AR = str(COMM / "gemm_allreduce.py")
SMALL = ["--arg", "rows=8", "--arg", "cols=64"]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, COMM / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compare_with_ranks_runs_both_modes_on_every_rank(capsys):
    ag = _example("allgather")
    argv = ["compare", ALLGATHER, "--ranks", "3", "--arg", "ranks=3", *SMALL, "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    want = sim.simulate(ag.build(3, 8, 64), ranks=3, races=True, sync="manual")
    assert got["manual"]["total_cycles"] == want.total_cycles
    # the rows other than the total are rank 0's: its MTE3 busy cycles, not the run's sum
    rank0 = want.ranks[0].pipes["PIPE_MTE3"]["busy_cycles"]
    assert got["manual"]["pipes"]["PIPE_MTE3"] == rank0
    assert got["auto"]["total_cycles"] is not None and got["manual"]["races"] == 0
    # one rank fewer: another run (the flag reaches the runs)
    assert main([*argv[:2], "--ranks", "2", "--arg", "ranks=2", *SMALL, "--json"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two["manual"]["total_cycles"] != got["manual"]["total_cycles"]


def test_compare_without_ranks_is_the_one_chip_comparison(capsys):
    from sim.kernel.files import load_kernel
    from sim.studies import run_comparison

    path = str(ROOT / "examples" / "relu_sub.py")
    assert main(["compare", path, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = run_comparison(load_kernel(path), "a2a3")
    assert want.manual.ranks is None
    assert got["manual"]["total_cycles"] == want.manual.total_cycles


def test_run_stream_launches_the_second_kernel_on_every_rank(capsys):
    g = _example("gemm_allreduce")
    argv = ["run", GEMM_AR, "--ranks", "2", "--arg", "ranks=2", "--timing-only", "--json"]
    assert main([*argv, "--stream", f"{GEMM_AR}:comm"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = sim.simulate(g.compute(2), ranks=2, streams=[g.comm(2)], functional=False)
    assert got["total_cycles"] == want.total_cycles
    alone = sim.simulate(g.compute(2), ranks=2, functional=False)
    assert want.total_cycles > alone.total_cycles  # the stream's work is in the run
    # the stream gets the --arg values its function has parameters for (k is compute's only)
    assert main([*argv, "--arg", "k=32", "--stream", f"{GEMM_AR}:comm"]) == 0
    assert json.loads(capsys.readouterr().out)["total_cycles"] != got["total_cycles"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", GEMM_AR, "--stream", f"{GEMM_AR}:comm"],
            "--stream: a run with these needs --ranks N",
        ),
        (["run", ALLGATHER, "--comm-context", "ctx"], "--comm-context: a run with these needs"),
        (["compare", ALLGATHER, "--comm-context", "ctx"], "--comm-context: a run with these needs"),
        (["run", GEMM_AR, "--ranks", "2", "--stream", f"{GEMM_AR}:nope"], "defines no nope()"),
        (
            ["run", GEMM_AR, "--ranks", "2", "--stream", str(COMM / "allgather.pto") + ":x"],
            "has no function @x (functions: @allgather)",
        ),
        (["run", GEMM_AR, "--ranks", "2", "--stream", "missing.py"], "missing.py: no such file"),
        (["compare", ALLGATHER, "--ranks", "0"], "--ranks: expected an integer >= 1, found 0"),
        (["sweep", ALLGATHER, "--ranks", "two", "-o", "x.parquet"], "expected an integer"),
    ],
)
def test_bad_rank_flags_are_one_line_errors(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_a_sweep_configuration_with_ranks_is_that_run():
    from sim.studies.sweep import configurations, run_config

    ag = _example("allgather")
    params = {"ranks": 2, "rows": 8, "cols": 64}
    row = run_config(ALLGATHER, params, None, None, 0, (2, None))
    assert row["error"] is None
    want = sim.simulate(ag.build(2, 8, 64), ranks=2, races=True, sync="manual", functional=False)
    assert row["total_cycles"] == want.total_cycles
    one = run_config(ALLGATHER, params, None, None, 0)  # no ranks: a one-chip run refuses it
    assert "needs ranks" in one["error"] and "total_cycles" not in one
    keys = [
        next(configurations(ALLGATHER, {"rows": [8]}, [None], [None], 0, multi)).key
        for multi in (None, (2, None), (4, None))
    ]
    assert len(set(keys)) == 3  # a journal never hands one rank count's row to another


def test_run_stream_of_a_pto_module_takes_inputs_of_either_kernel(capsys, tmp_path):
    import attrs
    import numpy as np

    from sim.frontend import parse_file

    path = str(COMM / "gemm_allreduce.pto")
    zeros = {"ready": 4, "rs_count": 4, "ag_done": 1}
    argv = ["run", path, "--func", "gemm", "--block-dim", "4", "--ranks", "2"]
    argv += ["--stream", f"{path}:allreduce", "--comm-context", "ctx", "--timing-only", "--json"]
    for name, size in zeros.items():  # rs_count and ag_done are the stream's only
        np.save(tmp_path / f"{name}.npy", np.zeros(size, np.int32))
        argv += ["--input", f"{name}={tmp_path / name}.npy"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    prog = parse_file(path)
    want = sim.simulate(
        attrs.evolve(prog, entry="gemm"),
        ranks=2,
        block_dim=4,
        streams=[attrs.evolve(prog, entry="allreduce")],
        comm_context="ctx",
        functional=False,
        inputs={n: np.zeros(s, np.int32) for n, s in zeros.items()},
    )
    assert got["total_cycles"] == want.total_cycles
    assert main([*argv, "--input", f"nope={tmp_path / 'ready'}.npy"]) == 2
    assert "no GM pointer argument %nope" in capsys.readouterr().err


def test_run_json_with_a_stream_lists_every_kernel_of_every_rank(capsys):
    argv = ["run", GEMM_AR, "--ranks", "2", "--arg", "ranks=2", "--timing-only", "--json"]
    assert main([*argv, "--stream", f"{GEMM_AR}:comm"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [[s["kernel"] for s in rs] for rs in got["per_stream"]] == [["gemm", "allreduce"]] * 2
    assert got["per_stream"][1][0] == got["per_rank"][1]
    assert got["total_cycles"] == max(s["total_cycles"] for rs in got["per_stream"] for s in rs)
    assert main(argv) == 0  # one kernel: no per_stream
    assert "per_stream" not in json.loads(capsys.readouterr().out)


def test_auto_mode_releases_the_payload_before_every_signal():
    # PTOAS puts pipe_barrier(PIPE_ALL) before every comm.tnotify; without it auto mode
    # signalled peers at cycle 0, before the TPUTs it announces had left the core
    ag = _example("allgather")
    r = sim.simulate(ag.build(3, 8, 64), ranks=3, sync="auto")
    for rank in r.ranks:
        t = rank.trace
        puts = t[t["opcode"] == "TPUT"]["end_cycle"].max()
        notes = t[t["opcode"] == "TNOTIFY"]["start_cycle"]
        assert len(notes) == 3 and notes.min() >= puts
