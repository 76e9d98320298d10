"""One-line mutation testing of a module against a chosen set of tests (not run in CI).

Each mutant changes one expression of the module on one line: an arithmetic operator
swapped (``+``/``-``, ``*``/``/``, ...), a comparison flipped at its boundary (``<``/``<=``)
or negated (``==``/``!=``, ``in``/``not in``), ``and``/``or`` swapped, a ``not`` dropped, an
integer constant moved by one, ``True``/``False`` swapped, a string literal changed, the
first two positional arguments of a call swapped, or a name swapped with its twin
(``min``/``max``, ``any``/``all``, ``float32``/``float64``, ``int64``/``uint64``). For each
mutant the selected tests run in a fresh interpreter with ``pytest -x``; the mutant is
*killed* when a test fails (or the run exceeds a time limit), *survived* when all pass.

The mutated module is served by an import hook in the child interpreter, so the tree is
never written to (other work on the same checkout is not disturbed); tests that start a
separate process (the CLI through ``subprocess``) do not see the mutant, so select tests
that call the code in-process.

Usage::

    .venv/bin/python tools/mutants.py sim/functional/arith.py            # default tests
    .venv/bin/python tools/mutants.py sim/timing/plan.py --max 30 --list
    .venv/bin/python tools/mutants.py MODULE --tests tests/test_x.py -k name --max 40

Without ``--tests`` the tests of ``DEFAULT_TESTS`` for that module run. ``--max N`` keeps
N mutants spread evenly over the module (deterministic), ``--list`` only prints them.
The report lists each survivor as ``file:line: original -> mutant`` for a reader to class
as equivalent (no input can tell it apart) or as a gap in the tests.
"""

from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The tests that exercise each module in-process (the mutant is not seen by subprocesses).
DEFAULT_TESTS = {
    "sim/functional/arith.py": [
        "tests/test_functional_units.py",
        "tests/test_functional_sites.py",
        "tests/test_engine_functional.py",
        "tests/test_arith_aliasing.py",
        "tests/test_arith_wide_values.py",
        "tests/test_arith_direct.py",
    ],
    "sim/timing/plan.py": [
        "tests/test_timing_lowering.py",
        "tests/test_timing_a5.py",
        "tests/test_plan_memo.py",
        "tests/test_validate.py::test_linear_terms_equal_evaluate_on_the_cost_table",
        "tests/test_validate.py::test_calibrate_recovers_perturbed_figures",
        "tests/test_validate.py::test_calibrate_recovers_figures_through_barrier_restarts",
        "tests/test_validate.py::test_reference_cases_validate",
        "tests/test_plan_stream.py",
    ],
    "sim/placement/alloc.py": [
        "tests/test_placement_alloc.py",
        "tests/test_placement_fifo_branches.py",
        "tests/test_placement_banks.py",
        "tests/test_placement_pinned_fifo.py",
        "tests/test_placement_manual_order.py",
        "tests/test_real_kernel_forms.py::test_tiles_that_fill_the_ub_exactly_are_placed_without_the_bank_stagger",
        "tests/test_real_kernel_forms.py::test_the_bank_stagger_stays_where_it_fits",
    ],
    "sim/engine/gm.py": [
        "tests/test_gm_model.py",
        "tests/test_gm_order.py",
        "tests/test_l2_writeback.py",
        "tests/test_chip_mechanisms.py",
    ],
}

_BINOP_SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
_CMP_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_NOT_SWAPPED = {"ctx", "dt", "self", "target", "fn"}
_NAME_TWINS = {
    "min": "max",
    "max": "min",
    "any": "all",
    "all": "any",
    "float32": "float64",
    "float64": "float32",
    "int64": "uint64",
    "uint64": "int64",
    "minimum": "maximum",
    "maximum": "minimum",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """id() of the string constants that are docstrings (never mutated)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            v = body[0].value
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.add(id(v))
    return out


def _inert(tree: ast.AST) -> set[int]:
    """id() of every node inside a ``raise`` statement or an f-string (error text), an
    annotation (a string under ``from __future__ import annotations``) or ``__all__``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Raise, ast.JoinedStr)):
            out.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            out.update(id(n) for n in ast.walk(node))
        notes = [getattr(node, "annotation", None), getattr(node, "returns", None)]
        for note in notes:
            if isinstance(note, ast.AST):
                out.update(id(n) for n in ast.walk(note))
    return out


