"""Hostile input, beyond one bad flag: wrong results with exit 0, tracebacks, lost data and
unclear messages, each now one clear line and exit 2 (or a refusal before any work), with
outputs replaced whole or not at all; the one static check of addresses, sizes and bounds
that ``check``, ``run`` (every mode), the builder and ``sweep`` share; scalar-only loops
under ``--max-instructions``; lazy sweeps.

Each case calls ``sim.cli.main(argv)`` in-process from a temporary directory. Network
cases use 127.0.0.1 only, with bounded time-outs.
"""

from __future__ import annotations

import http.server
import pathlib
import socket
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_fixtures import one_line_error
from dask_fixtures import local_client
from hang_guard import hang_guard

import sim
from sim.base.errors import UserError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TRELU = str(EXAMPLES / "trelu.pto")  # %n: rows; sizes the tensor views, bounds the loop
TSUB = str(EXAMPLES / "tsub.pto")
TILED = str(EXAMPLES / "relu_sub_tiled.py")


def _addr_pto(addr: int, buf: str = "vec") -> str:
    return textwrap.dedent(f"""\
        module {{
          func.func @k(%px: !pto.ptr<f32>, %po: !pto.ptr<f32>) {{
            %c0 = arith.constant 0 : index
            %c1 = arith.constant 1 : index
            %c16 = arith.constant 16 : index
            %c64 = arith.constant 64 : index
            %a = arith.constant {addr} : i64
            %tx = pto.make_tensor_view %px, shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
            %to = pto.make_tensor_view %po, shape = [%c16, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xf32>
            %vx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
            %vo = pto.partition_view %to, offsets = [%c0, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>
            %x = pto.alloc_tile addr = %a : !pto.tile_buf<{buf}, 16x64xf32>
            pto.tload ins(%vx : !pto.partition_tensor_view<16x64xf32>) outs(%x : !pto.tile_buf<{buf}, 16x64xf32>)
            pto.tstore ins(%x : !pto.tile_buf<{buf}, 16x64xf32>) outs(%vo : !pto.partition_tensor_view<16x64xf32>)
            return
          }}
        }}
        """)


TASSIGN_PY = textwrap.dedent("""\
    import sim

    def build(addr=0):
        k = sim.Kernel("ta")
        x = k.gm("x", "f32", (16, 64))
        o = k.gm("o", "f32", (16, 64))
        t = k.tile("vec", "f32", 16, 64)
        k.TASSIGN(t, addr)
        k.TLOAD(t, x[0:16, :])
        k.TSTORE(o[0:16, :], t)
        return k
    """)

# (address, rule broken) on A2/A3's 192 KiB UB with 32-byte alignment; a 4 KiB tile
BAD_ADDRESSES = [
    (1_000_000_000, "rule: capacity"),
    (3, "rule: alignment"),
    (-64, "rule: capacity"),
    (196608 - 2048, "rule: capacity"),
]


# --- one static check: check and run agree, in every mode ---------------------------------


@pytest.mark.parametrize("addr, rule", BAD_ADDRESSES)
def test_check_and_run_in_every_mode_refuse_the_same_constant_alloc_address(
    cli, tmp_path, addr, rule
):
    (tmp_path / "k.pto").write_text(_addr_pto(addr))
    first = one_line_error(*cli("check", "k.pto")[::2], rule, "%x", "k.pto:12:")
    for mode in ("auto", "manual", "ideal"):
        line = one_line_error(*cli("run", "k.pto", "--sync", mode)[::2], rule)
        # the same rule, the same words: run's first problem is check's first
        assert (
            line.split("k.pto:", 1)[1].split(" (and ")[0]
            == first.split("k.pto:", 1)[1].split("; k.pto:")[0]
        )


@pytest.mark.parametrize("addr", [0, 4096, 0x2E000 - 4096])  # below the TMP_UB scratch
def test_a_good_constant_address_runs_in_every_mode(cli, tmp_path, addr):
    (tmp_path / "k.pto").write_text(_addr_pto(addr))
    assert cli("check", "k.pto")[0] == 0
    for mode in ("auto", "manual"):
        code, out, err = cli("run", "k.pto", "--sync", mode, "--json")
        assert code == 0, err


