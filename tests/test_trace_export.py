"""Trace files: Chrome Trace Event JSON (ours and Perf-Sim's), CSV and Parquet.

The Chrome export must open in Perfetto (pid = core, tid = "<unit> <pipe>" with
thread_name metadata, one X slice per row with its operands in args, one s/f flow pair
per matched set -> wait) and import back into the same trace. The Perf-Sim import is
checked against Perf-Sim's own per-pipe summary of the same run.
"""

from __future__ import annotations

import csv
import json

import pandas as pd
import pytest
from trace_kernels import PERFSIM_SUMMARY, PERFSIM_TRACE, add2, op_rows

import sim
from sim.base.errors import UserError
from sim.trace import read_trace, write_trace
from sim.trace.export_chrome import to_chrome
from sim.trace.frame import normalize
from sim.trace.import_chrome import from_chrome
from sim.trace.import_perfsim import parse_thread
from sim.trace.schema import COLUMNS

KEY = ["id", "pipe", "opcode", "start_cycle", "end_cycle"]


@pytest.fixture(scope="module")
def run():
    return sim.simulate(add2(), "a2a3")


@pytest.fixture(scope="module")
def chrome(run):
    return to_chrome(run.trace, kernel="add2", target="a2a3")


def _events(chrome, ph):
    return [e for e in chrome["traceEvents"] if e["ph"] == ph]


# --- Chrome export -------------------------------------------------------------------------


def test_chrome_is_plain_json_with_time_unit_metadata(chrome, run):
    text = json.dumps(chrome)  # only JSON types
    assert json.loads(text) == chrome
    assert chrome["otherData"]["time_unit"] == "cycles"
    assert "cycles" in chrome["otherData"]["note"]
    assert chrome["otherData"]["total_cycles"] == run.total_cycles


def test_chrome_names_processes_by_core_and_threads_by_unit_and_pipe(chrome):
    meta = _events(chrome, "M")
    assert [e["args"]["name"] for e in meta if e["name"] == "process_name"] == ["core 0"]
    threads = [(e["pid"], e["tid"], e["args"]["name"]) for e in meta if e["name"] == "thread_name"]
    assert threads == [
        (0, "AIV0 PIPE_MTE2", "AIV0 PIPE_MTE2"),
        (0, "AIV0 PIPE_V", "AIV0 PIPE_V"),
        (0, "AIV0 PIPE_MTE3", "AIV0 PIPE_MTE3"),
    ]
    order = {e["tid"]: e["args"]["sort_index"] for e in meta if e["name"] == "thread_sort_index"}
    assert order == {"AIV0 PIPE_MTE2": 0, "AIV0 PIPE_V": 1, "AIV0 PIPE_MTE3": 2}


def test_one_slice_per_row_in_cycles_with_operands_in_args(chrome, run):
    slices = _events(chrome, "X")
    assert len(slices) == len(run.trace)
    tadd = next(e for e in slices if e["name"] == "TADD")
    row = op_rows(run.trace).set_index("opcode").loc["TADD"]
    assert (tadd["pid"], tadd["tid"]) == (0, "AIV0 PIPE_V")
    assert (tadd["ts"], tadd["dur"]) == (row["start_cycle"], row["duration_cycles"])
    assert tadd["args"]["operands"] == row["operands"]
    assert set(COLUMNS) <= set(tadd["args"])
    waits = [e for e in slices if e["cat"] == "wait_flag"]
    assert {e["name"] for e in waits} == {
        "wait_flag PIPE_MTE2->PIPE_V#0",
        "wait_flag PIPE_MTE2->PIPE_V#1",
        "wait_flag PIPE_V->PIPE_MTE3#0",
    }


