"""Loading a target directory into frozen value objects.

Files of a target directory:

* ``machine.toml``      units, pipes, buffers, vector datapath, sync, DMA paths, cube;
* ``vector_costs.csv``  head / slope / tail of each CCE vector instruction;
* ``ops.toml``          per-opcode legality (dtype lists, layout rules) for the verifier;
* ``semantics.toml``    target-specific functional behaviours ("quirks").

Only ``machine.toml`` is required; a target without cost or legality files can still be
used for what it describes.
"""

from __future__ import annotations

import csv
import functools
import io
import os
import tomllib
from pathlib import Path

import attrs

from sim.base.errors import UserError

__all__ = ["Buffer", "CceCost", "DmaPath", "Target", "load_target", "models_dir", "target_names"]


@functools.cache  # where the package is installed does not move during a run
def models_dir() -> Path:
    """The bundled ``models/`` directory: inside the wheel, or beside ``sim/`` in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "models", here.parent / "models"):
        if candidate.is_dir():
            return candidate
    raise UserError(f"cannot find the bundled models/ directory near {here}")


def target_names() -> list[str]:
    return sorted(p.name for p in models_dir().iterdir() if (p / "machine.toml").is_file())


@attrs.frozen
class Buffer:
    name: str
    capacity_bytes: int
    alignment_bytes: int
    unit: str
    reserved: tuple = ()  # ((name, start_byte, end_byte), ...)


@attrs.frozen
class CceCost:
    """Cost triple of one CCE vector instruction (timing-model.md §2.2)."""

    name: str
    head_cycles: float
    slope_cycles_per_repeat: float
    tail_cycles: float
    floor: bool
    source: str = ""

    @property
    def latency_cycles(self) -> float:
        return self.head_cycles + self.tail_cycles


def _non_negative(inst, attribute, value):
    if value < 0:
        raise UserError(f"data path {inst.name}: {attribute.name} must be >= 0, found {value}")


@attrs.frozen
class DmaPath:
    """One data path: streaming bandwidth, start-up latency, the bytes an element is
    charged when the path charges per element (FIXPIPE), optional fitted (Hill) figures
    of the reference (the cost formula is ``sim.timing.dma``)."""

    name: str
    pipe: str
    bytes_per_cycle: float
    fitted_peak_bytes_per_cycle: float | None = None
    fitted_k_bytes: float | None = None
    startup_cycles: float = attrs.field(default=0.0, validator=_non_negative)
    charged_bytes_per_element: int = attrs.field(default=0, validator=_non_negative)


@attrs.frozen(eq=False)  # identity: one object per loaded directory (see _load)
class Target:
    name: str
    path: Path
    clock_hz: float
    units: dict
    buffers: dict
    vector: dict
    vector_costs: dict
    sync: dict
    scalar: dict
    dma_model: str
    dma_paths: dict
    cube: dict
    ops: dict
    quirks: frozenset
    scalar_loops: dict = attrs.Factory(dict)  # [scalar_loops]: per-element scalar-unit figures
    chip: dict = attrs.Factory(dict)  # [chip]: cores, cross-unit FIFOs
    gm: dict = attrs.Factory(dict)  # [gm]: shared GM bandwidth, optional L2
    comm: dict = attrs.Factory(dict)  # [comm]: links between ranks (sim.engine.links)

    def buffer(self, name: str) -> Buffer:
        try:
            return self.buffers[name]
        except KeyError:
            raise UserError(
                f"target {self.name} has no buffer {name!r}; it has: {', '.join(self.buffers)}"
            ) from None

    def cce(self, name: str) -> CceCost:
        try:
            return self.vector_costs[name]
        except KeyError:
            raise UserError(
                f"target {self.name}: no cost entry for CCE instruction {name!r} "
                f"in {self.path / 'vector_costs.csv'}"
            ) from None

    def dma(self, path: str) -> DmaPath:
        try:
            return self.dma_paths[path]
        except KeyError:
            raise UserError(f"target {self.name} has no data path {path!r}") from None


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: invalid TOML: {e}") from None


def read_csv_rows(path: Path) -> list[dict]:
    """CSV rows as dicts; lines starting with ``#`` are comments."""
    text = "".join(
        line
        for line in path.read_text().splitlines(keepends=True)
        if not line.lstrip().startswith("#")
    )
    return list(csv.DictReader(io.StringIO(text)))


