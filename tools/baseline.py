"""Behaviour baseline: what every bundled kernel gives, to compare a refactor against.

A refactor (a move of files, an engine change that must not change results) is checked
by writing the baseline before it and checking it after::

    .venv/bin/python tools/baseline.py write /tmp/before.json
    ... the change ...
    .venv/bin/python tools/baseline.py check /tmp/before.json

Each entry is one run of one kernel: the examples, the kernels under ``tests/data`` and
the benchmark kernels, on both targets where the kernel allows, in the default mode
(with the race check ``ptosim run`` makes), in auto and in manual mode, through
``compare`` and through a small ``sweep``; chip kernels at a small core count. An entry
keeps the cycle count, the per-pipe busy cycles, the warnings, the race findings, a
digest of the whole trace and of the functional outputs; a run that fails keeps its
error message. ``check`` prints the entries that differ and exits 1 when any does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import sim  # noqa: E402
from sim.kernel.files import load_kernel  # noqa: E402

TARGETS = ("a2a3", "a5")
SYNCS = (None, "auto", "manual")
# Python kernels' arguments that keep a run small; chip kernels at 2 cores
ARGS = {"flash_attention.py": [("cores", 2)]}
# a .pto kernel's scalar arguments and core count
PTO_ARGS = {
    "gemm.pto": ({"m": 256, "k": 1024, "n": 512, "singleCoreM": 128, "singleCoreN": 256}, 4),
    "flash_attention.pto": ({"S1": 512, "S1_TILE": 128}, 2),
    "sync_never_set.pto": ({"n": 2}, None),
    "two_kernels.pto": ({"n": 2, "m": 3}, None),
}


def _local(text: str) -> str:
    """Text with the checkout's own path taken out (messages and trace rows name source
    files), so that baselines of two checkouts compare."""
    return text.replace(str(ROOT), "<root>")


def _digest(obj) -> str:
    h = hashlib.sha256()
    if hasattr(obj, "to_csv"):
        h.update(_local(obj.to_csv(index=False)).encode())
    elif isinstance(obj, dict):
        for name in sorted(obj):
            a = np.asarray(obj[name])
            h.update(name.encode())
            h.update(str(a.dtype).encode())
            h.update(np.ascontiguousarray(a).tobytes())
    else:
        h.update(repr(obj).encode())
    return h.hexdigest()[:16]


# the chip kernels at full size on 24 cores (as ``ptosim run`` runs them): timing only
# at the documented sizes (docs/guide/chip.md), and functional at a size numpy computes quickly
CHIP24 = {
    "gemm.pto 6144^3": (
        "gemm.pto",
        {"m": 6144, "k": 6144, "n": 6144, "singleCoreM": 1536, "singleCoreN": 1024},
        False,
    ),
    "gemm.pto 512x512x1536": (
        "gemm.pto",
        {"m": 512, "k": 512, "n": 1536, "singleCoreM": 128, "singleCoreN": 256},
        True,
    ),
    "flash_attention.pto S1=8192": ("flash_attention.pto", {"S1": 8192, "S1_TILE": 128}, False),
    "flash_attention.pto S1=256": ("flash_attention.pto", {"S1": 256, "S1_TILE": 128}, True),
}


def _run_entry(
    kernel, target, sync, inputs=None, block_dim=None, functional=True, races="manual"
) -> dict:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = sim.simulate(
                kernel,
                target,
                sync=sync,
                races=races,
                inputs=inputs,
                block_dim=block_dim,
                functional=functional,
            )
        # a timing-only run computes no data (its outputs are refused, not zeros)
        outputs = {n: r.output(n) for n in sorted(r.gm)} if functional and hasattr(r, "gm") else {}
        return {
            "cycles": int(r.total_cycles),
            "mode": r.mode,
            "pipes": {
                p: int(v["busy_cycles"]) if isinstance(v, dict) else str(v)
                for p, v in sorted(r.pipes.items())
            },
            "warnings": [_local(w) for w in r.warnings],
            "races": [_local(getattr(f, "message", str(f))) for f in (r.races or [])],
            "trace": _digest(r.trace),
            "outputs": _digest(outputs),
        }
    except Exception as e:  # the message is part of the behaviour
        return {"error": _local(f"{type(e).__name__}: {e}")}


def _scalar_defaults(kernel, given):
    """Values for a .pto kernel's scalar arguments nobody gave: 16 for an index (a loop
    bound or count), 1.5 for a float."""
    given = dict(given or {})
    if not hasattr(kernel, "functions"):
        return given or None
    for arg in kernel.main.args:
        if type(arg).__name__ != "Scalar" or arg.name in given:
            continue
        name, ty = arg.name, str(arg.type)
        given[name] = 1.5 if ty.startswith("f") or "float" in ty else 16
    return given


def _kernel_files() -> list[Path]:
    files = sorted((ROOT / "examples").glob("*.pto")) + sorted((ROOT / "examples").glob("*.py"))
    files += sorted((ROOT / "tests" / "data").rglob("*.pto"))
    return files


def _load(path: Path):
    params = ARGS.get(path.name, [])
    return load_kernel(str(path), [(k, str(v)) for k, v in params])


def collect(progress=True) -> dict:
    out: dict[str, dict] = {}
    for path in _kernel_files():
        rel = str(path.relative_to(ROOT))
        try:
            kernel = _load(path)
        except Exception as e:
            out[rel] = {"error": _local(f"{type(e).__name__}: {e}")}
            continue
        inputs, block_dim = PTO_ARGS.get(path.name, (None, None))
        inputs = _scalar_defaults(kernel, inputs)
        for target in TARGETS:
            for sync in SYNCS:
                out[f"{rel} {target} {sync or 'default'}"] = _run_entry(
                    kernel, target, sync, inputs, block_dim
                )
            try:
                df = sim.compare(kernel, target, inputs=inputs)
                out[f"{rel} {target} compare"] = {"table": _digest(df)}
            except Exception as e:
                out[f"{rel} {target} compare"] = {"error": _local(f"{type(e).__name__}: {e}")}
        if progress:
            print(rel, file=sys.stderr)
    for name, (file, inputs, functional) in CHIP24.items():
        kernel = _load(ROOT / "examples" / file)
        for races in ("manual", True, False):
            out[f"24 cores: {name} races={races}"] = _run_entry(
                kernel, "a2a3", None, inputs, 24, functional, races
            )
        if progress:
            print(f"24 cores: {name}", file=sys.stderr)
    import kernels as bench_kernels

    for name in bench_kernels.KERNELS:
        k = bench_kernels.build(name, 600)
        out[f"bench:{name} a2a3 default"] = _run_entry(k, "a2a3", None)
    try:
        df = sim.sweep(
            str(ROOT / "examples" / "relu_sub_tiled.py"),
            params={"rows": [16, 32], "buffers": [1, 2]},
            sync=["manual", "auto"],
            workers=1,
            processes=False,
        )
        out["sweep relu_sub_tiled"] = {
            "table": _digest(
                df.drop(
                    columns=[c for c in df.columns if "time" in c or "seconds" in c],
                    errors="ignore",
                )
            )
        }
    except Exception as e:
        out["sweep relu_sub_tiled"] = {"error": _local(f"{type(e).__name__}: {e}")}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("write", "check"))
    ap.add_argument("file")
    args = ap.parse_args(argv)
    now = collect()
    if args.action == "write":
        Path(args.file).write_text(json.dumps(now, indent=1, sort_keys=True))
        print(f"{len(now)} entries written to {args.file}")
        return 0
    before = json.loads(Path(args.file).read_text())
    bad = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    for k in bad:
        print(f"DIFF {k}\n  before: {before.get(k)}\n  after:  {now.get(k)}")
    print(f"{len(now)} entries, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