@pytest.mark.parametrize("addr, rule", BAD_ADDRESSES)
def test_builder_tassign_is_refused_in_auto_mode_as_check_and_manual_refuse_it(
    cli, tmp_path, addr, rule
):
    (tmp_path / "ta.py").write_text(TASSIGN_PY)
    arg = f"addr={addr}"
    for argv in (
        ("check", "ta.py"),
        ("run", "ta.py"),
        ("run", "ta.py", "--sync", "manual"),
        ("run", "ta.py", "--sync", "auto"),
    ):
        one_line_error(*cli(*argv, "--arg", arg)[::2], rule, "TASSIGN", "%t")
    k = sim.kernel.files.load_kernel(str(tmp_path / "ta.py"), [("addr", str(addr))])
    with pytest.raises(UserError, match=rule):  # the API too (sweep rows run this)
        sim.simulate(k, functional=False)


@pytest.mark.parametrize("n", [-16, -1, -4096])
def test_a_negative_scalar_that_sizes_a_view_or_bounds_a_loop_is_refused(cli, n):
    for cmd in ("run", "check"):
        one_line_error(
            *cli(cmd, TRELU, f"--arg=n={n}")[::2],
            f"%n = {n}",
            "sizes or bounds",
            "expected a value >= 0",
            "static check failed" if cmd == "check" else "",
        )
    code, out, err = cli("run", TRELU, "--arg", "n=64", "--json")  # the same kernel runs
    assert code == 0 and '"total_cycles": 0' not in out, err


@pytest.mark.parametrize(
    "text",
    [
        "9223372036854775808",
        "99999999999999999999999",
        "-9223372036854775809",
        "0x10000000000000000",
    ],
)
def test_an_index_argument_beyond_64_bits_is_one_line(cli, text):
    one_line_error(*cli("run", TRELU, f"--arg=n={text}")[::2], "out of range for index")


@pytest.mark.parametrize("n", [2**63 - 1, 2**61, 2**57])
def test_a_view_an_argument_makes_too_large_for_64_bits_is_refused_by_check_and_run(cli, n):
    # n x 64 f32 elements: 2^57 rows reach 2^63 bytes (once a ValueError traceback)
    for cmd in ("check", "run"):
        one_line_error(
            *cli(cmd, TRELU, f"--arg=n={n}")[::2],
            "make_tensor_view %tx",
            "more bytes than a 64-bit address reaches",
        )


def test_an_argument_given_twice_is_refused_not_the_last_kept(cli, tmp_path):
    one_line_error(
        *cli("run", TRELU, "--arg", "n=16", "--arg", "n=32")[::2], "--arg n: given twice"
    )
    np.save(tmp_path / "a.npy", np.zeros((32, 64), np.float32))
    one_line_error(
        *cli("run", TSUB, "--input", "pa=a.npy", "--input", "pa=a.npy")[::2],
        "--input pa: given twice",
    )


# --- outputs: no made-up data, no wrong format, nothing half written ------------------------


def test_timing_only_output_is_refused_and_leaves_the_file(cli, tmp_path):
    (tmp_path / "o.npy").write_bytes(b"old")
    one_line_error(
        *cli("run", TSUB, "--timing-only", "--output", "po=o.npy")[::2],
        "--timing-only",
        "computes no data",
    )
    assert (tmp_path / "o.npy").read_bytes() == b"old"


@pytest.mark.parametrize("name", ["o.csv", "o.txt", "o", "o.parquet"])
def test_output_needs_the_npy_suffix_it_writes(cli, tmp_path, name):
    one_line_error(
        *cli("run", TSUB, "--output", f"po={name}")[::2], "unknown suffix", "expected one of .npy"
    )
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".json"])
def test_a_trace_write_that_fails_leaves_the_old_file_whole(cli, tmp_path, monkeypatch, suffix):
    from sim.trace import export

    old = tmp_path / f"t{suffix}"
    old.write_bytes(b"old trace")

    def torn(trace, path, **kw):
        Path(path).write_bytes(b"half")
        raise UserError("disk full")

    monkeypatch.setattr(export, "_function", lambda where: torn)  # every writer fails
    one_line_error(*cli("run", TSUB, "--trace", old.name)[::2], "disk full")
    assert old.read_bytes() == b"old trace"
    assert sorted(p.name for p in tmp_path.iterdir()) == [old.name]  # no temporary left


# --- builder mistakes --------------------------------------------------------------------


def _fifo_kernel():
    k = sim.Kernel("f")
    c2v = k.fifo("c2v", "f32", 16, 16)
    return k, c2v