def _vector_costs(path: Path) -> dict:
    if not path.is_file():
        return {}
    costs = {}
    for row in read_csv_rows(path):
        try:
            costs[row["instruction"]] = CceCost(
                row["instruction"],
                float(row["head_cycles"]),
                float(row["slope_cycles_per_repeat"]),
                float(row["tail_cycles"]),
                row["floor"].strip().lower() in ("yes", "true", "1"),
                row.get("source", ""),
            )
        except (KeyError, ValueError, AttributeError) as e:
            raise UserError(f"{path}: bad cost row {row!r}: {e}") from None
    return costs


def _dma_paths(dma: dict, clock_hz: float) -> dict:
    def bpc(gib):
        return gib * 2**30 / clock_hz

    paths = {}
    for name, p in dma.get("paths", {}).items():
        peak = p.get("fitted_peak_gib_per_s")
        paths[name] = DmaPath(
            name,
            p["pipe"],
            bpc(p["bandwidth_gib_per_s"]),
            bpc(peak) if peak else None,
            p.get("fitted_k_bytes"),
            float(p.get("startup_cycles", 0.0)),
            int(p.get("charged_bytes_per_element", 0)),
        )
    return paths


_bundled: dict = {}  # name -> bundled model directory, once found (it is part of the install)


def _resolve(name_or_path) -> Path:
    """A bundled target by name, or a model directory by path.

    A plain name (``a2a3``) only ever means the bundled model, so a folder of that name in
    the current directory cannot silently replace it; a directory is named as a path: a
    ``Path``, or text containing ``/`` (``./a2a3``, ``models/mine``) or ``.``/``..``."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or text in (".", ".."):
        p = Path(name_or_path).expanduser()
        if (p / "machine.toml").is_file():
            return p.resolve()
        what = "is not a directory" if not p.is_dir() else "holds no machine.toml"
        raise UserError(f"target directory {text}: {what} (a model directory holds machine.toml)")
    if text in _bundled:
        return _bundled[text]
    bundled = models_dir() / text
    if text and (bundled / "machine.toml").is_file():
        _bundled[text] = bundled
        return bundled
    hint = (
        f"; for the directory {text!r}, write ./{text}"
        if Path(text, "machine.toml").is_file()
        else ""
    )
    raise UserError(
        f"unknown target {text!r}: expected one of {', '.join(target_names())} "
        f"or a model directory path holding machine.toml{hint}"
    )


@functools.lru_cache(maxsize=16)
def _load(path: Path) -> Target:
    machine = _read_toml(path / "machine.toml")
    try:
        clock = float(machine["target"]["clock_hz"])
        name = machine["target"]["name"]
    except KeyError as e:
        raise UserError(f"{path / 'machine.toml'}: missing key {e}") from None
    buffers = {
        bname: Buffer(
            bname,
            int(b["capacity_bytes"]),
            int(b.get("alignment_bytes", 32)),
            b.get("unit", ""),
            tuple(
                (r["name"], int(r["start_byte"]), int(r["end_byte"])) for r in b.get("reserved", ())
            ),
        )
        for bname, b in machine.get("buffers", {}).items()
    }
    vector = dict(machine.get("vector", {}))
    semantics = _read_toml(path / "semantics.toml")
    return Target(
        name=name,
        path=path,
        clock_hz=clock,
        units=machine.get("units", {}),
        buffers=buffers,
        vector=vector,
        vector_costs=_vector_costs(path / vector.get("costs", "vector_costs.csv")),
        sync=machine.get("sync", {}),
        scalar=machine.get("scalar", {}),
        scalar_loops=machine.get("scalar_loops", {}),
        chip=machine.get("chip", {}),
        gm=machine.get("gm", {}),
        comm=machine.get("comm", {}),
        dma_model=machine.get("dma", {}).get("model", "flat"),
        dma_paths=_dma_paths(machine.get("dma", {}), clock),
        cube=machine.get("cube", {}),
        ops=_read_toml(path / "ops.toml"),
        quirks=frozenset(q for q, on in semantics.get("quirks", {}).items() if on),
    )


def load_target(name_or_path: str | os.PathLike[str] | Target = "a2a3") -> Target:
    """Load a bundled target by name (``a2a3``, ``a5``) or a target directory by path."""
    if isinstance(name_or_path, Target):
        return name_or_path
    return _load(_resolve(name_or_path))