def _variants(node: ast.AST, skip: set[int]):
    """(description, mutated copy of ``node``) for each one-node mutation of ``node``."""
    import copy

    def clone(**changes):
        new = copy.copy(node)
        for k, v in changes.items():
            setattr(new, k, v)
        return new

    if isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAPS:
        yield clone(op=_BINOP_SWAPS[type(node.op)]())
    elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOP_SWAPS:
        yield clone(op=_BINOP_SWAPS[type(node.op)]())
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMP_SWAPS:
                ops = list(node.ops)
                ops[i] = _CMP_SWAPS[type(op)]()
                yield clone(ops=ops)
    elif isinstance(node, ast.BoolOp):
        yield clone(op=ast.Or() if isinstance(node.op, ast.And) else ast.And())
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield node.operand
    elif isinstance(node, (ast.If, ast.IfExp, ast.While)) and not isinstance(
        node.test, (ast.Compare, ast.UnaryOp, ast.BoolOp, ast.Constant)
    ):
        yield ("test", ast.UnaryOp(op=ast.Not(), operand=node.test))
    elif isinstance(node, ast.Constant) and id(node) not in skip:
        v = node.value
        if isinstance(v, bool):
            yield clone(value=not v)
        elif isinstance(v, int):
            yield clone(value=v + 1)
        elif isinstance(v, str) and v:
            yield clone(value=f"XX{v}XX")
    elif isinstance(node, ast.Call):
        pos = [a for a in node.args if not isinstance(a, ast.Starred)]
        if len(pos) >= 2 and len(pos) == len(node.args):
            args = list(node.args)
            args[0], args[1] = args[1], args[0]
            # a context or element type in the other place is only a crash: not asked
            plain = not any(isinstance(a, ast.Name) and a.id in _NOT_SWAPPED for a in pos[:2])
            if plain and ast.dump(args[0]) != ast.dump(args[1]):
                yield clone(args=args)
    elif isinstance(node, ast.Name) and node.id in _NAME_TWINS:
        yield clone(id=_NAME_TWINS[node.id])
    elif isinstance(node, ast.Attribute) and node.attr in _NAME_TWINS:
        yield clone(attr=_NAME_TWINS[node.attr])


