"""``sim.sweep`` and ``ptosim sweep`` on a real Dask LocalCluster (2 worker processes,
started once for the module): rows match single runs, come back in configuration order,
failures are rows, the journal makes an interrupted sweep resume, Ctrl-C keeps the rows
finished."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from dask_fixtures import local_client

import sim
from sim.base.errors import UserError
from sim.cli import main as ptosim
from sim.studies.journal_rows import row_digest
from sim.studies.sweep_params import listed_once, typed_params

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
TILED = ROOT / "examples" / "relu_sub_tiled.py"
DB = ROOT / "examples" / "relu_sub_db.pto"
SMALL = {"height": 64, "width": 64}  # 64x64 f32: a few milliseconds per configuration


@pytest.fixture(scope="module")
def client():
    with local_client(workers=2, processes=True) as c:
        yield c


def _build(**params):
    from sim.kernel.files import load_kernel

    return load_kernel(str(TILED), list(params.items()))


def test_rows_are_the_single_runs_in_configuration_order(client):
    df = sim.sweep(
        TILED,
        {"rows": [16, 32], "buffers": [1, 2], **SMALL},
        sync=["manual", "auto"],
        scheduler=client,
    )
    order = [(r, b, m) for r in (16, 32) for b in (1, 2) for m in ("manual", "auto")]
    assert list(zip(df["rows"], df["buffers"], df["sync"], strict=True)) == order
    assert df["error"].isna().all() and (df["target"] == "a2a3").all()
    for row in df.to_dict("records"):
        side = sim.compare(_build(rows=row["rows"], buffers=row["buffers"], **SMALL))[row["sync"]]
        assert row["total_cycles"] == side["total_cycles"]
        assert row["busy_cycles[PIPE_V]"] == side["busy_cycles[PIPE_V]"]
        assert row["syncs"] == side["syncs"]
        assert row["peak_bytes[UB]"] == side["peak_bytes[UB]"]
        # at least one buffer set, at most the whole ring: 3 tiles x rows x 64 cols x 4 bytes each
        one_set = 3 * row["rows"] * 64 * 4
        assert one_set <= row["peak_bytes[UB]"] <= row["buffers"] * one_set
    assert len(set(df["config"])) == len(df)


def test_a_failed_configuration_is_a_row_with_its_error(client):
    # 24 rows do not divide 1024; 64x64 tiles with 8 buffer sets, each set used again
    # eight tiles later, keep 8 sets live at once: 384 KiB of UB even when placed by liveness
    df = sim.sweep(
        TILED, {"rows": [16, 24, 64], "buffers": [8], "height": 1024, "width": 64}, scheduler=client
    )
    assert df["error"].isna().tolist() == [True, False, False]
    assert "does not divide the 1024x64 matrix" in df["error"][1]
    assert "does not fit in UB" in df["error"][2]
    assert df["total_cycles"].isna().tolist() == [False, True, True]


def test_a_pto_kernel_sweeps_its_scalar_arguments(client):
    df = sim.sweep(DB, {"k": ["1", 2]}, scheduler=client)
    assert df["k"].tolist() == [1, 2]
    program = sim.parse_file(DB)
    expected = [
        sim.simulate(program, inputs={"k": k}, functional=False).total_cycles for k in (1, 2)
    ]
    assert df["total_cycles"].tolist() == expected


def test_without_sync_modes_each_kernel_runs_in_the_mode_run_picks(client):
    tdivs = ROOT / "examples" / "tdivs.pto"  # no explicit sync: auto
    df = sim.sweep(tdivs, scheduler=client)
    assert df["sync"].tolist() == ["auto"] and df["error"].isna().all()
    expected = sim.simulate(sim.parse_file(tdivs), functional=False)
    assert expected.mode == "auto" and df["total_cycles"][0] == expected.total_cycles
    tiled = sim.sweep(TILED, {"rows": [32], **SMALL}, scheduler=client)  # hand-synchronised
    assert tiled["sync"].tolist() == ["manual"]


def test_resume_reads_the_journal_instead_of_rerunning(client, tmp_path, capsys):
    out = tmp_path / "r.parquet"
    first = sim.sweep(TILED, {"rows": [16, 32], **SMALL}, scheduler=client, output=out)
    journal = Path(f"{out}.journal")
    rows = [json.loads(line) for line in journal.read_text().splitlines()]
    assert sorted(r["config"] for r in rows) == sorted(first["config"])
    for r in rows:  # rows the resumed sweep must take, not recompute
        r["total_cycles"] = -1 if r["config"] == first["config"][0] else r["total_cycles"]
        r["digest"] = row_digest(r)  # as a sweep would have written it
    journal.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn": ')
    again = sim.sweep(
        TILED, {"rows": [16, 32, 64], **SMALL}, scheduler=client, output=out, progress=True
    )
    bar = capsys.readouterr().err
    assert bar.startswith("\rsweep 2/3 [####################..........]")  # 2 from the journal
    assert "\rsweep 3/3 [##############################]" in bar and bar.endswith("\n")
    assert again["rows"].tolist() == [16, 32, 64]
    assert again["total_cycles"][0] == -1 and again["total_cycles"][1] == first["total_cycles"][1]
    assert again["total_cycles"][2] > 0 and again["config"][2] not in set(first["config"])
    pd.testing.assert_frame_equal(pd.read_parquet(out), again, check_dtype=False)
    third = sim.sweep(TILED, {"rows": [16, 32, 64], **SMALL}, scheduler=client, output=out)
    pd.testing.assert_frame_equal(third, again)


def test_cli_sweep_writes_parquet(client, tmp_path, capsys):
    out = tmp_path / "sweep.parquet"
    code = ptosim(
        [
            "sweep",
            str(TILED),
            "--param",
            "rows=16,32",
            "--param",
            "height=64",
            "--param",
            "width=64",
            "--sync",
            "manual,auto",
            "--scheduler",
            client.scheduler.address,
            "-o",
            str(out),
        ]
    )
    text, err = capsys.readouterr()
    assert code == 0, err
    df = pd.read_parquet(out)
    assert list(zip(df["rows"], df["sync"], strict=True)) == [
        (16, "manual"),
        (16, "auto"),
        (32, "manual"),
        (32, "auto"),
    ]
    assert "4 configurations, 0 failed" in text


@pytest.mark.parametrize(
    "argv, what",
    [
        (
            ["--param", "depth=1,2"],
            "build() has no parameter 'depth' (parameters: rows, cols, buffers",
        ),
        (["--param", "rows=16,x"], "--arg rows=x: expected int"),
        (["--param", "rows=16", "--sync", "manual,magic"], "sync mode 'magic'"),
        (["--param", "rows"], "expected NAME=VALUE"),
        (
            ["--param", "rows=16", "-o", "/proc/none/r.parquet"],
            "/proc/none/r.parquet: cannot write",
        ),
        # one configuration listed twice, however it is spelt
        (["--param", "rows=0x10,16"], "parameter rows: 0x10 and 16 are the same value (16)"),
        (["--param", "rows=16", "--target", "a2a3", "a2a3"], "target: a2a3 is listed twice"),
        (["--param", "rows=16", "--sync", "auto,auto"], "sync mode: auto is listed twice"),
        (["--param", "rows=16", "--rows", "-5"], "--rows: expected an integer >= 0, found -5"),
        (["--param", "rows=16", "--workers", "0"], "--workers: expected an integer >= 1"),
    ],
)
def test_cli_sweep_mistakes_are_user_errors_before_any_run(argv, what, tmp_path, capsys):
    code = ptosim(["sweep", str(TILED), "-o", str(tmp_path / "r.parquet"), *argv])
    _, err = capsys.readouterr()
    assert code == 2 and what in err and err.count("\n") == 1
    assert not (tmp_path / "r.parquet").exists()


def test_values_listed_twice_as_the_kernel_reads_them_are_refused(tmp_path):
    pto = str(ROOT / "examples" / "tfmods.pto")
    with pytest.raises(UserError, match=r"parameter divisor: 2 and 2.0 are the same value"):
        sim.sweep(pto, {"divisor": ["2", "2.0"]})
    with pytest.raises(UserError, match=r"parameter rows: 16 is listed twice"):
        sim.sweep(TILED, {"rows": [16, 32, 16]})
    # signed zeros are two scalar values (x / 0.0 and x / -0.0 differ): both are kept
    values = typed_params(pto, {"divisor": ["0.0", "-0.0"]})
    assert [str(v) for v in values["divisor"]] == ["0.0", "-0.0"]
    listed_once(values, {"divisor": ["0.0", "-0.0"]}, [None], [None])  # no error


def test_ctrl_c_keeps_finished_rows_and_the_next_run_resumes(client, tmp_path):
    out = tmp_path / "r.parquet"
    # 256 x 256 (tens of ms a configuration, not a few): the 34 configurations left when
    # the second row is journaled must not all finish before the interrupt lands
    argv = [
        sys.executable,
        "-m",
        "sim",
        "sweep",
        str(TILED),
        "--param",
        "rows=8,16,32,64",
        "--param",
        "cols=16,32,64",
        "--param",
        "buffers=1,2,3",
        "--param",
        "height=256",
        "--param",
        "width=256",
        "--scheduler",
        client.scheduler.address,
        "-o",
        str(out),
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = Path(f"{out}.journal")
    deadline = time.monotonic() + 60
    while not (journal.is_file() and journal.read_text().count("\n") >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    kept = pd.read_parquet(out)
    assert 2 <= len(kept) < 36 and kept["error"].isna().all()
    resumed = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    df = pd.read_parquet(out)
    assert len(df) == 36 and len(journal.read_text().splitlines()) == 36
    pd.testing.assert_frame_equal(df.merge(kept[["config"]]), kept, check_dtype=False)


def test_heatmap_cells_are_the_rows_and_failures_are_grey():
    df = pd.DataFrame(
        {
            "rows": [8, 8, 16, 16],
            "cols": [64] * 4,
            "buffers": [1, 2, 1, 2],
            "total_cycles": pd.array([1200, 800, 900, None], dtype="Int64"),
            "error": [None, None, None, "tile %r1 does not fit in UB"],
        }
    )
    ax = sim.sweep_heatmap(df, ["rows", "cols"], "buffers").axes[0]
    cells = ax.images[0].get_array()
    assert cells.mask.tolist() == [[False, False], [False, True]]
    assert cells.data[:1].tolist() == [[1200, 800]] and cells.data[1, 0] == 900
    assert [t.get_text() for t in ax.texts] == ["1,200", "800", "900", "failed"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["8x64", "16x64"]
    assert ax.get_ylabel() == "rows x cols" and ax.get_xlabel() == "buffers"


def test_heatmap_refuses_cells_that_hide_configurations():
    df = pd.DataFrame(
        {
            "rows": [8, 8],
            "buffers": [1, 1],
            "sync": ["manual", "auto"],
            "total_cycles": [10, 12],
            "error": [None, None],
        }
    )
    with pytest.raises(sim.UserError, match="several configurations per cell; .* sync"):
        sim.sweep_heatmap(df, "rows", "buffers")


def test_sweep_help_describes_the_options(capsys):
    with pytest.raises(SystemExit) as stop:
        ptosim(["sweep", "--help"])
    text = capsys.readouterr().out
    assert stop.value.code == 0
    for word in (
        "--param NAME=V1,V2,...",
        "--target",
        "--sync",
        "--scheduler",
        "--workers",
        "RESULTS.parquet",
        "journal",
    ):
        assert word in text
