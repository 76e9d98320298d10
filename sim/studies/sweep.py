"""Design-space sweeps: one kernel over every combination of its parameters, targets and
synchronisation modes, run in parallel on Dask distributed.

A configuration is one point of the cartesian product of the parameter lists (the
``build()`` parameters of a ``.py`` kernel, the scalar arguments of a ``.pto`` one, bound
as ``--arg`` binds them), the targets and the sync modes. Each runs in a Dask worker as
one side of ``ptosim compare`` does — the kernel as written (``manual``) or placed and
synchronised by the simulator (``auto``); by default the mode ``ptosim run`` would pick
(manual for a kernel with explicit synchronisation, auto otherwise); timing only — and
comes back as one row: the
parameters, target, sync mode, total cycles, busy cycles per pipe, set/wait pairs,
barriers, peak bytes per buffer, races, and the error of a configuration that failed
(its metrics then empty). A failure is a row, never a lost sweep.

Rows are appended, as they arrive, to a journal beside the output (``OUT.journal``, JSON
lines) under a stable key: a hash of the kernel file's bytes, the parameters, the target
(a model directory's files), the mode, the seed and the simulator version. A sweep that
stops — Ctrl-C, a lost machine — resumes where it stopped: configurations already in the
journal are not run again (delete the journal to recompute them). Rows come back in
configuration order whatever worker ran what, so the result is deterministic.

By default the sweep starts a ``LocalCluster`` on this machine (worker processes, one
thread each); ``scheduler="tcp://HOST:PORT"`` uses a running cluster instead (its workers
need pto-sim installed and the kernel file at the same path).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import pandas as pd

from sim.base.version import __version__
from sim.base.errors import UserError
from sim.isa.opcodes import PIPES

__all__ = ["sweep", "SYNC_MODES"]

SYNC_MODES = ("manual", "auto")
METRICS = ("total_cycles", "syncs", "barriers", "full_barriers", "races")


@attrs.frozen
class Config:
    """One configuration of a sweep and its stable key."""

    params: dict = attrs.field(converter=dict)
    target: "str | None"
    sync: str
    key: str


def sweep(kernel, params=None, *, targets=None, sync=None, scheduler=None,
          workers: int = 2, processes: bool = True, output=None, progress=None,
          seed: int = 0) -> pd.DataFrame:
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
    rows finished so far and raises ``KeyboardInterrupt``.
    """
    path = str(Path(kernel).resolve()) if isinstance(kernel, (str, Path)) else None
    if path is None:
        raise UserError(f"sweep: expected the path of a .py or .pto kernel, found {kernel!r}")
    values = _typed_params(str(kernel), params or {})
    modes = _modes(sync)
    configs = configurations(path, values, targets, modes, seed)
    journal = _writable_journal(output)
    done = _read_journal(journal)
    rows = [done.get(c.key) for c in configs]
    todo = [i for i, r in enumerate(rows) if r is None]
    bar = _Progress(len(configs), len(configs) - len(todo),
                    sys.stderr.isatty() if progress is None else progress)
    try:
        if todo:
            _run_all(configs, todo, rows, path, seed, scheduler, workers, processes, journal, bar)
    finally:
        bar.close()
        df = _frame(configs, rows, list(values))
        if output is not None:
            df.to_parquet(output, index=False)
    return df


def configurations(path: str, values: dict, targets, modes, seed: int = 0) -> list[Config]:
    """The cartesian product of parameter values, targets and modes, in that nesting."""
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    names = list(values)
    targets = [targets] if isinstance(targets, (str, Path)) else list(targets or [None])
    targets = [None if t is None else str(t) for t in targets]
    out = []
    for combo in itertools.product(*values.values(), targets, modes):
        params, target, mode = dict(zip(names, combo[:len(names)])), combo[-2], combo[-1]
        ident = [__version__, digest, sorted(params.items()), _target_key(target), mode, seed]
        key = hashlib.sha256(json.dumps(ident, default=repr).encode()).hexdigest()[:20]
        out.append(Config(params, target, mode, key))
    return out


