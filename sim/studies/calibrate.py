"""Validating the timing model against measurements, and fitting it to them.

A case file is a CSV with the columns ``op,dtype,rows,cols,valid_rows,valid_cols,variant,
measured_cycles`` (extra columns are ignored, ``#`` lines are comments, empty valid
extents mean the whole tile). Each case is one tile instruction in isolation — operands
resident in UB, every pipe idle — exactly what ``ptosim op`` simulates.

``validate`` predicts every case and scores it with accuracy = 1 - |p - m| / m.
``calibrate`` refits, per CCE vector instruction, the start-up latency (head + tail) and
the per-repeat slope by linear least squares: an isolated op's cost is linear in those
figures (``sim.timing.plan.linear_terms``), so all cases are fitted jointly. A weak ridge
pull towards the current figures keeps instructions that no case exercises unchanged
and makes under-determined pairs take the smallest change. The fitted model is written
as a complete target directory usable with ``--target DIR``.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
from pathlib import Path

import attrs
import numpy as np

from sim.base.atomic import atomic_dir
from sim.base.errors import UserError, VerifyError
from sim.engine.execute import Interpreter
from sim.engine.items import OP
from sim.isa.opcodes import opcode
from sim.studies.accuracy import accuracy, by_family, summary
from sim.studies.ops import VARIANTS, OpCase, parse_dtype_pair, run_case
from sim.target import load_target
from sim.timing.fits import decision, fit_estimate, mark_restarts
from sim.timing.plan import evaluate, linear_terms

__all__ = ["Case", "load_cases", "predict", "validate", "fit", "write_model"]

# A single tile instruction that takes 10^9 cycles (half a second) is a unit mistake, not a
# measurement; fitting it would give an absurd model.
MAX_MEASURED_CYCLES = 1e9
REQUIRED = ("op", "dtype", "rows", "cols", "valid_rows", "valid_cols", "variant", "measured_cycles")


@attrs.frozen
class Case:
    line: int
    row: dict = attrs.field(eq=False)  # the input columns as read
    op: OpCase
    measured: float


def _int(path, line, row, key, default=None):
    text = (row.get(key) or "").strip()
    if not text:
        if default is not None:
            return default
        raise UserError(f"{path}:{line}: column {key}: expected a positive integer, found nothing")
    try:
        v = int(text)
    except ValueError:
        raise UserError(
            f"{path}:{line}: column {key}: expected a positive integer, found {text!r}"
        ) from None
    if v <= 0:
        raise UserError(f"{path}:{line}: column {key}: expected a positive integer, found {v}")
    return v


def load_cases(path) -> list[Case]:
    """Read a case CSV; errors name ``FILE:LINE`` and the column."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{path}: is a directory, expected a CSV file")
    if not p.is_file():
        raise UserError(f"{path}: no such file")
    try:
        lines = p.read_text(encoding="utf-8-sig").splitlines(keepends=True)
    except UnicodeDecodeError as e:
        raise UserError(
            f"{path}: not a UTF-8 text CSV file (byte {e.start}: "
            f"{e.object[e.start : e.start + 1]!r})"
        ) from None
    except OSError as e:  # unreadable: permissions, a device, an I/O error
        raise UserError(f"{path}: cannot read: {e.strerror or e}") from None
    body = [
        (n, text)
        for n, text in enumerate(lines, start=1)
        if text.strip() and not text.lstrip().startswith("#")
    ]
    if not body:
        raise UserError(f"{path}: no header line")
    header_line = body[0][0]
    reader = csv.DictReader(io.StringIO("".join(text for _, text in body)))
    missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise UserError(
            f"{path}:{header_line}: header: expected columns {', '.join(REQUIRED)}; "
            f"missing {', '.join(missing)}"
        )
    cases = []
    read = 1  # lines the reader has taken: the header
    for row in reader:
        # a row starts on the line after the last one read (a quoted field may span lines)
        line, read = body[read][0], reader.line_num
        from sim.isa.opcodes import opcode

        try:
            spec = opcode((row["op"] or "").strip())
        except UserError:
            raise UserError(f"{path}:{line}: column op: unknown opcode {row['op']!r}") from None
        try:
            parse_dtype_pair((row["dtype"] or "").strip())
        except UserError as e:
            raise UserError(f"{path}:{line}: column dtype: {e}") from None
        rows, cols = _int(path, line, row, "rows"), _int(path, line, row, "cols")
        vr = _int(path, line, row, "valid_rows", rows)
        vc = _int(path, line, row, "valid_cols", cols)
        variant = (row["variant"] or "").strip()
        if variant not in VARIANTS:
            raise UserError(
                f"{path}:{line}: column variant: expected one of "
                f"{', '.join(repr(v) for v in VARIANTS)}, found {variant!r}"
            )
        try:
            measured = float(row["measured_cycles"])
            if not 0 < measured <= MAX_MEASURED_CYCLES:  # also refuses NaN and inf
                raise ValueError
        except (TypeError, ValueError):
            raise UserError(
                f"{path}:{line}: column measured_cycles: expected a positive number "
                f"of cycles up to {MAX_MEASURED_CYCLES:.0e}, found "
                f"{row['measured_cycles']!r}"
            ) from None
        op = OpCase(spec.name, row["dtype"].strip(), (rows, cols), (vr, vc), variant)
        cases.append(Case(line, {k: row.get(k) for k in REQUIRED}, op, measured))
    if not cases:
        raise UserError(f"{path}: no cases: the file has a header and no data rows")
    return cases


