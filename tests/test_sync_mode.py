"""The default run is what the hardware would run.

Rule (sim/engine/mode.py): a kernel with no set_flag / wait_flag / pipe_barrier /
record_event / wait_event in any function runs in auto mode (sync inserted, unaddressed
tiles placed by liveness, func.call inlined); a kernel with explicit sync runs as written
and, under ``races="manual"`` (what ``ptosim run`` does), gets a warning when it races.

Hand-derived cycles (a2a3; the DMA figures from machine.toml via tests/dma_formula.py):
TLOAD 16x64 f32 = GM->UB 213.6 + floor(4096 / 143.45) = 241.6 -> 242; TSTORE = UB->GM
213.6 + floor(4096 / 109.38) = 250.6 -> 251; TADD 16x64 f32 cold = 24 + 2 * 16 = 56.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dma_formula import dma_cycles

import sim
from sim.base.errors import UserError
from sim.frontend import parse_file, resolve_target
from sim.studies import compare_json

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "compiler_output"
EXAMPLES = sorted((ROOT / "examples").glob("*.pto"))
LOAD, STORE, TADD = dma_cycles("GM_UB", 4096), dma_cycles("UB_GM", 4096), 56
AUTO = 2 * LOAD + TADD + STORE  # no_sync_call.pto in auto mode
ARGS = {
    "trelu": {"n": 64},
    "dyn_valid": {"vr": 20, "vc": 100},
    "relu_sub_db": {"k": 4},
    "tfmods": {"divisor": 3.0},
    "gemm": {"m": 128, "k": 512, "n": 256, "singleCoreM": 128, "singleCoreN": 256},
    "flash_attention": {"S1": 256, "S1_TILE": 0},
}
MANUAL = {
    "compact_add",
    "matmul",
    "relu_sub_db",
    "gemm",  # the examples that carry flags
    "flash_attention",
}


def _example(path):
    program = parse_file(path)
    return program, resolve_target(program), ARGS.get(path.stem, {})


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_is_race_free_in_its_default_run(path):
    program, target, args = _example(path)
    r = sim.simulate(program, target, inputs=args, races=True)
    assert r.mode == ("manual" if path.stem in MANUAL else "auto")
    assert r.races == (), r.races[0].message


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_compare_works_for_every_example(path):
    program, target, args = _example(path)
    # flash_attention: each key-tile branch's FIFO buffers are held over that branch only,
    # so auto mode places all three forms (tests/test_placement_fifo_branches.py)
    j = compare_json(program, target, inputs=args)
    assert j["auto"]["deadlock"] is None and j["auto"]["races"] == 0
    assert j["manual"]["peak_bytes"], "manual peak_bytes from hand / engine addresses"
    assert j["auto"]["total_cycles"] > 0


def test_no_sync_call_kernel_runs_auto_by_default():
    """The TLOADs (back to back on MTE2) -> TADD (cold 56) -> TSTORE;
    the TADD and TSTORE sit in a callee reached by func.call (inlined)."""
    program = parse_file(DATA / "no_sync_call.pto")
    r = sim.simulate(program, "a2a3")
    assert r.mode == "auto"
    assert r.total_cycles == AUTO
    a, b = r.gm["pa"][:1024].reshape(16, 64), r.gm["pb"][:1024].reshape(16, 64)
    assert np.array_equal(r.output("po")[:1024].reshape(16, 64), a + b)


def test_as_written_is_faster_than_hardware_and_warns():
    program = parse_file(DATA / "no_sync_call.pto")
    manual = sim.simulate(program, "a2a3", sync="manual", races="manual")
    # TADD starts at 0 while the loads run: the total is the loads alone
    assert manual.mode == "manual" and manual.total_cycles == 2 * LOAD < AUTO
    assert len(manual.races) == 3
    (w,) = [w for w in manual.warnings if "race" in w]
    assert w.startswith("warning: 3 races") and manual.races[0].message in w


def test_ideal_is_a_lower_bound_of_the_default():
    program = parse_file(DATA / "no_sync_call.pto")
    ideal = sim.simulate(program, "a2a3", sync="ideal")
    # every pipe runs its queue from 0: MTE2's two loads are the longest
    assert ideal.mode == "ideal" and ideal.total_cycles == 2 * LOAD


def test_explicit_sync_runs_as_written_and_a_racy_manual_kernel_warns():
    k = sim.Kernel("half_synced")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    a, c = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    e = k.TLOAD(a, x)
    k.TADD(c, a, a, e)  # flag MTE2 -> V: the kernel synchronises by hand ...
    k.TSTORE(y, c)  # ... but forgets V -> MTE3
    r = sim.simulate(k, races="manual")
    assert r.mode == "manual"
    assert [f.kind for f in r.races] == ["RAW"]
    assert any(w.startswith("warning: 1 race:") for w in r.warnings)
    # without races="manual" nothing is checked (the API default: no cost)
    assert sim.simulate(k).races == () and not any("race" in w for w in sim.simulate(k).warnings)
    # the default auto run of the same kernel with its flags stripped is race-free
    assert sim.simulate(k, sync="auto", races=True).races == ()


def test_a_clean_manual_kernel_has_no_warning():
    program, target, args = _example(ROOT / "examples" / "relu_sub_db.pto")
    r = sim.simulate(program, target, inputs=args, races="manual")
    assert r.mode == "manual" and r.warnings == ()


def test_the_report_says_what_an_asked_for_mode_did_to_the_kernel():
    synced, target, args = _example(ROOT / "examples" / "relu_sub_db.pto")
    unsynced = parse_file(DATA / "no_sync_call.pto")
    default = {
        "auto": "(no explicit sync in the kernel: ",
        "manual": "(run as written, with the kernel's own flags and barriers)",
    }
    cases = [
        (synced, None, "manual", default["manual"]),
        (synced, "manual", "manual", default["manual"]),
        (synced, "auto", "auto", "(asked for: the kernel's own flags and barriers removed, "),
        (unsynced, None, "auto", default["auto"]),
        (unsynced, "auto", "auto", default["auto"]),
        (unsynced, "manual", "manual", "(asked for: run as written, and the kernel has no flags"),
    ]
    for program, sync, mode, said in cases:
        r = sim.simulate(program, target, inputs=args if program is synced else None, sync=sync)
        assert r.mode == mode
        line = r.report().splitlines()[1]
        assert line.startswith(f"sync mode: {mode} {said}"), (sync, line)


def test_bad_sync_value_is_a_user_error():
    with pytest.raises(UserError, match="sync: expected one of auto, manual, ideal"):
        sim.simulate(parse_file(DATA / "no_sync_call.pto"), sync="fast")


def test_default_cycles_are_not_below_the_as_written_run_for_no_sync_examples():
    for name in ("row_softmax", "tsub", "trem"):
        program, target, args = _example(ROOT / "examples" / f"{name}.pto")
        default = sim.simulate(program, target, inputs=args, functional=False)
        manual = sim.simulate(
            program, target, inputs=args, functional=False, sync="manual", races=True
        )
        assert manual.races, name  # as written it races ...
        assert default.total_cycles > manual.total_cycles  # ... and looks faster than it is


# --- liveness ------------------------------------------------------------------


def test_tiles_that_fit_only_by_liveness_run_by_default():
    program = parse_file(DATA / "reuse_fits.pto")
    r = sim.simulate(program, "a2a3", functional=False, races=True)
    assert r.mode == "auto" and r.races == ()
    # two 64 KiB tiles alive at a time: auto mode reuses a's bytes for c and orders it
    from sim.studies.compare import run_mode

    assert run_mode(program, "a2a3", "auto", functional=False).metrics()["peak_bytes"] == {
        "UB": 2 * 65536
    }
    # as written the kernel has no flag at all: nothing orders c's TMULS after a's TLOAD
    # on another pipe, so placement gives c no shared bytes and the tiles do not fit
    with pytest.raises(
        UserError,
        match=r"placement: tile %c \(65536 B\) does not fit in UB"
        r".*%a \[0x0, 0x10000\) \(not ordered\)",
    ):
        compare_json(program, "a2a3")


def test_manual_peak_bytes_come_from_hand_addresses():
    """relu_sub_db places its six 8 KiB tiles with alloc_tile addr = %o (arith.constant
    SSA values); all six are live together."""
    program, target, args = _example(ROOT / "examples" / "relu_sub_db.pto")
    j = compare_json(program, target, inputs=args)
    assert j["manual"]["peak_bytes"] == {"UB": 6 * 8192}


# --- the command line ------------------------------------------------------------------


def _ptosim(*args):
    return subprocess.run(
        [sys.executable, "-m", "sim", *map(str, args)], capture_output=True, text=True, timeout=120
    )


def test_cli_run_states_the_mode_and_warns():
    p = _ptosim("run", DATA / "no_sync_call.pto", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["mode"] == "auto" and out["total_cycles"] == AUTO and out["warnings"] == []
    p = _ptosim("run", DATA / "no_sync_call.pto", "--sync", "manual")
    assert p.returncode == 0, p.stderr
    assert "sync mode: manual" in p.stdout and "warning: 3 races" in p.stdout
    p = _ptosim("run", DATA / "no_sync_call.pto", "--sync", "bogus")
    assert p.returncode == 2 and "ptosim: error:" in p.stderr and "Traceback" not in p.stderr


def test_cli_run_no_races_skips_the_check_and_the_report_says_so():
    """A manual run is checked for races unless --no-races; text and --json say which,
    and the cycles are the same either way."""
    for kernel in (DATA / "no_sync_call.pto", ROOT / "examples" / "tsub.pto"):
        checked = _ptosim("run", kernel, "--sync", "manual")
        bare = _ptosim("run", kernel, "--sync", "manual", "--no-races")
        assert checked.returncode == 0 and bare.returncode == 0, checked.stderr + bare.stderr
        n = int(checked.stdout.split("warning: ")[1].split(" race")[0])
        assert f"races: checked, {n} found" in checked.stdout
        assert "races: not checked" in bare.stdout and "race" not in bare.stdout.replace(
            "races: not checked", ""
        )
        cycles = [line for line in checked.stdout.splitlines() if "total cycles" in line]
        assert cycles == [line for line in bare.stdout.splitlines() if "total cycles" in line]
        j = [
            json.loads(_ptosim("run", kernel, "--sync", "manual", "--json", *flag).stdout)
            for flag in ((), ("--no-races",))
        ]
        assert j[0]["races"] == {"checked": True, "found": n, "by": "detector" if n else "proof"}
        assert j[1]["races"] == {"checked": False, "found": 0, "by": ""}
        assert j[0]["total_cycles"] == j[1]["total_cycles"]
    # auto mode inserts the sync: nothing to check, and the report says so
    p = _ptosim("run", DATA / "no_sync_call.pto")
    assert "races: not checked" in p.stdout


def test_a_kernel_auto_mode_cannot_place_runs_as_written_with_a_warning():
    from sim.engine.mode import prepare
    from sim.target import load_target

    # a FIFO slot taken with talloc_to_aiv before the cube computes into it
    prep = prepare(
        sim.parse_file(Path(__file__).parent / "data" / "talloc_to_aiv.pto"), load_target("a2a3")
    )
    assert prep.mode == "manual"
    assert prep.warnings[0].startswith(
        "warning: the kernel has no explicit synchronisation, but auto mode: pto.talloc_to_aiv"
    )
    assert "runs as written" in prep.warnings[0]
