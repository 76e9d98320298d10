"""``run`` and ``compare`` take one set of kernel and launch flags; ``check --races`` runs
timing-only unless the kernel reads scalars out of data."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_fixtures import one_line_error

from sim.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
GEMM = ROOT / "examples" / "gemm.pto"
GEMM_ARGS = [
    *("--arg", "m=256", "--arg", "k=512", "--arg", "n=512"),
    *("--arg", "singleCoreM=128", "--arg", "singleCoreN=256"),
]
INDEX_TABLE = ROOT / "tests" / "data" / "wild" / "index_table.pto"


def _subparser(name: str):
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return sub.choices[name]


def _launch_flags(name: str) -> set:
    (group,) = [g for g in _subparser(name)._action_groups if g.title == "kernel and launch"]
    return {s for a in group._group_actions for s in (a.option_strings or [a.dest])}


def test_compare_takes_every_launch_flag_of_run():
    flags = _launch_flags("run")
    for flag in ("--func", "--block-dim", "--arg", "--input", "--target", "--seed"):
        assert flag in flags
    assert {"--timing-only", "--max-cycles", "--max-instructions", "--quiet"} <= flags
    assert _launch_flags("compare") == flags


def test_compare_runs_on_the_cores_block_dim_asks_for(cli):
    code, out, err = cli("compare", GEMM, "--block-dim", "2", "--timing-only", "--json", *GEMM_ARGS)
    assert code == 0, err
    data = json.loads(out)
    for mode in ("manual", "auto"):
        pipes = data[mode]["pipes"]
        assert pipes["core 0 AIC PIPE_M"] == pipes["core 1 AIC PIPE_M"] > 0, pipes
    code, out, _ = cli("compare", GEMM, "--timing-only", "--json", *GEMM_ARGS)
    assert not [p for p in json.loads(out)["manual"]["pipes"] if p.startswith("core 1")]


def test_compare_func_and_limits(cli):
    one_line_error(*cli("compare", GEMM, "--func", "nosuch", *GEMM_ARGS)[::2], "@nosuch", "@gemm")
    code, out, err = cli("compare", GEMM, "--func", "gemm", "--timing-only", *GEMM_ARGS)
    assert code == 0, err
    one_line_error(
        *cli("compare", GEMM, "--max-instructions", "5", "--timing-only", *GEMM_ARGS)[::2],
        "--max-instructions 5",
    )


def test_unknown_flag_names_its_subcommand(cli):
    code, out, err = cli("compare", GEMM, "--nope")
    assert one_line_error(code, err) == (
        "ptosim: error: ptosim compare: unrecognized arguments: --nope"
    )
    code, out, err = cli("check", GEMM, "extra.pto")
    assert one_line_error(code, err) == (
        "ptosim: error: ptosim check: unrecognized arguments: extra.pto"
    )


def _recorded_runs(monkeypatch) -> list:
    import importlib

    compare = importlib.import_module("sim.studies.compare")  # sim.studies.compare: a function
    calls = []
    real = compare.run_checked

    def spy(*a, **kw):
        calls.append(kw.get("functional", True))
        return real(*a, **kw)

    monkeypatch.setattr(compare, "run_checked", spy)
    return calls


def test_check_races_runs_timing_only(cli, monkeypatch, tmp_path):
    # an integer division by zero: a functional run stops there, a race check reads
    # addresses only and says the kernel is clean
    (tmp_path / "k.py").write_text(
        textwrap.dedent("""\
        import sim

        def build():
            k = sim.Kernel("idiv")
            x = k.gm("x", "i32", (16, 64))
            y = k.gm("y", "i32", (16, 64))
            a = k.tile("vec", "i32", 16, 64, name="a")
            e = k.TLOAD(a, x)
            e = k.TDIVS(a, a, 0, e)
            k.TSTORE(y, a, e)
            return k
        """)
    )
    code, out, err = cli("run", "k.py")
    assert code == 2 and "division by zero" in err, err
    calls = _recorded_runs(monkeypatch)
    code, out, err = cli("check", "--races", "k.py")
    assert code == 0, err
    assert "clean" in out and calls == [False] and "note" not in err


def test_check_races_computes_data_a_kernel_reads_scalars_from(cli, monkeypatch, tmp_path):
    np.save(tmp_path / "idx.npy", np.array([3, 0, 15, 7], np.int32))
    calls = _recorded_runs(monkeypatch)
    code, out, err = cli("check", "--races", INDEX_TABLE, "--input", "idx=idx.npy")
    assert code == 1 and "RAW" in out, err  # it has no flags: its load and store race
    assert calls == [True]
    assert "reads scalars out of data (load_scalar (" in err and "--timing-only" in err
    # the user may still ask for the timing-only check
    code, again, err = cli(
        "check", "--races", "--timing-only", INDEX_TABLE, "--input", "idx=idx.npy"
    )
    assert code == 1 and again == out, err
    assert calls == [True, False] and "note" not in err


@pytest.mark.parametrize("kernel", ["racy", "clean"], ids=["racy", "clean"])
def test_timing_only_race_check_finds_what_the_functional_one_does(kernel):
    import sim
    from sim.studies import check_races

    k = sim.Kernel(kernel)
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    a = k.tile("vec", "f32", 16, 64, name="a")
    b = k.tile("vec", "f32", 16, 64, name="b")
    if kernel == "racy":  # no flags: the add races with the load, the store with the add
        k.TLOAD(a, x)
        k.TADDS(b, a, 1.0)
        k.TSTORE(y, b)
    else:
        e = k.TLOAD(a, x)
        e = k.TADDS(b, a, 1.0, e)
        k.TSTORE(y, b, e)
    timing_only = check_races(k)
    assert timing_only == check_races(k, functional=True)
    assert bool(timing_only) == (kernel == "racy")
