"""Manual vs auto on the double-buffered relu_sub kernel, with hand-derived expectations.

relu_sub: 8 chunks of 32x64 f32 (8 KiB per tile, 6 tiles in two ping/pong sets). One
TLOAD moves 8192 B GM->UB: start-up + floor(8192 / bytes per cycle) of machine.toml's
figures (tests/dma_formula.py; 213.6 + floor(8192 / 143.45) = 270.6 -> 271 at this
writing), so MTE2 is busy 16 x LOAD cycles and bounds the kernel; the last chunk adds its
vector work 180 and its store (UB->GM, 213.6 + floor(8192 / 109.38) -> 288): TOTAL = 4804;
the vector work of a chunk (TSUB, TRELU, TMULS) fits under the next chunk's two loads.

* syncs (executed set/wait pairs). Manual (builder tokens): per chunk MTE2->V twice (TSUB
  waits on both loads) and V->MTE3 once; chunks 2..7 also wait V->MTE2 (input set free)
  and MTE3->V (result tile free): 8*3 + 6*2 = 36. Auto: the set after the second load
  covers the first one too (MTE2 runs in order), so one MTE2->V per chunk: 8*2 + 6*2 = 28.
* barriers: TRELU after TSUB and TMULS after TRELU are same-pipe RAW on r: 2 per chunk =
  16 on both sides.
* peak UB: every tile is used by chunks i and i+2 ... i+6, so all six are live together
  in both runs: 6 * 8192 = 49152 B (auto's bank stagger gaps are not tile bytes).
* cycles: each auto wait fires at the same cycle as the manual wait it replaces (the
  merged MTE2->V wait fires when the second load ends, as the manual second wait does),
  the barriers are the same, and neither run pays a bank conflict (the manual tiles are
  placed by the engine, auto staggers a and b): equal, TOTAL.

Placed by hand at pto-as-syntax.md §8 Example 3's addresses (a0 at 0x0, b0 at 0x2000,
a1 at 0x6000, b1 at 0x8000: 0x2000 / 32 = 256 and 256 % 16 = 0, every a/b pair shares a
bank), every TSUB (32 repeats) pays 32 cycles of bank conflict: PIPE_V busy + 8*32 = 256.
Only the last chunk's TSUB is on the critical path (the others hide under MTE2), so the
manual run is 32 cycles longer than auto: TOTAL + 32 vs TOTAL.
"""

import json

import pandas as pd
import pytest
from dma_formula import dma_cycles
from placement_kernels import relu_sub

import sim
from sim.studies import compare, compare_figure, compare_json, format_compare, run_comparison

LOAD, STORE, V_CHUNK = dma_cycles("GM_UB", 8192), dma_cycles("UB_GM", 8192), 180
assert 2 * LOAD >= max(V_CHUNK + 32, STORE)  # the derivation's MTE2-bound premise
TOTAL = 16 * LOAD + V_CHUNK + STORE


@pytest.fixture(scope="module")
def unplaced():
    return run_comparison(relu_sub())


@pytest.fixture(scope="module")
def placed():
    return run_comparison(relu_sub(placed=True))


def test_relu_sub_manual_equals_auto(unplaced):
    df = unplaced.frame()
    assert list(df.columns) == ["manual", "auto"]
    assert df.loc["total_cycles"].tolist() == [TOTAL, TOTAL]
    assert df.loc["busy_cycles[PIPE_MTE2]"].tolist() == [16 * LOAD, 16 * LOAD]
    assert df.loc["syncs"].tolist() == [36, 28]
    assert df.loc["barriers"].tolist() == [16, 16]
    assert df.loc["full_barriers"].tolist() == [0, 0]
    assert df.loc["peak_bytes[UB]"].tolist() == [49152, 49152]
    assert df.loc["races"].tolist() == [0, 0]


def test_hand_placement_pays_bank_conflicts(placed):
    df = placed.frame()
    assert df.loc["total_cycles"].tolist() == [TOTAL + 32, TOTAL]
    v = df.loc["busy_cycles[PIPE_V]"]
    assert v["manual"] - v["auto"] == 8 * 32
    trace = placed.manual.result.trace
    assert (trace["cce"].str.contains("ub_bank_conflict") == (trace["opcode"] == "TSUB")).all()


def test_sim_compare_is_the_dataframe_api():
    df = sim.compare(relu_sub())
    assert isinstance(df, pd.DataFrame) and df.loc["total_cycles", "auto"] == TOTAL


def test_compare_json_keys(unplaced):
    j = compare_json(unplaced)
    json.dumps(j)
    assert set(j) == {"manual", "auto"}
    for side in j.values():
        assert {"total_cycles", "syncs", "barriers", "peak_bytes", "races", "pipes"} <= set(side)
        assert side["peak_bytes"] == {"UB": 49152}
    assert j["auto"]["placement"]["a0"] == ["UB", 0]
    assert j["auto"]["inserted"]["syncs"] == 28


def test_format_compare_table(placed):
    text = format_compare(compare(placed))
    lines = text.splitlines()
    assert lines[0].split() == ["metric", "manual", "auto", "auto", "-", "manual"]
    row = next(line for line in lines if line.startswith("total_cycles"))
    assert row.split() == ["total_cycles", f"{TOTAL + 32:,}", f"{TOTAL:,}", "-32"]


def test_compare_figure_has_occupancy_maps_and_gantts(placed):
    import matplotlib

    matplotlib.use("Agg")
    fig = compare_figure(placed)
    titles = [ax.get_title() for ax in fig.axes]
    assert any("manual" in t and "UB occupancy" in t for t in titles)
    assert any("auto" in t and "UB occupancy" in t for t in titles)
    assert sum("pipelines" in t for t in titles) == 2
    occ = placed.auto.occupancy
    assert len(occ) == 6 and set(occ["buffer"]) == {"UB"}


def test_a_deadlocked_manual_kernel_still_compares():
    k = sim.Kernel("stuck")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    a = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 1)  # never set
    k.TADDS(a, a, 1.0)
    k.TSTORE(y, a)
    c = run_comparison(k)
    assert c.manual.result is None and "deadlock" in c.manual.deadlock
    df = c.frame()
    assert pd.isna(df.loc["total_cycles", "manual"]) and df.loc["total_cycles", "auto"] > 0
    assert compare_json(c)["manual"]["deadlock"]
    assert "-" in format_compare(df)
