"""A sweep's configurations: the points of its cartesian product, each with the stable key
its journal row is found under, and the run of one configuration (what a worker does).

A key hashes what makes a configuration's row what it is: the simulator version, the kernel
(``sim.studies.journal_rows.kernel_digest``), the parameters, the target (a model directory
by the bytes of its files), the sync mode and the seed; and, only when given, the ranks of
a run with ranks and the launch (blocks per launch, sampled waves), so that the journals of
sweeps without them keep their keys.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import attrs

from sim.base.errors import UserError
from sim.base.version import __version__
from sim.kernel.files import split_stream
from sim.studies.journal import METRICS
from sim.studies.journal_rows import kernel_digest, sources

__all__ = ["Config", "SYNC_MODES", "configurations", "run_config"]

SYNC_MODES = ("manual", "auto")


@attrs.frozen
class Config:
    """One configuration of a sweep and its stable key."""

    params: dict = attrs.field(converter=dict)
    target: str | None
    sync: str
    key: str
    block_dim: int | None = None  # blocks per launch (None: the kernel's own, else 1)


def configurations(
    path: str,
    values: dict,
    targets,
    modes,
    seed: int = 0,
    multi=None,
    *,
    block_dims=(None,),
    sample_waves: int | None = None,
):
    """The cartesian product of parameter values, blocks per launch (``block_dims``),
    targets and modes, in that nesting: a generator, so that a sweep of millions starts at
    once and never holds them all. ``multi``: (ranks, comm_context, stream specs...) of a
    sweep with ranks, part of each key (a stream's file by its digest too); a block count
    given and ``sample_waves`` are part of it too."""
    digest = kernel_digest(path)
    if multi is not None and len(multi) > 2:  # streams: their files' contents too
        multi = (*multi, *(kernel_digest(split_stream(s)[0]) for s in multi[2:]))
    names = list(values)
    targets = checked_targets(targets)
    keys = {t: _target_key(t) for t in targets}
    for combo in itertools.product(*values.values(), block_dims, targets, modes):
        params, blocks, target, mode = (
            dict(zip(names, combo[: len(names)], strict=True)),
            *combo[-3:],
        )
        ident = [__version__, digest, sorted(params.items()), keys[target], mode, seed]
        # each only when given: the sweeps without them keep the keys of their journals
        if multi is not None:
            ident.append(list(multi))
        if blocks is not None:
            ident.append(["block_dim", blocks])
        if sample_waves is not None:
            ident.append(["sample_waves", sample_waves])
        key = hashlib.sha256(json.dumps(ident, default=repr).encode()).hexdigest()[:20]
        yield Config(params, target, mode, key, blocks)


def checked_targets(targets) -> list:
    """The targets to sweep (``[None]``: each kernel's own), each checked now: a name no
    model has is refused before any configuration runs, not in every row."""
    targets = [targets] if isinstance(targets, (str, Path)) else list(targets or [None])
    out = []
    for t in targets:
        if t is not None:
            from sim.target import load_target

            load_target(str(t))
        out.append(None if t is None else str(t))
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


def checked_modes(sync) -> list:
    """The sync modes to sweep; ``[None]`` is the run's default rule, resolved per kernel."""
    if sync is None:
        return [None]
    modes = [sync] if isinstance(sync, str) else list(sync)
    bad = [m for m in modes if m not in SYNC_MODES]
    if bad or not modes:
        raise UserError(
            f"sweep: sync mode {bad[0] if bad else 'list'!r}: expected one or more "
            f"of {', '.join(SYNC_MODES)}"
        )
    return modes


def run_config(
    path: str,
    params: dict,
    target,
    mode: str,
    seed: int = 0,
    multi=None,
    *,
    block_dim: int | None = None,
    sample_waves: int | None = None,
) -> dict:
    """One configuration's row (what a worker runs); any failure becomes its ``error``.
    ``multi``: (ranks, comm_context, stream specs...) of a sweep with ranks; ``block_dim``:
    blocks per launch (None: the kernel's own); ``sample_waves``: ``sim.simulate``'s (the
    row then says how many blocks ran: ``blocks_simulated``)."""
    from sim.engine.mode import default_mode
    from sim.frontend import resolve_target
    from sim.kernel.files import forget_local_modules, load_kernel, load_stream
    from sim.studies.compare import run_mode

    row = {"target": target, "sync": mode, "error": None}
    try:
        forget_local_modules(path)  # a helper edited since this worker imported it
        kernel = load_kernel(path, list(params.items()))
        row["sources"] = sources(path)  # what build() imported, checked on resume
        program = kernel.program() if hasattr(kernel, "program") else kernel
        row["target"] = resolve_target(program, target, where=path)
        mode = row["sync"] = default_mode(program) if mode is None else mode
        inputs = params if path.endswith(".pto") else None
        ranks, context, *specs = multi or (None, None)
        streams = [load_stream(spec, list(params.items())) for spec in specs]
        run = run_mode(
            kernel,
            row["target"],
            mode,
            inputs=inputs,
            seed=seed,
            functional=False,
            ranks=ranks,
            comm_context=context,
            streams=streams,
            block_dim=block_dim,
            sample_waves=sample_waves,
        )
    except Exception as e:  # a configuration that fails is a row, not a lost sweep
        text = " ".join(str(e).split())
        row["error"] = text if isinstance(e, UserError) else f"{type(e).__name__}: {text}"
        return row
    m = run.metrics()
    if m["deadlock"]:
        row["error"] = " ".join(m["deadlock"].split())
        return row
    row.update({k: m[k] for k in METRICS})
    # what ptosim run would warn of (a run that did no work, an attribute not modelled ...)
    row["warnings"] = " | ".join(" ".join(w.split()) for w in run.warnings) or None
    if sample_waves is not None:
        assert run.result is not None  # a run that ended (no deadlock) has its result
        r = run.result
        row["blocks_simulated"] = r.sample["blocks_simulated"] if r.sample else len(r.blocks)
    row.update({f"busy_cycles[{p}]": v for p, v in m["pipes"].items()})
    row.update({f"peak_bytes[{b}]": v for b, v in m["peak_bytes"].items()})
    return row