def _op_plan(op: OpCase, target):
    """The plan of ``op``'s instruction (the one op of its single-op kernel) and whether
    the target's checks accepted it.

    A measured case is something the hardware ran, so a case the verifier rejects (an
    element type or layout outside the target's documented checks) is still predicted,
    with the legality checks off; ``legal`` in the output says so.
    """
    program = op.kernel().program()
    for verify in (True, False):
        try:
            interp = Interpreter(program, target, functional=False, verify=verify)
            items = [it for it in interp.issue() if it.kind is OP]
            return items[-1].plan, verify, list(interp.warnings)
        except VerifyError:
            continue


def _plan(case: Case, target):
    """``(plan, legal, in-place reason, verifier warnings)`` of the case's instruction. Tiles that
    do not fit as separate tiles run in place when the op allows it (``sim.studies.ops.run_case``:
    the hardware test of such a size aliases dst and src0); the reason says so."""
    try:
        run = run_case(case.op, lambda op: _op_plan(op, target))
    except UserError as e:
        raise UserError(f"line {case.line}: {e}") from None
    plan, legal, warnings = run.value
    return plan, legal, run.in_place_reason, warnings


def predict(case: Case, target) -> int:
    return _plan(case, target)[0].cold_cycles


def _number(text: str):
    """A CSV cell as a number (int when integral), for the JSON report."""
    x = float(text)
    return int(x) if x.is_integer() else x


def _explain(case: Case, plan, tgt, predicted: int) -> dict:
    """The case's two readings: the decomposition with a full latency after every barrier
    inside the op (timing-model.md §4 / §7, ``mechanism``), the reference's formula fit at
    the shape when the shape is one it was fitted on (``fit``, else None and
    ``fit_reason``), and which reading the model took for the op and why
    (``sim.timing.fits``)."""
    rule = tgt.vector.get("mechanism_restart", "latency")
    cold = evaluate(
        mark_restarts(plan.items, rule),
        tgt.cce,
        tgt.vector.get("count_mode_floor_cycles", 0),
        tgt.vector.get("barrier_restart", "latency"),
    )[0]
    src_dt, dst_dt = parse_dtype_pair(case.op.dtype)
    fit = fit_estimate(case.op.op, dst_dt, case.op.shape, case.op.valid, tgt)
    d = decision(tgt, case.op.op)
    return {
        "model": predicted,
        "mechanism": int(math.floor(cold + 0.5)),
        "fit": fit.cycles if fit else None,
        "fit_line": fit.line if fit else "",
        "fit_reason": (fit.reason if fit else "the target has no formula fit for the op"),
        "reading": d.reading if d else "",
        "evidence": d.evidence if d else "",
    }


def _predicted(case: Case, tgt, explain: bool = False) -> dict:
    """Prediction fields of one case; a case that cannot be predicted (its tiles do not fit
    in the target's buffers, ...) gets ``predicted: None`` and the reason."""
    try:
        plan, legal, in_place, warnings = _plan(case, tgt)
    except UserError as e:
        return {
            "predicted": None,
            "accuracy": None,
            "legal": None,
            "in_place": False,
            "reason": re.sub(r"^line \d+: ", "", str(e)),
        }
    except Exception as e:  # a simulator bug on one case must not cost the whole file
        return {
            "predicted": None,
            "accuracy": None,
            "legal": None,
            "in_place": False,
            "reason": f"internal error, please report: {type(e).__name__}: {e}",
        }
    p = plan.cold_cycles
    return {
        **({"explain": _explain(case, plan, tgt, p)} if explain else {}),
        "predicted": p,
        "accuracy": round(accuracy(p, case.measured), 4),
        "legal": legal,
        "reason": None,
        "in_place": bool(in_place),
        **({"note": in_place} if in_place else {}),
        "warnings": [re.sub(r"^instruction #\d+ \w+( \([^)]*\))?: ", "", w) for w in warnings],
    }