def test_builder_refuses_a_popped_tile_after_tfree_and_tfree_twice():
    k, c2v = _fifo_kernel()
    with k.vector():
        t = k.tpop(c2v)
        k.TEXP(t, t)
        k.tfree(c2v)
        with pytest.raises(
            UserError, match=r"was given back to its FIFO by tfree at .*: tpop again"
        ):
            k.TEXP(t, t)
        with pytest.raises(UserError, match="no popped tile to give back"):
            k.tfree(c2v)
        u, v = k.tpop(c2v), k.tpop(c2v)  # two popped: two frees, oldest first
        k.tfree(c2v)
        k.TEXP(v, v)
        with pytest.raises(UserError, match="tfree"):
            k.TEXP(u, u)
        k.tfree(c2v)


def test_builder_refuses_a_tile_or_fifo_of_another_kernel():
    a, b = sim.Kernel("a"), sim.Kernel("b")
    ta = a.tile("vec", "f32", 16, 64)
    b.tile("vec", "f32", 16, 64)  # b's own tile has the same name and type
    with pytest.raises(UserError, match="not declared in kernel b"):
        b.TEXP(ta, ta)
    _, fifo = _fifo_kernel()
    k, _ = _fifo_kernel()
    with k.vector(), pytest.raises(UserError, match="FIFO was not declared in kernel f"):
        k.tpop(fifo)


@pytest.mark.parametrize("first", ["gm", "tile"])
def test_builder_refuses_a_second_gm_of_the_same_name(first):
    k = sim.Kernel("g")
    if first == "gm":
        k.gm("x", "f32", (16, 64))
    else:
        k.tile("vec", "f32", 16, 64, name="x")
    with pytest.raises(UserError, match="named 'x' is already declared"):
        k.gm("x", "f32", (16, 64))


# --- a scalar-only loop is bounded and seen ----------------------------------------------

SPIN = textwrap.dedent("""\
    module {
      func.func @spin(%n: index) {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
          %s = arith.addi %acc, %i : index
          scf.yield %s : index
        }
        return
      }
    }
    """)


@pytest.mark.parametrize("limit", [10, 5000, 50_000])
def test_a_scalar_only_loop_stops_at_max_instructions(cli, tmp_path, limit):
    (tmp_path / "spin.pto").write_text(SPIN)
    with hang_guard(60):
        line = one_line_error(
            *cli(
                "run",
                "spin.pto",
                "--arg",
                "n=1000000000",
                "--max-instructions",
                limit,
                "--max-cycles",
                10,
            )[::2],
            f"--max-instructions {limit}",
            "loop iterations",
        )
    stopped = int(line.split(" and ")[-1].split()[0])
    assert limit < stopped <= limit + 4096


def test_a_scalar_only_loop_reports_progress():
    from sim.engine.limits import Limits
    from sim.frontend import parse_text

    seen = []
    sim.simulate(
        parse_text(SPIN),
        inputs={"n": 20_000},
        functional=False,
        limits=Limits(progress=lambda items, cycle: seen.append(items)),
    )
    assert seen and max(seen) >= 16384 and seen == sorted(seen)


# --- unreadable files, directories, odd values -----------------------------------------


@pytest.mark.parametrize("command", ["validate", "calibrate"])
def test_an_unreadable_cases_file_is_one_line(cli, tmp_path, monkeypatch, command):
    f = tmp_path / "m.csv"
    f.write_text("op,dtype,rows,cols,valid_rows,valid_cols,variant,measured_cycles\n")
    real = pathlib.Path.read_text

    def denied(self, *a, **kw):
        if self.name == "m.csv":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *a, **kw)

    monkeypatch.setattr(pathlib.Path, "read_text", denied)
    extra = ("-o", "new_model") if command == "calibrate" else ()
    one_line_error(*cli(command, "m.csv", *extra)[::2], "m.csv: cannot read: Permission denied")


def test_validate_a_directory_says_so(cli, tmp_path):
    (tmp_path / "d").mkdir()
    one_line_error(*cli("validate", "d")[::2], "d: is a directory")


@pytest.mark.parametrize(
    "flag, value", [("--shape", "-16x64"), ("--shape", "-1x-1"), ("--valid", "-4x64")]
)
def test_op_negative_shape_is_checked_not_taken_for_a_flag(cli, flag, value):
    line = one_line_error(*cli("op", "TADD", flag, value)[::2], "must be positive")
    assert "expected one argument" not in line


def test_a_pickled_npy_input_never_suggests_loading_pickles(cli, tmp_path):
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    line = one_line_error(
        *cli("run", TSUB, "--input", "pa=obj.npy")[::2], "obj.npy", "not a numeric .npy array"
    )
    assert "allow_pickle" not in line and "pickle.load" not in line and "trust" not in line


