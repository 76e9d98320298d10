"""``check`` and ``run`` agree, and runs stay data-independent:
check proves what a run would hit (event ids outside the pool, waits nothing sets, in
every function and branch); run says which of several kernel functions it runs; missing
scalar arguments come in one message; data read from GM nobody gave never stops a
timing-only run, and a functional run names the --input to give."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sim.base.errors import SimulationError
from sim.cli import main
from sim.engine.run import simulate
from sim.frontend import parse_file, parse_text

DATA = Path(__file__).resolve().parent / "data"


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_rejects_an_event_id_outside_the_pool_as_run_does(capsys):
    path = str(DATA / "sync_event_id9.pto")
    code, _, err = _run(["check", path], capsys)
    assert code == 2
    assert (
        f"{path}:4:5: error: set_flag [PIPE_MTE2, PIPE_V, EVENT_ID9]: event id: expected "
        f"EVENT_ID0..EVENT_ID7" in err
    )
    code, _, err = _run(["run", path], capsys)
    assert code == 2 and "event id: expected 0..7, found 9" in err


def test_check_proves_a_wait_nothing_sets_in_a_callee_else_branch(capsys):
    path = str(DATA / "sync_never_set.pto")
    code, _, err = _run(["check", path], capsys)
    assert code == 2
    assert (
        f"{path}:16:7: error: deadlock: wait_flag [PIPE_MTE2, PIPE_V, EVENT_ID1] is never "
        f"set" in err
    )
    # the run reaches it when %n <= 0 and reports the deadlock; with %n > 0 it finishes
    code, _, err = _run(["run", path, "--arg", "n=0"], capsys)
    assert code == 2 and "deadlock" in err and "PIPE_MTE2->PIPE_V#1" in err
    code, _, _ = _run(["run", path, "--arg", "n=1"], capsys)
    assert code == 0


def test_run_says_which_of_several_kernels_runs_and_func_picks(capsys):
    path = str(DATA / "two_kernels.pto")
    code, out, err = _run(["run", path, "--arg", "n=1", "--arg", "m=2"], capsys)
    assert code == 0
    assert (
        "2 kernel functions (@mm_aic, @mm_aiv); this run is of @mm_aic (pick one with --func" in out
    )
    code, out, err = _run(["run", path, "--func", "mm_aiv"], capsys)
    assert code == 0 and "kernel mm_aiv" in out and "this run is of @mm_aiv" in out
    code, _, err = _run(["run", path, "--func", "mm"], capsys)
    assert code == 2 and "no function @mm (functions: @mm_aic, @mm_aiv)" in err


def test_two_functions_marked_pto_entry_say_which_one_runs(capsys, tmp_path):
    # both functions marked: the mark picks no single kernel
    text = (DATA / "two_kernels.pto").read_text().replace(") {\n", ") attributes {pto.entry} {\n")
    assert text.count("attributes {pto.entry}") == 2
    path = tmp_path / "two_entries.pto"
    path.write_text(text)
    code, out, err = _run(["run", str(path), "--arg", "n=1", "--arg", "m=2"], capsys)
    assert code == 0 and "kernel mm_aic" in out
    assert (
        "2 kernel functions (@mm_aic, @mm_aiv); this run is of @mm_aic (pick one with --func" in out
    )
    code, out, err = _run(["run", str(path), "--func", "mm_aiv"], capsys)
    assert code == 0 and "kernel mm_aiv" in out and "this run is of @mm_aiv" in out


def test_the_python_api_says_which_of_two_entry_functions_runs(tmp_path):
    # both functions marked pto.entry: simulate runs the first and says so in its warnings
    text = (DATA / "two_kernels.pto").read_text().replace(") {\n", ") attributes {pto.entry} {\n")
    program = parse_text(text, "two_entries.pto")
    r = simulate(program, inputs={"n": 1, "m": 2}, functional=False)
    assert r.kernel == "mm_aic"
    assert any(
        "2 kernel functions (@mm_aic, @mm_aiv); this run is of @mm_aic" in w for w in r.warnings
    )
    # only the second marked: it runs, and a single marked kernel needs no word
    one = parse_text(text.replace(" attributes {pto.entry}", "", 1), "one_entry.pto")
    r = simulate(one, functional=False)
    assert r.kernel == "mm_aiv" and not any("kernel functions" in w for w in r.warnings)


def test_missing_scalar_arguments_are_listed_together(capsys):
    code, _, err = _run(["run", str(DATA / "two_kernels.pto")], capsys)
    assert code == 2
    assert (
        "scalar arguments %n (index), %m (i32) have no value; pass --arg n=VALUE "
        "--arg m=VALUE" in err
    )


def test_indices_from_random_gm_data_never_stop_a_timing_only_run():
    program = parse_file(DATA / "wild" / "index_table.pto")
    r = simulate(program, "a2a3", functional=False)
    assert (r.trace["opcode"] == "TLOAD").sum() == 4
    assert any("timing-only run goes on" in w and "%idx" in w for w in r.warnings)


def test_a_functional_run_names_the_index_input_to_give():
    program = parse_file(DATA / "wild" / "index_table.pto")
    with pytest.raises(
        SimulationError,
        match=r"random data \(%idx\): give real ones with "
        r"--input idx=FILE.npy",
    ):
        simulate(program, "a2a3")
    idx = np.array([3, 0, 15, 7], np.int32)
    x = np.arange(256 * 64, dtype=np.float32)
    r = simulate(program, "a2a3", inputs={"idx": idx, "px": x})
    rows = x.reshape(16, 16, 64)[idx].reshape(64, 64)
    assert np.array_equal(r.gm["py"].reshape(64, 64), rows)


@pytest.mark.parametrize("rows,buffers", [(64, 4), (64, 2), (32, 4), (16, 3), (64, 1)])
def test_check_refuses_a_placement_exactly_when_run_does(rows, buffers, tmp_path, capsys):
    """Tiles without addresses that fit only by sharing bytes the kernel's flags do not
    order: ``run`` refuses the placement, and ``check`` must say so too (it said ok)."""
    kernel = Path(__file__).resolve().parent.parent / "examples" / "relu_sub_tiled.py"
    args = [
        str(kernel),
        "--arg",
        f"rows={rows}",
        "--arg",
        "cols=128",
        "--arg",
        f"buffers={buffers}",
        "--arg",
        "height=128",
    ]
    run_code, _, run_err = _run(["run", *args, "--timing-only", "--quiet"], capsys)
    check_code, out, check_err = _run(["check", *args], capsys)
    assert run_code in (0, 2) and check_code == run_code, (run_err, check_err)
    if run_code == 2:
        assert "does not fit" in run_err and "placement check failed: " in check_err
        assert "does not fit" in check_err and len(check_err.splitlines()) == 1
    else:
        assert ": ok: " in out