def test_one_flow_per_matched_set_wait_pair(chrome):
    starts, finishes = _events(chrome, "s"), _events(chrome, "f")
    assert len(starts) == len(finishes) == 3
    assert sorted(e["id"] for e in starts) == sorted(e["id"] for e in finishes) == [1, 2, 3]
    slices = _events(chrome, "X")
    by_flow = {e["id"]: e for e in finishes}
    pairs = set()
    for s in starts:
        f = by_flow[s["id"]]
        assert s["name"] == f["name"] and f["bp"] == "e"
        # each end lies inside an instruction slice of its thread, so the viewer binds it
        src = [
            x
            for x in slices
            if x["tid"] == s["tid"] and x["cat"] == "op" and x["ts"] <= s["ts"] < x["ts"] + x["dur"]
        ]
        dst = [
            x
            for x in slices
            if x["tid"] == f["tid"] and x["cat"] == "op" and x["ts"] <= f["ts"] < x["ts"] + x["dur"]
        ]
        assert len(src) == 1 and len(dst) == 1
        pairs.add((src[0]["args"]["id"], s["name"], dst[0]["name"]))
    assert pairs == {
        (0, "PIPE_MTE2->PIPE_V#0", "TADD"),
        (2, "PIPE_MTE2->PIPE_V#1", "TADD"),
        (6, "PIPE_V->PIPE_MTE3#0", "TSTORE"),
    }


def test_chrome_round_trip_gives_the_same_trace(run, chrome):
    back = from_chrome(json.loads(json.dumps(chrome)))
    pd.testing.assert_frame_equal(op_rows(back)[KEY], op_rows(run.trace)[KEY])
    pd.testing.assert_frame_equal(back, run.trace)


# --- files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".csv", ".parquet"])
@pytest.mark.parametrize("detail", ["op", "cce"])
def test_write_then_read_is_lossless(tmp_path, suffix, detail):
    trace = sim.simulate(add2(), "a2a3", detail=detail).trace
    path = write_trace(trace, tmp_path / "sub" / f"t{suffix}")
    assert path.is_file()
    pd.testing.assert_frame_equal(read_trace(path), trace)


def test_csv_is_the_schema_columns_in_order(tmp_path, run):
    path = write_trace(run.trace, tmp_path / "t.csv")
    with path.open() as f:
        assert next(csv.reader(f)) == list(COLUMNS)


def test_json_file_opens_as_a_chrome_trace_object(tmp_path, run):
    path = write_trace(run.trace, tmp_path / "t.json", kernel="add2", target="a2a3")
    obj = json.loads(path.read_text())
    assert {"traceEvents", "displayTimeUnit", "otherData"} <= set(obj)
    assert (obj["otherData"]["kernel"], obj["otherData"]["target"]) == ("add2", "a2a3")
    write_trace(run.trace, tmp_path / "t.csv", kernel="add2")  # tables ignore the names


@pytest.mark.parametrize("name", ["t.txt", "t", "t.xlsx"])
def test_unknown_suffix_is_a_user_error_naming_it(tmp_path, run, name):
    with pytest.raises(UserError, match=r"suffix .*expected one of \.json, \.csv, \.parquet"):
        write_trace(run.trace, tmp_path / name)
    with pytest.raises(UserError, match="suffix"):
        read_trace(tmp_path / name)


def test_reading_a_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        read_trace(tmp_path / "missing.csv")


def test_normalize_fills_missing_columns_with_defaults():
    df = normalize(
        pd.DataFrame(
            {
                "id": [1, 0],
                "pipe": ["PIPE_V", "PIPE_MTE2"],
                "start_cycle": [5, 0],
                "end_cycle": [9, 5],
            }
        )
    )
    assert list(df.columns) == list(COLUMNS)
    assert df["id"].tolist() == [0, 1]  # ordered by start
    assert df["duration_cycles"].tolist() == [5, 4]
    assert df["opcode"].tolist() == ["", ""] and df["bytes"].tolist() == [0, 0]