def test_ctrl_c_in_build_names_where(cli, tmp_path):
    (tmp_path / "slow.py").write_text("def build():\n    raise KeyboardInterrupt\n")
    code, out, err = cli("run", "slow.py")
    assert code == 130 and "Traceback" not in err
    assert err.strip() == "ptosim: interrupted while building the kernel (at slow.py:2)"


def test_result_output_of_an_unknown_name_names_the_outputs():
    k = sim.Kernel("o")
    x, y = k.gm("x", "f32", (16, 64)), k.gm("y", "f32", (16, 64))
    t = k.tile("vec", "f32", 16, 64)
    k.TLOAD(t, x[0:16, :])
    k.TSTORE(y[0:16, :], t)
    r = sim.simulate(k)
    with pytest.raises(UserError, match=r"no GM argument 'nope' \(GM arguments: x, y\)"):
        r.output("nope")
    with pytest.raises(KeyError):  # still a KeyError for code that catches one
        r.output("nope")


# --- compare on a deadlock ---------------------------------------------------------------

DEAD_PY = textwrap.dedent("""\
    import sim

    def build():
        k = sim.Kernel("dead")
        x = k.gm("x", "f32", (16, 64))
        t = k.tile("vec", "f32", 16, 64)
        k.TLOAD(t, x[0:16, :])
        k.wait_flag("MTE3", "V", 0)
        k.TRELU(t, t)
        return k
    """)


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_compare_on_a_deadlock_exits_2_naming_it(cli, tmp_path, json_flag):
    (tmp_path / "dead.py").write_text(DEAD_PY)
    code, out, err = cli("compare", "dead.py", *json_flag)
    assert code == 2 and "Traceback" not in err
    assert err.startswith("ptosim: error: the manual run deadlocked") and "dead.py:8" in err
    assert out  # the table (what did run) is still shown


# --- sweep: up-front refusals, the scheduler, the journal, the output -------------------


@pytest.mark.parametrize(
    "argv, what",
    [
        (["--target", "a9"], "unknown target 'a9'"),
        (["--target", "a2a3", "nonsense"], "unknown target 'nonsense'"),
        (["--param", "rows=16,16"], "--param rows: value 16 listed twice"),
        (["--param", "rows=8,16,8,16"], "values 16, 8 listed twice"),
        (["--scheduler", "nonsense"], "expected a Dask scheduler address tcp://HOST:PORT"),
        (["--scheduler", "http://127.0.0.1:8786"], "expected a Dask scheduler address"),
        (["--scheduler", "tcp://127.0.0.1:99999"], "expected a Dask scheduler address"),
        (["--scheduler", "tcp://127.0.0.1:1"], "cannot connect"),
    ],
)
def test_sweep_refuses_up_front_and_keeps_an_existing_output(cli, tmp_path, argv, what):
    out = tmp_path / "ex.parquet"
    out.write_bytes(b"PAR1 an older sweep's rows PAR1")
    t0 = time.monotonic()
    one_line_error(*cli("sweep", TILED, "--param", "height=64", *argv, "-o", out)[::2], what)
    assert time.monotonic() - t0 < 30
    assert out.read_bytes() == b"PAR1 an older sweep's rows PAR1"


def _server(kind: str):
    """A 127.0.0.1 port that is not a Dask scheduler: a web server, a silent listener
    (accepts, never speaks) or one that sends junk at once."""
    if kind == "http":
        srv = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        return srv.server_address[1], srv.shutdown
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    if kind == "junk":

        def talk():
            with s.accept()[0] as c:
                c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                time.sleep(1)

        threading.Thread(target=talk, daemon=True).start()
    return s.getsockname()[1], s.close


@pytest.mark.parametrize(
    "kind, what",
    [
        ("http", "sends no Dask handshake within 1 s"),
        ("silent", "sends no Dask handshake within 1 s"),
        ("junk", "answers, but not as a Dask scheduler"),
    ],
)
def test_sweep_scheduler_that_is_not_dask_is_refused_in_bounded_time(
    cli, tmp_path, monkeypatch, kind, what
):
    from sim.studies import sweep

    monkeypatch.setattr(sweep, "CONNECT_S", 1)
    port, stop = _server(kind)
    try:
        t0 = time.monotonic()
        with hang_guard(30):
            one_line_error(
                *cli(
                    "sweep",
                    TILED,
                    "--param",
                    "height=64",
                    "--scheduler",
                    f"tcp://127.0.0.1:{port}",
                    "-o",
                    "r.parquet",
                )[::2],
                what,
            )
        assert time.monotonic() - t0 < 10
    finally:
        stop()
    assert not (tmp_path / "r.parquet").exists()