def mutants(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, original text, mutated text, mutated module source) of every one-line
    mutant of the module at ``path``, in source order."""
    source = path.read_text()
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    skip = _docstrings(tree) | _inert(tree)
    out = []
    seen = set()
    for node in ast.walk(tree):
        if id(node) in skip and not isinstance(node, ast.Constant):
            continue
        for new in _variants(node, skip):
            spot = node
            if isinstance(new, tuple):  # (field, new sub-node): only that part changes
                spot, new = getattr(node, new[0]), new[1]
            if getattr(spot, "lineno", None) is None or spot.lineno != spot.end_lineno:
                continue
            line = lines[spot.lineno - 1]
            raw = line.encode()  # col offsets count UTF-8 bytes
            original = raw[spot.col_offset : spot.end_col_offset].decode()
            text = ast.unparse(new)
            if text == original or text == ast.unparse(spot):
                continue
            mutated = (raw[: spot.col_offset] + text.encode() + raw[spot.end_col_offset :]).decode()
            key = (spot.lineno, mutated)
            if key in seen:
                continue
            seen.add(key)
            src = "".join(lines[: spot.lineno - 1]) + mutated + "".join(lines[spot.lineno :])
            try:
                ast.parse(src)
            except SyntaxError:
                continue
            out.append((spot.lineno, line.strip(), mutated.strip(), src))
    out.sort(key=lambda m: (m[0], m[2]))
    return out


def _spread(items: list, n: int | None) -> list:
    """``n`` items spread evenly over ``items`` (all of them when ``n`` is None)."""
    if n is None or n >= len(items):
        return items
    return [items[i * len(items) // n] for i in range(n)]


def _module_name(rel: Path) -> str:
    return ".".join(rel.with_suffix("").parts)


class _Loader(importlib.abc.Loader):
    def __init__(self, origin: str, source: str):
        self.origin, self.source = origin, source

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        exec(compile(self.source, self.origin, "exec"), module.__dict__)


class _Finder(importlib.abc.MetaPathFinder):
    """Serves the mutated source for one module name (nothing is written to disk)."""

    def __init__(self, name: str, origin: str, source: str):
        self.name, self.origin, self.source = name, origin, source

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(
            fullname, self.origin, loader=_Loader(self.origin, self.source)
        )


def _child(name: str, origin: str, mutant_file: str, pytest_args: list[str]) -> int:
    """In the child interpreter: install the hook, then run pytest."""
    import pytest

    sys.dont_write_bytecode = True
    sys.meta_path.insert(0, _Finder(name, origin, Path(mutant_file).read_text()))
    return int(pytest.main(pytest_args))


def _run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        rc = subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        ).returncode
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0
    return ("passed" if rc == 0 else "failed"), time.monotonic() - t0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        name, origin, mutant_file = argv[1:4]
        return _child(name, origin, mutant_file, argv[5:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", help="path of the module to mutate, e.g. sim/timing/plan.py")
    ap.add_argument("--tests", nargs="+", help="test files (default: DEFAULT_TESTS)")
    ap.add_argument("-k", dest="keyword", help="pytest -k expression")
    ap.add_argument("--max", type=int, help="at most this many mutants, spread evenly")
    ap.add_argument("--lines", help="only mutants on these lines, e.g. 120-140")
    ap.add_argument(
        "--pick",
        help="only these of the chosen mutants, by their [i/N] number, e.g. 3,17,40 "
        "(to run a campaign's survivors again after adding tests)",
    )
    ap.add_argument("--list", action="store_true", help="print the mutants and stop")
    ap.add_argument(
        "--in-place",
        action="store_true",
        help="run in the checkout (default: in a snapshot of HEAD, safe from concurrent edits)",
    )
    args = ap.parse_args(argv)

    rel = str((ROOT / args.module).resolve().relative_to(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        root = ROOT if args.in_place else _snapshot(Path(tmp) / "tree")
        return _campaign(args, ap, root, rel, Path(tmp))


def _snapshot(where: Path) -> Path:
    """The committed tree (``git archive HEAD``) unpacked at ``where``: other work going on
    in the checkout while the mutants run cannot change what they are run against."""
    where.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "HEAD"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def _campaign(args, ap, root: Path, rel: str, tmp: Path) -> int:
    path = root / rel
    every = mutants(path)
    if args.lines:
        first, _, last = args.lines.partition("-")
        lo, hi = int(first), int(last or first)
        every = [m for m in every if lo <= m[0] <= hi]
    chosen = _spread(every, args.max)
    numbers = list(range(1, len(chosen) + 1))
    if args.pick:
        numbers = sorted({int(n) for n in args.pick.split(",")})
        chosen = [chosen[n - 1] for n in numbers]
    if args.list:
        for n, (line, old, new, _) in zip(numbers, chosen, strict=True):
            print(f"[{n}] {rel}:{line}: {old}  ->  {new}")
        return 0
    tests = args.tests or DEFAULT_TESTS.get(rel)
    if not tests:
        ap.error(f"no default tests for {rel}: give --tests")
    tests = [t for t in tests if (root / t.split("::")[0]).exists()]
    pytest_args = [*tests, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    if args.keyword:
        pytest_args += ["-k", args.keyword]

    name = _module_name(Path(rel))
    mfile = str(tmp / "mutant.py")
    Path(mfile).write_text(path.read_text())
    child = [sys.executable, __file__, "--child", name, str(path), mfile, "--", *pytest_args]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    status, base = _run(child, root, env, timeout=3600)
    print(f"{rel}: {len(chosen)} mutants; tests {' '.join(tests)} ({base:.0f} s unmutated)")
    if status != "passed":
        print("the tests fail on the unmutated module: fix that first")
        return 2
    limit = 3 * base + 30
    survivors, counts = [], {"failed": 0, "timeout": 0, "passed": 0}
    for i, (line, old, new, src) in zip(numbers, chosen, strict=True):
        Path(mfile).write_text(src)
        status, took = _run(child, root, env, timeout=limit)
        counts[status] += 1
        verdict = "survived" if status == "passed" else "killed"
        print(f"[{i}/{numbers[-1]}] {verdict:8} {took:5.1f} s  {rel}:{line}: {new}", flush=True)
        if status == "passed":
            survivors.append((i, line, old, new))
    killed = counts["failed"] + counts["timeout"]
    print(
        f"\n{rel}: {killed} of {len(chosen)} killed ({counts['timeout']} by time limit), "
        f"{len(survivors)} survived"
    )
    for i, line, old, new in survivors:
        print(f"  [{i}] {rel}:{line}: {old}\n      -> {new}")
    if survivors:
        print(f"  again: --pick {','.join(str(s[0]) for s in survivors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
