"""Stopping a sweep: a Ctrl-C while the local cluster starts is not lost, an interrupted
sweep says when nothing was written, the cluster's closing chatter is not printed, and
the local cluster never has more workers than the machine has CPUs."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import pytest

import sim
from sim.studies import sweep as sweep_module

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parent.parent
TILED = ROOT / "examples" / "relu_sub_tiled.py"


def test_a_ctrl_c_while_the_workers_start_is_delivered_after(monkeypatch):
    # sent to this thread, which blocks it: a signal sent to the process could land in a
    # thread an earlier test left running (a Dask client's) and be handled at any later
    # point, outside this test
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with sweep_module._sigint_deferred():
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
            reached.append("the start went on")
    assert reached == ["the start went on"]


def test_an_interrupt_before_any_row_says_nothing_was_written(cli, tmp_path, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_module, "_run_all", interrupted)
    code, _, err = cli("sweep", TILED, "--param", "rows=16", "-o", "s.parquet")
    assert code == 130
    assert err.strip().splitlines() == [
        "ptosim: interrupted before any configuration finished; nothing was written to s.parquet"
    ]
    assert not (tmp_path / "s.parquet").exists()


def test_workers_are_capped_at_the_cpus_and_log_nothing(monkeypatch, capsys):
    made = []
    real = distributed.LocalCluster

    def recording(**kwargs):
        made.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", recording)
    monkeypatch.setattr(sweep_module.os, "cpu_count", lambda: 1)
    df = sim.sweep(TILED, {"rows": [16], "height": 64, "width": 64}, workers=64, processes=False)
    assert df["error"].isna().all()
    assert made[0]["n_workers"] == 1
    assert made[0]["silence_logs"] > logging.CRITICAL  # nothing a closing cluster says
    assert "ptosim: note: 64 workers asked for, 1 started" in capsys.readouterr().err


def test_distributed_logs_nothing_while_an_interrupted_sweep_closes(monkeypatch):
    levels = []

    def interrupted(configs, done, rows, path, seed, scheduler, workers, processes, *rest):
        with sweep_module._client(scheduler, workers, processes):
            raise KeyboardInterrupt

    real_close = distributed.Client.close

    def close(self, *args, **kwargs):
        levels.append(logging.getLogger("distributed").getEffectiveLevel())
        return real_close(self, *args, **kwargs)

    monkeypatch.setattr(sweep_module, "_run_all", interrupted)
    monkeypatch.setattr(distributed.Client, "close", close)
    before = logging.getLogger("distributed").level
    with pytest.raises(KeyboardInterrupt):
        sim.sweep(TILED, {"rows": [16]}, workers=1, processes=False)
    assert levels and levels[0] > logging.CRITICAL
    assert logging.getLogger("distributed").level == before  # restored once closed
