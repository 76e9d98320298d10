"""Fuzz of the two ways a user drives pto-sim: ``ptosim`` argument
vectors and builder call sequences. Whatever the input, the outcome is a user error (one
``ptosim: error`` line, exit 2; ``UserError`` from the API) or a success — never a
traceback, never a changed input file.

Bounded and deterministic: hypothesis runs derandomized with a modest ``max_examples``;
every run is timing-only-sized (small kernels, ``--max-instructions``), a sweep always
points at a closed 127.0.0.1 port so it ends before any cluster starts.
"""

from __future__ import annotations

import hashlib
import shutil
import textwrap
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from sim.base.errors import UserError
from sim.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

SMALL_PY = textwrap.dedent("""\
    import sim

    def build(addr=0, n=16):
        k = sim.Kernel("small")
        x = k.gm("x", "f32", (n, 64))
        o = k.gm("o", "f32", (n, 64))
        t = k.tile("vec", "f32", 16, 64)
        k.TASSIGN(t, addr)
        k.TLOAD(t, x[0:16, :])
        k.TSTORE(o[0:16, :], t)
        return k
    """)
CASES = (
    "op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n"
    "TADD,f32,16,64,16,64,,120\nTEXP,f16,32,64,32,64,,200\n"
)

FILES = [
    "tsub.pto",
    "trelu.pto",
    "small.py",
    "a.npy",
    "obj.npy",
    "cases.csv",
    "missing.pto",
    "dir",
    "o.npy",
]
VALUED = {
    "--arg": [
        "n=99999999999999999999999",
        "n=-16",
        "n=9223372036854775808",
        "addr=3",
        "addr=-64",
        "addr=1000000000",
        "n=0x7fffffffffffffff",
        "n=-9223372036854775809",
        "n=16",
        "n=64",
        "addr=64",
        "n=abc",
        "n=1e3",
        "n",
        "=5",
        "nope=1",
    ],
    "--input": ["pa=a.npy", "pa=missing.npy", "pa=obj.npy", "px=a.npy", "pa=dir", "q=a.npy"],
    "--output": ["po=o.npy", "po=o.csv", "po=a.npy", "po=tsub.pto", "po=dir", "po=new/o.npy"],
    "--trace": ["t.csv", "t.txt", "tsub.pto", "dir", "t.parquet", "a.npy"],
    "--sync": ["auto", "manual", "ideal", "bogus", "manual,auto"],
    "--max-instructions": ["10", "-1", "0", "x", "100000"],
    "--max-cycles": ["10", "-5", "1e9"],
    "--shape": ["-16x64", "16x64", "0x0", "16 x 64", "99999999x99999999"],
    "--dtype": ["f32", "f16", "x", "f32>f16"],
    "--target": ["a2a3", "a5", "a9", "/etc", "dir"],
    "--param": ["rows=16,16", "n=16,32", "height=64", "rows", "addr=0,32"],
    "--rows": ["-3", "5"],
    "--block-dim": ["0", "2", "-1"],
    "-o": ["r.parquet", "newmodel", "tsub.pto", "dir"],
    "--func": ["k", "@nope"],
    "--detail": ["op", "cce", "x"],
}
BARE = ["--timing-only", "--json", "--quiet", "--races", "--inplace", "--scalar-first"]
# hypothesis draws the first elements of a list most often: the kernels with scalar
# arguments, and the hostile values, come first
KERNELS = [
    "trelu.pto",
    "small.py",
    "tsub.pto",
    "trelu.pto",
    "small.py",
    "tsub.pto",
    "missing.pto",
    "dir",
    "a.npy",
]
# command -> (positional choices, flags that command knows); a few foreign ones are mixed in
COMMANDS = {
    "run": (
        KERNELS,
        [
            "--arg",
            "--arg",
            "--arg",
            "--input",
            "--output",
            "--trace",
            "--sync",
            "--max-instructions",
            "--max-cycles",
            "--target",
            "--rows",
            "--block-dim",
            "--func",
            "--detail",
            "--timing-only",
            "--json",
            "--quiet",
        ],
    ),
    "check": (KERNELS, ["--arg", "--input", "--target", "--races", "--block-dim"]),
    "compare": (KERNELS, ["--arg", "--input", "--target", "--json"]),
    "print": (KERNELS, []),
    "op": (
        ["TADD", "TEXP", "TCVT", "TNOPE", "TLOAD"],
        ["--shape", "--dtype", "--target", "--json", "--inplace", "--scalar-first"],
    ),
    "validate": (["cases.csv", "dir", "missing.pto", "a.npy", "tsub.pto"], ["--target", "--json"]),
    "calibrate": (["cases.csv", "dir", "a.npy"], ["-o", "--target"]),
    "sweep": (KERNELS, ["--param", "--target", "--sync", "-o"]),
}
ALL_FLAGS = sorted(VALUED) + BARE


def _setup(d: Path) -> None:
    shutil.copy(EXAMPLES / "tsub.pto", d / "tsub.pto")
    shutil.copy(EXAMPLES / "trelu.pto", d / "trelu.pto")
    (d / "small.py").write_text(SMALL_PY)
    np.save(d / "a.npy", np.arange(32 * 64, dtype=np.float32).reshape(32, 64))
    np.save(d / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (d / "cases.csv").write_text(CASES)
    (d / "dir").mkdir()
    np.save(d / "o.npy", np.zeros(3, np.float32))


def _inputs(args) -> set:
    """The files the command reads: its positional files, ``--input`` arrays, and every
    file of the fixture no output flag names (an output may replace a file it names)."""
    named = {
        v.partition("=")[2] if f == "--output" else v
        for f, v in pairwise(args)
        if f in ("--output", "--trace", "-o")
    }
    reads = {a for a in args[1:2]} | {
        v.partition("=")[2] for f, v in pairwise(args) if f == "--input"
    }
    return {f for f in FILES if f not in named} | (reads & set(FILES))


def _digests(d: Path, names) -> dict:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in d.iterdir()
        if p.is_file() and p.name in names
    }