@pytest.mark.parametrize("junk", [b"\xff\xfe\x00binary", bytes(range(256))])
def test_a_binary_journal_is_one_line(cli, tmp_path, junk):
    (tmp_path / "r.parquet.journal").write_bytes(junk)
    one_line_error(
        *cli("sweep", TILED, "--param", "height=64", "-o", "r.parquet")[::2],
        "r.parquet.journal: not a sweep journal",
        "delete it",
    )
    assert (tmp_path / "r.parquet.journal").read_bytes() == junk


def test_sweep_configurations_are_generated_lazily():
    from sim.studies.sweep import configurations

    values = {"rows": list(range(2000)), "cols": list(range(1000))}  # 2 * 10^6
    t0 = time.monotonic()
    gen = configurations(TILED, values, None, [None])
    first = next(gen)
    assert time.monotonic() - t0 < 2
    assert first.params == {"rows": 0, "cols": 0} and next(gen).params == {"rows": 0, "cols": 1}


@pytest.mark.parametrize("placed", ["callee", "no fit"])
def test_manual_placement_errors_do_not_say_auto(placed):
    from sim.engine.placement import place_tiles
    from sim.frontend import parse_text
    from sim.target import load_target

    # 7 tiles of 32 KiB in a 192 KiB UB: first fit fails; a callee tile forbids liveness
    tiles = "\n".join(
        f"    %t{i} = pto.alloc_tile : !pto.tile_buf<vec, 64x128xf32>" for i in range(7)
    )
    uses = "\n".join(
        f"    pto.trelu ins(%t{i} : !pto.tile_buf<vec, 64x128xf32>) outs(%t{i} : "
        f"!pto.tile_buf<vec, 64x128xf32>)"
        for i in range(7)
    )
    callee = (
        (
            "  func.func private @g() {\n    %u = pto.alloc_tile : "
            "!pto.tile_buf<vec, 16x64xf32>\n    return\n  }\n"
        )
        if placed == "callee"
        else ""
    )
    call = "    func.call @g() : () -> ()\n" if placed == "callee" else ""
    # without a callee, every tile is used again at the end: all live at once, no fit
    again = "" if placed == "callee" else uses
    text = (
        f"module {{\n{callee}  func.func @k() {{\n{tiles}\n{uses}\n{again}\n{call}"
        f"    return\n  }}\n}}\n"
    )
    with pytest.raises(UserError) as e:
        place_tiles(parse_text(text), load_target("a2a3"))
    assert str(e.value).startswith("placement: "), str(e.value)
    assert ("callees" in str(e.value)) == (placed == "callee")


def test_ctrl_c_in_a_sweep_of_two_million_stops_at_once_and_keeps_the_rows(
    tmp_path, monkeypatch, capsys
):
    pytest.importorskip("distributed")

    from sim.studies import sweep as sw

    done = []

    def update(self, failed):
        done.append(failed)
        if len(done) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(sw._Progress, "update", update)
    out = tmp_path / "r.parquet"
    with (
        local_client(workers=1, processes=False) as client,
        hang_guard(120),
    ):
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            sim.sweep(
                TILED,
                {
                    "rows": [8, 16],
                    "cols": [16, 32],
                    "buffers": [1, 2],
                    "height": list(range(64, 64 + 64 * 500, 64)),
                    "width": list(range(64, 64 + 64 * 500, 64)),
                },
                sync="manual",
                scheduler=client,
                output=out,
                progress=False,
            )
        assert time.monotonic() - t0 < 60
    err = capsys.readouterr().err
    assert "the sweep has 2,000,000 configurations" in err
    assert len(pd.read_parquet(out)) >= 3


def test_a_reshaped_tile_belongs_to_its_kernel_and_a_foreign_one_cannot_be_reshaped():
    k, other = sim.Kernel("r"), sim.Kernel("o")
    t = k.tile("vec", "f32", 8, 64)
    flat = k.reshape(t, 1, 512)
    k.TEXPANDS(flat, 1.0)  # the view is the kernel's own tile
    with pytest.raises(UserError, match="not declared in kernel o"):
        other.reshape(t, 1, 512)