def validate(cases, target, explain: bool = False) -> dict:
    """Predicted cycles and accuracy per case; summaries overall and per op family.

    Never stops at one case: an unpredictable case is reported with ``predicted: None``
    and a ``reason`` and counted in the summaries as unpredicted. With ``explain`` each
    predicted case also carries ``explain`` (``_explain``: the mechanism's and the
    formula fit's cycles beside the model's, and the op's decision)."""
    tgt = load_target(target)
    out = []
    for c in cases:
        rows, cols = c.op.shape
        vr, vc = c.op.valid
        out.append(
            {
                "line": c.line,
                "op": c.op.op,
                "family": opcode(c.op.op).family,
                "dtype": c.op.dtype,
                "rows": rows,
                "cols": cols,
                "valid_rows": vr,
                "valid_cols": vc,
                "variant": c.op.variant,
                "measured_cycles": _number(c.row["measured_cycles"]),
                **_predicted(c, tgt, explain),
            }
        )
    total = summary(out)
    return {
        "target": tgt.name,
        "cases": out,
        "summary": total,
        "families": by_family(out),
        "median_accuracy": total["median_accuracy"],
        "mean_accuracy": total["mean_accuracy"],
        "within_15_percent": total["within_15_percent"],
    }


def fit(cases, target, ridge: float = 0.05) -> dict:
    """Least-squares latency and slope per CCE instruction -> new {name: CceCost}.
    Cases that cannot be predicted (``validate`` reports them) are left out."""
    tgt = load_target(target)
    floor = tgt.vector.get("count_mode_floor_cycles", 0)
    rows, consts, ys = [], [], []
    for c in cases:
        try:
            plan = _plan(c, tgt)[0]
        except UserError:
            continue
        const, coef = linear_terms(
            plan.items, tgt.cce, floor, tgt.vector.get("barrier_restart", "latency")
        )
        rows.append(coef)
        consts.append(const)
        ys.append(c.measured)
    params = sorted({k for r in rows for k in r})
    if not params:
        raise UserError("no case exercises a vector instruction: nothing to calibrate")
    index = {k: i for i, k in enumerate(params)}
    A = np.zeros((len(rows), len(params)))
    for i, r in enumerate(rows):
        for k, v in r.items():
            A[i, index[k]] = v
    prior = np.array([_current(tgt, k) for k in params])
    # Relative errors matter (accuracy is relative), so weight each case by 1 / measured.
    w = 1.0 / np.asarray(ys)
    lhs = np.vstack([A * w[:, None], ridge * np.eye(len(params)) / max(np.median(ys), 1.0)])
    rhs = np.concatenate([(np.asarray(ys) - consts) * w, ridge * prior / max(np.median(ys), 1.0)])
    theta, *_ = np.linalg.lstsq(lhs, rhs, rcond=None)
    theta = np.clip(theta, 0.0, None)
    costs = dict(tgt.vector_costs)
    counts: dict = {}
    for k, i in index.items():
        counts[k[1]] = counts.get(k[1], 0) + int(np.count_nonzero(A[:, i]))
    for name in {k[1] for k in params}:
        old = costs[name]
        lat = theta[index[("latency", name)]] if ("latency", name) in index else old.latency_cycles
        slope = (
            theta[index[("slope", name)]]
            if ("slope", name) in index
            else old.slope_cycles_per_repeat
        )
        share = old.head_cycles / old.latency_cycles if old.latency_cycles else 1.0
        costs[name] = attrs.evolve(
            old,
            head_cycles=round(float(lat) * share, 3),
            tail_cycles=round(float(lat) * (1 - share), 3),
            slope_cycles_per_repeat=round(float(slope), 4),
            source=f"calibrated ({counts[name]} cases)",
        )
    return costs


def _current(tgt, key) -> float:
    c = tgt.cce(key[1])
    return c.latency_cycles if key[0] == "latency" else c.slope_cycles_per_repeat


def write_model(base, costs: dict, out_dir, note: str) -> Path:
    """Copy target ``base`` to ``out_dir`` with ``costs`` as its vector cost table."""
    tgt = load_target(base)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: exists and is not a directory")
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out}: output directory exists and is not empty")
    with atomic_dir(out) as tmp:  # a failed write (a full disk) leaves no half model behind
        _write_model_files(tgt, costs, tmp, note)
    return out


def _write_model_files(tgt, costs: dict, out: Path, note: str) -> None:
    shutil.copytree(tgt.path, out, dirs_exist_ok=True)
    machine = (out / "machine.toml").read_text()
    machine = re.sub(r'(?m)^name = ".*"$', f'name = "{tgt.name}-calibrated"', machine, count=1)
    machine = re.sub(r'(?m)^costs = ".*"', 'costs = "vector_costs.csv"', machine, count=1)
    (out / "machine.toml").write_text(machine)
    with (out / "vector_costs.csv").open("w", newline="") as f:
        f.write(f"# Calibrated from {note} on top of {tgt.path} (sim/studies/calibrate.py).\n")
        f.write("# head/tail keep the original split of the fitted start-up latency.\n")
        w = csv.writer(f)
        w.writerow(
            [
                "instruction",
                "head_cycles",
                "slope_cycles_per_repeat",
                "tail_cycles",
                "floor",
                "source",
            ]
        )
        for c in costs.values():
            w.writerow(
                [
                    c.name,
                    _num(c.head_cycles),
                    _num(c.slope_cycles_per_repeat),
                    _num(c.tail_cycles),
                    "yes" if c.floor else "no",
                    c.source,
                ]
            )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