def _flag(name: str):
    if name in VALUED:
        return st.sampled_from(VALUED[name]).map(lambda v: [name, v])
    return st.just([name])


@st.composite
def ARGV(draw):
    command = draw(st.sampled_from(sorted(COMMANDS) + ["bogus"] + ["run"] * 4))
    positional, known = COMMANDS.get(command, (KERNELS, ALL_FLAGS))
    args = [command, *draw(st.lists(st.sampled_from(positional), min_size=1, max_size=1))]
    if args[1] in ("trelu.pto", "small.py") and command in ("run", "check", "compare", "sweep"):
        name = "n" if args[1] == "trelu.pto" else draw(st.sampled_from(["n", "addr"]))
        values = [v for v in VALUED["--arg"] if v.startswith(name + "=")]
        value = draw(st.sampled_from(values))
        args += ["--param", value] if command == "sweep" else ["--arg", value]
    names = draw(st.lists(st.sampled_from(known), max_size=4)) if known else []
    if draw(st.integers(0, 9)) == 0:  # now and then a flag of another command
        names.append(draw(st.sampled_from(ALL_FLAGS)))
    if command == "calibrate" and "-o" not in names:
        names.append("-o")
    for name in names:
        args += draw(_flag(name))
    return args


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    _setup(d)
    return d


@settings(
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(args=ARGV())
def test_cli_argument_vectors_end_in_success_or_one_user_error(workdir, monkeypatch, capsys, args):
    args = list(args)
    if args[0] == "sweep":  # never start a cluster: a closed port ends it up front
        args += ["--scheduler", "tcp://127.0.0.1:1", *(["-o", "r.parquet"] * ("-o" not in args))]
    if args[0] == "run" and "--max-instructions" not in args:
        args += ["--max-instructions", "20000"]
    monkeypatch.chdir(workdir)
    before = _digests(workdir, _inputs(args))
    code = main(args)  # an exception escaping main fails the test itself
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out, (args, err)
    assert code in (0, 1, 2), (args, code, err)
    if code == 2:
        first = err.splitlines()[0] if err else ""
        assert ": error:" in first, (args, err)
    assert _digests(workdir, _inputs(args)) == before, args
    for p in workdir.rglob(".*.tmp*"):  # a temporary of an atomic write left behind
        pytest.fail(f"{args}: left {p}")


# --- builder call sequences --------------------------------------------------------------

_ADDR = st.sampled_from([0, 32, 4096, 3, -64, 10**9, 196608 - 4096])
_CALL = st.one_of(
    st.tuples(st.just("tile"), st.sampled_from([(16, 64), (8, 8), (64, 128), (0, 4), (-1, 8)])),
    st.tuples(st.just("gm"), st.sampled_from(["x", "y", "x"])),
    st.tuples(st.just("TLOAD"), st.integers(0, 3)),
    st.tuples(st.just("TSTORE"), st.integers(0, 3)),
    st.tuples(st.just("TADD"), st.integers(0, 3)),
    st.tuples(st.just("TEXP"), st.integers(0, 3)),
    st.tuples(st.just("TASSIGN"), _ADDR),
    st.tuples(
        st.just("flag"),
        st.sampled_from([("MTE2", "V", 0), ("V", "MTE3", 1), ("V", "MTE2", 9), ("MTE3", "V", -1)]),
    ),
    st.tuples(st.just("foreign"), st.just(None)),
)


def _apply(k, other, tiles, gms, call):
    name, arg = call
    if name == "tile":
        tiles.append(k.tile("vec", "f32", *arg))
    elif name == "gm":
        gms.append(k.gm(arg, "f32", (64, 128)))
    elif name == "foreign":
        tiles.append(other.tile("vec", "f32", 16, 64))
    elif name == "flag":
        src, dst, eid = arg
        (k.set_flag if eid % 2 == 0 else k.wait_flag)(src, dst, eid)
    elif name == "TASSIGN":
        if tiles:
            k.TASSIGN(tiles[-1], arg)
    elif tiles:
        t = tiles[arg % len(tiles)]
        if name in ("TLOAD", "TSTORE"):
            if not gms:
                return
            view = gms[arg % len(gms)][0 : t.type.rows, 0 : t.type.cols]
            k.TLOAD(t, view) if name == "TLOAD" else k.TSTORE(view, t)
        else:
            getattr(k, name)(t, t, t) if name == "TADD" else getattr(k, name)(t, t)


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(
    calls=st.lists(_CALL, max_size=10),
    target=st.sampled_from(["a2a3", "a5"]),
    sync=st.sampled_from([None, "auto", "manual"]),
)
def test_builder_call_sequences_build_and_run_or_raise_a_user_error(calls, target, sync):
    from sim.engine.limits import Limits

    k, other = sim.Kernel("fz"), sim.Kernel("other")
    # a prelude that works, so that the calls drawn reach the runs, not only the builder
    gms = [k.gm("in", "f32", (64, 128)), k.gm("out", "f32", (64, 128))]
    tiles = [k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 64, 128)]
    try:
        for call in calls:
            _apply(k, other, tiles, gms, call)
        sim.simulate(k, target, functional=False, sync=sync, limits=Limits(max_instructions=10**4))
    except UserError:
        pass