def _target_key(target) -> str:
    """A target name as is; a model directory by the bytes of its files."""
    if target is None:
        return ""
    p = Path(target)
    if not p.is_dir():
        return str(target)
    h = hashlib.sha256()
    for f in sorted(x for x in p.rglob("*") if x.is_file()):
        h.update(str(f.relative_to(p)).encode() + b"\0" + f.read_bytes())
    return "dir:" + h.hexdigest()


def _modes(sync) -> list:
    """The sync modes to sweep; ``[None]`` is the run's default rule, resolved per kernel."""
    if sync is None:
        return [None]
    modes = [sync] if isinstance(sync, str) else list(sync)
    bad = [m for m in modes if m not in SYNC_MODES]
    if bad or not modes:
        raise UserError(f"sweep: sync mode {bad[0] if bad else 'list'!r}: expected one or more "
                        f"of {', '.join(SYNC_MODES)}")
    return modes


def _typed_params(kernel: str, params: dict) -> dict:
    """Name -> list of values, checked against the kernel before any worker starts: a
    ``.py`` kernel's ``build()`` parameters, a ``.pto`` kernel's scalar arguments."""
    from sim.kernel.files import build_params, kernel_source, scalar_value
    values = {str(n): [x.item() if isinstance(x, np.generic) else x for x in
                       (v if isinstance(v, (list, tuple, range, np.ndarray)) else [v])]
              for n, v in params.items()}
    empty = [n for n, v in values.items() if not v]
    if empty:
        raise UserError(f"sweep: parameter {empty[0]} has no values")
    source = kernel_source(kernel)
    if callable(source):
        build_params(source, kernel, [(n, v[0]) for n, v in values.items()])
        return {n: [build_params(source, kernel, [(n, x)])[n] for x in v]
                for n, v in values.items()}
    from sim.isa.program import Scalar
    scalars = {a.name: a.type for a in source.main.args if isinstance(a, Scalar)}
    for n in values:
        if n not in scalars:
            known = ", ".join(f"%{s}: {t}" for s, t in scalars.items()) or "none"
            raise UserError(f"--param {n}: the kernel has no scalar argument %{n} "
                            f"(scalar arguments: {known})")
    return {n: [scalar_value(n, x, scalars[n]) if isinstance(x, str) else x for x in v]
            for n, v in values.items()}


def run_config(path: str, params: dict, target, mode: str, seed: int = 0) -> dict:
    """One configuration's row (what a worker runs); any failure becomes its ``error``."""
    from sim.kernel.files import load_kernel
    from sim.frontend import resolve_target
    from sim.engine.mode import default_mode
    from sim.studies.compare import run_mode
    row = {"target": target, "sync": mode, "error": None}
    try:
        kernel = load_kernel(path, list(params.items()))
        program = kernel.program() if hasattr(kernel, "program") else kernel
        row["target"] = resolve_target(program, target, where=path)
        mode = row["sync"] = default_mode(program) if mode is None else mode
        inputs = params if path.endswith(".pto") else None
        run = run_mode(kernel, row["target"], mode, inputs=inputs, seed=seed, functional=False)
    except Exception as e:          # a configuration that fails is a row, not a lost sweep
        text = " ".join(str(e).split())
        row["error"] = text if isinstance(e, UserError) else f"{type(e).__name__}: {text}"
        return row
    m = run.metrics()
    if m["deadlock"]:
        row["error"] = " ".join(m["deadlock"].split())
        return row
    row.update({k: m[k] for k in METRICS})
    row.update({f"busy_cycles[{p}]": v for p, v in m["pipes"].items()})
    row.update({f"peak_bytes[{b}]": v for b, v in m["peak_bytes"].items()})
    return row


def _run_all(configs, todo, rows, path, seed, scheduler, workers, processes, journal, bar):
    from distributed import as_completed
    with _client(scheduler, workers, processes) as client:
        futures = {}
        for i in todo:
            c = configs[i]
            fut = client.submit(run_config, path, c.params, c.target, c.sync, seed,
                                key=f"ptosim-sweep-{i}-{c.key}", pure=False, retries=1)
            futures[fut] = i
        try:
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    row = {**fut.result(), "config": configs[i].key}
                    _append_journal(journal, row)
                except Exception as e:     # the worker itself was lost: not journalled, redone on resume
                    row = {"target": configs[i].target, "config": configs[i].key,
                           "error": f"worker lost: {type(e).__name__}: {e}"}
                rows[i] = row
                bar.update(row["error"] is not None)
        finally:
            client.cancel(list(futures))


