"""Design-space sweeps: one kernel over every combination of its parameters, targets and
synchronisation modes, run in parallel on Dask distributed.

A configuration is one point of the cartesian product of the parameter lists (the
``build()`` parameters of a ``.py`` kernel, the scalar arguments of a ``.pto`` one, bound
as ``--arg`` binds them), the blocks per launch when given, the targets and the sync
modes (``sim.studies.sweep_configs``). Each runs in a Dask worker as one side of ``ptosim
compare`` does — the kernel as written (``manual``) or placed and synchronised by the
simulator (``auto``); by default the mode ``ptosim run`` would pick (manual for a kernel
with explicit synchronisation, auto otherwise); timing only — and comes back as one row:
the parameters, target, sync mode, total cycles, busy cycles per pipe (a chip kernel's
per unit, summed over its cores), set/wait pairs, barriers, peak bytes per buffer,
races, the run's warnings, and the error of a configuration that failed (its metrics
then empty). A failure is a row, never a lost sweep.

Rows are appended, as they arrive, to a journal beside the output (``OUT.journal``, JSON
lines) under a stable key: a hash of the kernel file's bytes and of the modules of its
directory tree it imports, the parameters, the target (a model directory's files), the
mode, the seed and the simulator version. A sweep that stops — Ctrl-C, a lost machine —
resumes where it stopped: configurations already in the journal are not run again (delete
the journal to recompute them). A journal row is served only when it still is what it
claims: it names the configuration's parameters, target and sync mode, the helper modules
its run imported (``build()`` may import more than the file does) are unchanged, and its
digest matches its content; any other row is run again, with a warning. Rows come back in
configuration order whatever worker ran what, so the result is deterministic.

By default the sweep starts a ``LocalCluster`` on this machine (worker processes, one
thread each); ``scheduler="tcp://HOST:PORT"`` uses a running cluster instead (its workers
need pto-sim installed and the kernel file at the same path).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from sim.base.atomic import atomic_path
from sim.base.errors import UserError
from sim.isa.opcodes import PIPES
from sim.kernel.files import stream_specs
from sim.studies import journal as journal_file
from sim.studies.journal_rows import journal_row, row_problem
from sim.studies.sweep_configs import (
    SYNC_MODES,
    checked_modes,
    checked_targets,
    configurations,
    run_config,
)
from sim.studies.sweep_params import block_counts, listed_once, typed_params
from sim.studies.sweep_progress import Progress as _Progress

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


__all__ = ["sweep", "SYNC_MODES", "configurations", "run_config"]

METRICS = journal_file.METRICS


def sweep(
    kernel: str | Path,
    params: Mapping[str, Sequence[Any]] | None = None,
    *,
    targets: str | Sequence[str] | None = None,
    sync: str | Sequence[str] | None = None,
    scheduler: Any = None,  # None, a scheduler address or a distributed.Client
    workers: int = 2,
    processes: bool = True,
    output: str | Path | None = None,
    progress: bool | None = None,
    seed: int = 0,
    ranks: int | None = None,
    comm_context: str | None = None,
    streams: Sequence[str] = (),
    block_dim: int | Sequence[int] | None = None,
    sample_waves: int | None = None,
) -> pd.DataFrame:
    """Run ``kernel`` (a ``.py`` or ``.pto`` path) for every combination of ``params``
    (name -> list of values; a text value is parsed as ``--arg`` parses it), ``targets``
    (default: the kernel's own) and ``sync`` modes (``"manual"``, ``"auto"`` or a list of
    them; default: ``ptosim run``'s rule, manual for a kernel with explicit synchronisation,
    auto otherwise); one row per configuration, in order.

    ``scheduler``: None starts a LocalCluster of ``workers`` processes (threads with
    ``processes=False``); an address (``"tcp://host:8786"``) or a ``distributed.Client``
    uses that cluster. ``output``: a ``.parquet`` file written at the end, with its
    journal ``OUT.journal`` written row by row (see the module doc). ``progress``: a bar
    on stderr (default: when stderr is a terminal). Ctrl-C stops the sweep, writes the
    rows finished so far and raises ``KeyboardInterrupt``. ``ranks``: every configuration
    runs on that many NPUs (``comm_context`` as ``sim.simulate``'s); its total_cycles is the
    latest rank's end, its other figures rank 0's. ``streams``: kernels launched beside it on
    every rank (``FILE`` or ``FILE:FUNC``, as ``ptosim run --stream``; a ``.py`` function
    gets the parameters it takes), in the configuration's sync mode.

    ``block_dim``: blocks per launch, one count or a list of them swept as one more axis
    (after the parameters; default: a ``.py`` kernel's own, else 1); blocks past the cores run
    in waves (``sim.simulate``'s ``block_dim``), and each row has its ``block_dim``.
    ``sample_waves``: every configuration is run as ``sim.simulate(...,
    sample_waves=K)`` runs it (the first K waves and the last simulated, the full waves
    between estimated): its ``total_cycles`` is then the estimated device time, its other
    figures those of the blocks that ran, and its ``blocks_simulated`` says how many did
    (the launch's ``block_dim`` when no wave could be left out).
    """
    path = str(Path(kernel).resolve()) if isinstance(kernel, (str, Path)) else None
    if path is None:
        raise UserError(f"sweep: expected the path of a .py or .pto kernel, found {kernel!r}")
    from sim.kernel.files import forget_local_modules

    forget_local_modules(path)  # its helpers as on disk now: the key hashes those loaded
    values = typed_params(str(kernel), params or {})
    if (comm_context is not None or streams) and ranks is None:
        raise UserError("sweep: comm_context, streams need ranks=N (the ranks they address)")
    multi = None if ranks is None else (ranks, comm_context, *stream_specs(streams))
    modes = checked_modes(sync)
    targets = checked_targets(targets)
    blocks = block_counts(block_dim)
    from sim.engine.run import check_sample

    check_sample(sample_waves, functional=False, ranks=ranks)
    listed_once(values, params or {}, targets, modes, blocks)
    # the launch of every configuration: part of its key when given
    launch: dict[str, Any] = {"block_dims": blocks, "sample_waves": sample_waves}
    if scheduler is not None and not hasattr(scheduler, "submit"):  # an address, not a Client
        scheduler = _scheduler_address(scheduler)
    total = math.prod(len(v) for v in (*values.values(), blocks, targets, modes))
    if total > WARN_CONFIGURATIONS:
        print(
            f"ptosim: warning: the sweep has {total:,} configurations (more than "
            f"{WARN_CONFIGURATIONS:,}); they are generated and run as the workers take "
            f"them, but their rows all end up in memory and in the output",
            file=sys.stderr,
        )
    journal = journal_file.writable(output)
    done = journal_file.read(journal)
    rows: list = []
    # the bar starts at the configurations the journal has (counted up front when that is
    # cheap; a sweep of millions counts them as it meets them)
    counted = bool(done) and total <= WARN_CONFIGURATIONS
    already = (
        sum(
            c.key in done and row_problem(done[c.key], c, path) is None
            for c in configurations(path, values, targets, modes, seed, multi, **launch)
        )
        if counted
        else 0
    )
    bar = _Progress(total, already, sys.stderr.isatty() if progress is None else progress)
    finished = False
    try:
        _run_all(
            configurations(path, values, targets, modes, seed, multi, **launch),
            done,
            rows,
            path,
            seed,
            scheduler,
            workers,
            processes,
            journal,
            bar,
            counted,
            multi,
            sample_waves,
        )
        finished = True
    except KeyboardInterrupt:
        # the rows finished so far are kept (and the journal has them): write them
        finished = bool(rows)
        raise Interrupted(len(rows)) from None
    finally:
        bar.close()
        df = _frame(rows, list(values))
        if output is not None and finished:  # a failed sweep leaves an older output as it was
            with atomic_path(output) as tmp:
                df.to_parquet(tmp, index=False)
    return df


class Interrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C; ``rows``: the configurations finished (and written)."""

    def __init__(self, rows: int):
        super().__init__(f"{rows} configuration{'s' * (rows != 1)} finished")
        self.rows = rows


WARN_CONFIGURATIONS = 10**5
IN_FLIGHT_PER_WORKER = 16  # futures submitted ahead of the results, per worker


def _run_all(
    configs,
    done,
    rows,
    path,
    seed,
    scheduler,
    workers,
    processes,
    journal,
    bar,
    counted: bool = False,
    multi=None,
    sample_waves: int | None = None,
):
    """Run the configurations not in the journal (``done``), at most a bounded number in
    flight (so millions never sit in the scheduler, and Ctrl-C cancels only a few),
    appending each configuration's row to ``rows`` in configuration order."""
    from distributed import as_completed

    order = {}  # index -> finished row, until every earlier one is in ``rows``
    next_out = 0
    with contextlib.ExitStack() as stack:
        client = None  # started at the first configuration not in the journal
        futures = {}
        pending, limit = None, math.inf
        try:
            for i, c in enumerate(configs):
                row = done.get(c.key)
                why = None if row is None else row_problem(row, c, path)
                if why is not None:
                    print(
                        f"ptosim: warning: {journal}: the row of configuration {c.key} "
                        f"{why}; it is run again",
                        file=sys.stderr,
                    )
                    row = None
                if row is not None:
                    order[i] = (c, row)
                    if not counted:
                        bar.skip()
                else:
                    if client is None or pending is None:  # both made at once
                        client = stack.enter_context(_client(scheduler, workers, processes))
                        limit = IN_FLIGHT_PER_WORKER * max(
                            1, len(client.scheduler_info().get("workers", {}))
                        )
                        pending = as_completed(loop=client.loop)
                    fut = client.submit(
                        run_config,
                        path,
                        c.params,
                        c.target,
                        c.sync,
                        seed,
                        multi,
                        block_dim=c.block_dim,
                        sample_waves=sample_waves,
                        key=f"ptosim-sweep-{i}-{c.key}",
                        pure=False,
                        retries=1,
                    )
                    futures[fut] = (i, c)
                    pending.add(fut)
                while len(futures) >= limit:
                    assert pending is not None  # the limit is finite once the client runs
                    _collect(next(pending), futures, order, journal, bar)
                next_out = _flush(order, rows, next_out)
            for fut in pending or ():
                _collect(fut, futures, order, journal, bar)
            _flush(order, rows, next_out)
        finally:
            if futures and client is not None:
                client.cancel(list(futures))
            _flush(order, rows, next_out, everything=True)


def _collect(fut, futures, order, journal, bar) -> None:
    i, c = futures.pop(fut)
    try:
        row = journal_row(fut.result(), c)
    except Exception as e:  # the worker itself was lost: not journalled, redone on resume
        row = {
            "target": c.target,
            "config": c.key,
            "error": f"worker lost: {type(e).__name__}: {e}",
        }
    else:
        journal_file.append(journal, row)  # a full disk stops the sweep (one line)
    order[i] = (c, row)
    bar.update(row["error"] is not None)


def _flush(order, rows, next_out: int, everything: bool = False) -> int:
    """Move finished rows to ``rows`` in configuration order (all of them, in order, when
    the sweep stops early)."""
    while next_out in order:
        rows.append(order.pop(next_out))
        next_out += 1
    if everything:
        rows.extend(order.pop(i) for i in sorted(order))
    return next_out


@contextlib.contextmanager
def _client(scheduler, workers: int, processes: bool):
    import logging

    from distributed import Client, LocalCluster

    if isinstance(scheduler, Client):
        yield scheduler
        return
    if scheduler is not None:
        address = scheduler if isinstance(scheduler, str) else _scheduler_address(scheduler)
        import dask

        try:
            with dask.config.set({"distributed.comm.timeouts.connect": f"{CONNECT_S}s"}):
                client = Client(address, timeout=f"{CONNECT_S}s")
        except (OSError, TimeoutError) as e:
            raise UserError(
                f"--scheduler {scheduler}: cannot connect ({' '.join(str(e).split())})"
            ) from None
        except Exception as e:  # a server that is not Dask's: MemoryError, bad frames ...
            raise UserError(
                f"--scheduler {scheduler}: the port answers, but not as a Dask "
                f"scheduler ({type(e).__name__})"
            ) from None
        with client:
            yield client
        return
    if workers < 1:
        raise UserError(f"sweep: workers must be at least 1, found {workers}")
    cpus = os.cpu_count() or 1
    if workers > cpus:  # more one-thread workers than CPUs only share them, in more memory
        print(
            f"ptosim: note: {workers} workers asked for, {cpus} started (the CPUs of this machine)",
            file=sys.stderr,
        )
        workers = cpus
    import dask

    # The workers' statistical profiler samples the deep SimPy stacks of a run every 10 ms
    # (a few per cent of the CPU, measured with bench/bench_sweep.py); nobody reads it here.
    # Its HTTP routes go to a free port (":0"), never clashing with another cluster's 8787.
    # SIGINT is blocked while the worker processes start, which they inherit: Ctrl-C
    # stops this process only, which then stops them in order. The workers log nothing
    # (silence_logs): a failed configuration comes back as a row, a lost worker too, and
    # what they would print is the noise of a cluster closing under them.
    with dask.config.set({"distributed.worker.profile.enabled": False}), _sigint_deferred():
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL + 1,
        )
    with _quiet_when_stopped() as quiet, cluster, Client(cluster) as client:
        try:
            yield client
        except BaseException:
            quiet()
            raise


CONNECT_S = 5  # seconds to reach a scheduler and hear its handshake
_ADDRESS = re.compile(r"(?:(tcp|tls)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def _scheduler_address(text) -> str:
    """``tcp://HOST:PORT`` (or ``tls://``, or ``HOST:PORT``), checked: a TCP scheduler
    must accept a connection and send its handshake within ``CONNECT_S`` seconds (a Dask
    server speaks first; a web server or a silent port does not)."""
    m = _ADDRESS.fullmatch(str(text).strip())
    if m is None or not 0 < int(m.group(3)) < 65536:
        raise UserError(
            f"--scheduler {text}: expected a Dask scheduler address "
            f"tcp://HOST:PORT (or tls://HOST:PORT)"
        )
    scheme, host, port = m.group(1) or "tcp", m.group(2).strip("[]"), int(m.group(3))
    if scheme == "tcp":
        _probe(text, host, port)
    return f"{scheme}://{m.group(2)}:{port}"


def _probe(text, host: str, port: int) -> None:
    import socket
    import struct

    try:
        with socket.create_connection((host, port), timeout=CONNECT_S) as s:
            head = b""
            while len(head) < 8:
                chunk = s.recv(8 - len(head))
                if not chunk:
                    break
                head += chunk
    except TimeoutError:
        raise UserError(
            f"--scheduler {text}: the port accepts connections but sends no Dask "
            f"handshake within {CONNECT_S} s: not a Dask scheduler"
        ) from None
    except OSError as e:
        raise UserError(f"--scheduler {text}: cannot connect ({e.strerror or e})") from None
    # a Dask message starts with its frame count, a little-endian uint64 (a handful)
    if len(head) < 8 or not 0 < struct.unpack("<Q", head)[0] < 1024:
        raise UserError(
            f"--scheduler {text}: the port answers, but not as a Dask scheduler "
            f"(its first bytes: {head[:8]!r})"
        )


@contextlib.contextmanager
def _sigint_deferred():
    """SIGINT blocked while worker processes start: they inherit the blocked signal, so a
    terminal's Ctrl-C (sent to the whole process group) never reaches them and the sweep
    stops them in order; this process gets a Ctrl-C pressed meanwhile when the block is
    lifted (an ignored one would be lost, and the sweep would run on)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed = []
    # a thread that does not block it may still take the signal: then it is noted here
    previous = signal.signal(signal.SIGINT, lambda *_: pressed.append(True))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending one lands
    if pressed:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _quiet_when_stopped():
    """Yield a function that silences distributed's loggers in this process for the rest
    of the block: called when the sweep stops early, so that the connections the closing
    cluster drops (CommClosedError, StreamClosedError) print no traceback over the
    one-line message."""
    import logging

    loggers = [logging.getLogger(n) for n in ("distributed", "tornado", "asyncio")]
    levels = [lg.level for lg in loggers]

    def quiet() -> None:
        for lg in loggers:
            lg.setLevel(logging.CRITICAL + 1)

    try:
        yield quiet
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


_ON_CORE = re.compile(r"busy_cycles\[core \d+ (.+)\]")


def _busy_by_unit(row: dict) -> dict:
    """``row`` with a chip kernel's busy cycles per core (``busy_cycles[core 3 AIV0
    PIPE_V]``, as the journal keeps them) summed over the cores, per unit and pipe
    (``busy_cycles[AIV0 PIPE_V]``): rows of different block counts get the same columns."""
    out: dict = {}
    for k, v in row.items():
        m = _ON_CORE.fullmatch(k)
        if m is None:
            out[k] = v
        else:
            name = f"busy_cycles[{m.group(1)}]"
            out[name] = out.get(name, 0) + v
    return out


def _pipe_order(column: str) -> tuple:
    """A busy-cycles column's place: one unit's pipes (a chip kernel's after the unit's
    name: ``AIC``, ``AIV0``, ``AIV1``) in the ISA's pipe order."""
    unit, _, pipe = column[len("busy_cycles[") : -1].rpartition(" ")
    return (unit, PIPES.index(pipe) if pipe in PIPES else len(PIPES), pipe)


def _frame(rows, names) -> pd.DataFrame:
    """One row per finished configuration (``rows``: (Config, row) pairs), in order."""
    records = []
    for c, r in rows:
        records.append(
            {
                **c.params,
                **({} if c.block_dim is None else {"block_dim": c.block_dim}),
                "target": r.get("target") or c.target,
                "sync": r.get("sync") or c.sync,
                **_busy_by_unit(
                    {
                        k: v
                        for k, v in r.items()
                        if k
                        not in ("target", "sync", "config", "params", "asked", "sources", "digest")
                    }
                ),
                "config": c.key,
            }
        )
    df = pd.DataFrame.from_records(records)
    found = set(df.columns)
    pipes = sorted((c for c in found if c.startswith("busy_cycles[")), key=_pipe_order)
    peaks = sorted(c for c in found if c.startswith("peak_bytes["))
    launch = [c for c in ("block_dim",) if c in found]
    sampled = [c for c in ("blocks_simulated",) if c in found]
    order = [
        *names,
        *launch,
        "target",
        "sync",
        "total_cycles",
        *sampled,
        *pipes,
        "syncs",
        "barriers",
        "full_barriers",
        *peaks,
        "races",
        "warnings",
        "error",
        "config",
    ]
    df = df.reindex(columns=order)
    text = ("target", "sync", "warnings", "error", "config")
    ints = [c for c in order[len(names) :] if c not in text]
    df[ints] = df[ints].astype("Int64")
    ok = df["error"].isna()
    df.loc[ok, pipes + peaks] = df.loc[ok, pipes + peaks].fillna(0)
    return df