# --- Perf-Sim import -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "tid, expected",
    [
        ("[AIC-0] MTE2", (0, "AIC", "PIPE_MTE2")),
        ("[AIC-0] Scalar", (0, "AIC", "PIPE_S")),
        ("[AIC-0] MTE1", (0, "AIC", "PIPE_MTE1")),
        ("[AIC-0] CUBE", (0, "AIC", "PIPE_M")),
        ("[AIC-0] FIXP", (0, "AIC", "PIPE_FIX")),
        ("[AIC-0/AIV-0] VEC", (0, "AIV0", "PIPE_V")),
        ("[AIC-0/AIV-0] MTE2", (0, "AIV0", "PIPE_MTE2")),
        ("[AIC-3/AIV-1] MTE3", (3, "AIV1", "PIPE_MTE3")),
        ("[AIC-0] MTE2_AIV", (0, "AIV0", "PIPE_MTE2")),
        ("[AIC-0] MTE2_AIC", (0, "AIC", "PIPE_MTE2")),
        ("[AIC-0] VEC_1", (0, "AIV1", "PIPE_V")),
    ],
)
def test_perfsim_thread_names_map_to_unit_core_and_pipe(tid, expected):
    assert parse_thread(tid) == expected


@pytest.mark.parametrize("tid", ["MTE2", "[AIC-0] DMA", "[AIV-0] VEC"])
def test_unknown_perfsim_threads_are_user_errors(tid):
    with pytest.raises(UserError, match="Perf-Sim trace"):
        parse_thread(tid)


@pytest.fixture(scope="module")
def perfsim():
    return read_trace(PERFSIM_TRACE)


def test_perfsim_gemm_imports_into_the_schema(perfsim):
    assert list(perfsim.columns) == list(COLUMNS)
    assert len(perfsim) == 15  # 9 TASSIGN + 6 instructions, no flow rows
    assert int(perfsim["end_cycle"].max()) == 3024  # data/README.md: total 3 024 cycles
    assert set(perfsim["unit"]) == {"AIC"} and set(perfsim["core"]) == {0}
    mm = perfsim[perfsim["opcode"] == "TMATMUL"].iloc[0]
    assert (mm["id"], mm["pipe"], mm["start_cycle"], mm["end_cycle"]) == (26, "PIPE_M", 892, 1410)
    assert (mm["waits"], mm["records"], mm["operands"]) == ("E11;E12", "E13", "128x256,fp32")
    assert perfsim.loc[perfsim["pipe"] == "PIPE_S", "kind"].eq("scalar").all()


def test_perfsim_busy_cycles_match_its_own_pipeline_summary(perfsim):
    with PERFSIM_SUMMARY.open() as f:
        aic = next(r for r in csv.DictReader(f) if r["unit"] == "AIC")
    busy = sim.trace.pipe_table(perfsim).set_index("pipe")["busy_cycles"]
    assert busy.to_dict() == {
        "PIPE_S": int(aic["scalar_cycles"]),
        "PIPE_MTE2": int(aic["mte2_aic_cycles"]),
        "PIPE_MTE1": int(aic["mte1_cycles"]),
        "PIPE_M": int(aic["cube_cycles"]),
        "PIPE_FIX": int(aic["fixp_cycles"]),
    }
    assert busy.sum() == int(aic["busy_cycles"])
    assert int(perfsim["end_cycle"].max()) == int(aic["total_cycles"])


def test_perfsim_and_our_traces_compare_pipe_by_pipe(perfsim, run):
    table = sim.trace.compare_table(run.trace, perfsim, ("ours", "perfsim"))
    assert table.loc["total", "perfsim"] == 3024
    assert table.loc["total", "ours"] == run.total_cycles
    assert table.loc["PIPE_FIX", "ours"] == 0 and table.loc["PIPE_FIX", "perfsim"] == 1614
    assert table.loc["PIPE_FIX", "delta"] == 1614


def test_bare_array_and_object_forms_both_import(perfsim):
    events = json.loads(PERFSIM_TRACE.read_text())
    assert isinstance(events, list)
    pd.testing.assert_frame_equal(from_chrome({"traceEvents": events}), perfsim)


def test_not_a_chrome_trace_is_a_user_error(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"nothing": 1}')
    with pytest.raises(UserError, match="traceEvents"):
        read_trace(p)
    p.write_text("not json")
    with pytest.raises(UserError, match="not valid JSON"):
        read_trace(p)