@contextlib.contextmanager
def _client(scheduler, workers: int, processes: bool):
    import logging

    from distributed import Client, LocalCluster
    if isinstance(scheduler, Client):
        yield scheduler
        return
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise UserError(f"scheduler {scheduler}: cannot connect ({e})") from None
        with client:
            yield client
        return
    if workers < 1:
        raise UserError(f"sweep: workers must be at least 1, found {workers}")
    import dask
    # The workers' statistical profiler samples the deep SimPy stacks of a run every 10 ms
    # (a few per cent of the CPU, measured with bench/bench_sweep.py); nobody reads it here.
    # Its HTTP routes go to a free port (":0"), never clashing with another cluster's 8787.
    # SIGINT is ignored while the worker processes start, which they inherit: Ctrl-C
    # stops this process only, which then stops them in order.
    with dask.config.set({"distributed.worker.profile.enabled": False}), _sigint_ignored():
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                               dashboard_address=":0", silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client:
        yield client


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored while worker processes start, so a terminal's Ctrl-C (sent to the
    whole process group) reaches only the sweep, which stops them in order."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _writable_journal(output) -> "Path | None":
    """``OUTPUT.journal``, checked writable (with the output's folder) before anything runs."""
    if output is None:
        return None
    journal = Path(f"{output}.journal")
    try:
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.open("a").close()
    except OSError as e:
        raise UserError(f"{output}: cannot write the sweep's output there ({e.strerror})") from None
    return journal


def _read_journal(journal) -> dict:
    """Config key -> row of the configurations already run. A torn last line (the sweep
    was killed mid-write) is skipped and ended, so appends start on a line of their own."""
    if journal is None or not journal.is_file():
        return {}
    text = journal.read_text()
    if text and not text.endswith("\n"):
        with journal.open("a") as f:
            f.write("\n")
    done = {}
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "config" in row:
            done[row["config"]] = row
    return done


def _append_journal(journal, row: dict) -> None:
    if journal is None:
        return
    with journal.open("a") as f:
        f.write(json.dumps(row) + "\n")


def _frame(configs, rows, names) -> pd.DataFrame:
    """One row per configuration in order (unfinished ones dropped)."""
    records = []
    for c, r in zip(configs, rows):
        if r is not None:
            records.append({**c.params, "target": r.get("target") or c.target,
                            "sync": r.get("sync") or c.sync,
                            **{k: v for k, v in r.items() if k not in ("target", "sync", "config")},
                            "config": c.key})
    df = pd.DataFrame.from_records(records)
    found = set(df.columns)
    pipes = [f"busy_cycles[{p}]" for p in PIPES if f"busy_cycles[{p}]" in found]
    peaks = sorted(c for c in found if c.startswith("peak_bytes["))
    order = [*names, "target", "sync", "total_cycles", *pipes, "syncs", "barriers",
             "full_barriers", *peaks, "races", "error", "config"]
    df = df.reindex(columns=order)
    ints = [c for c in order[len(names) + 2:] if c not in ("error", "config")]
    df[ints] = df[ints].astype("Int64")
    ok = df["error"].isna()
    df.loc[ok, pipes + peaks] = df.loc[ok, pipes + peaks].fillna(0)
    return df


class _Progress:
    """``sweep  37/120 [#######.............]  2 failed  0:12`` on stderr, redrawn in place."""

    def __init__(self, total: int, done: int, enabled: bool):
        self.total, self.done, self.failed, self.enabled = total, done, 0, enabled
        self.t0 = self.shown = time.monotonic()
        self._draw()

    def update(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if now - self.shown >= 0.1 or self.done == self.total:
            self.shown = now
            self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        width = 30
        filled = width * self.done // max(self.total, 1)
        secs = int(time.monotonic() - self.t0)
        failed = f"  {self.failed} failed" if self.failed else ""
        sys.stderr.write(f"\rsweep {self.done:>{len(str(self.total))}}/{self.total} "
                         f"[{'#' * filled}{'.' * (width - filled)}]{failed}  "
                         f"{secs // 60}:{secs % 60:02d}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw()
            sys.stderr.write("\n")
