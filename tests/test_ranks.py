"""Runs with ranks: N NPUs joined by the link model (sim.engine.ranks, sim.engine.links).

Data is checked against numpy references built from each rank's own inputs; times against
figures read straight from models/a2a3/machine.toml, not through the simulator's loaders.
"""

from __future__ import annotations

import importlib.util
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

import sim
from sim.base.errors import DeadlockError, UserError
from sim.isa.comm import chunks, notify, satisfied
from sim.kernel.files import kernel_source

ROOT = Path(__file__).resolve().parent.parent
MACHINE = tomllib.loads((ROOT / "models" / "a2a3" / "machine.toml").read_text())
COMM = MACHINE["comm"]
CLOCK = MACHINE["target"]["clock_hz"]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / "comm" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- the ISA rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cmp", "ref"),
    [
        ("eq", np.equal),
        ("ne", np.not_equal),
        ("gt", np.greater),
        ("ge", np.greater_equal),
        ("lt", np.less),
        ("le", np.less_equal),
    ],
)
def test_wait_compare_modes_need_every_element(cmp, ref):
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = rng.integers(-3, 4, size=int(rng.integers(1, 6))).astype(np.int32)
        c = int(rng.integers(-3, 4))
        assert satisfied(values, cmp, c) == all(ref(v, c) for v in values.tolist())


def test_notify_set_and_atomic_add_wrap_as_int32():
    assert notify(5, "set", 9) == 9
    assert notify(5, "atomic_add", 9) == 14
    assert notify(5, "atomic_add", -7) == -2
    assert notify(2**31 - 1, "atomic_add", 1) == -(2**31)  # the hardware atomic wraps


def test_chunks_cover_the_transfer_once():
    for rows, cols, sr, sc in [(64, 256, 64, 256), (1, 4096, 1, 1024), (64, 64, 16, 32)]:
        seen = np.zeros((rows, cols), int)
        for r, nr, c, nc in chunks(rows, cols, sr, sc):
            assert nr <= sr and nc <= sc
            seen[r : r + nr, c : c + nc] += 1
        assert (seen == 1).all()
    assert len(chunks(1, 4096, 1, 1024)) == 4
    assert chunks(0, 16, 4, 4) == []
    with pytest.raises(UserError, match="not a multiple"):
        chunks(10, 16, 4, 16)


# --- data between ranks ----------------------------------------------------------------------


@pytest.mark.parametrize(("n", "ring"), [(2, False), (4, False), (3, True), (4, True)])
def test_allgather_every_rank_ends_with_every_block(n, ring):
    k = _example("allgather").build(ranks=n, rows=8, cols=64, ring=ring)
    r = sim.simulate(k, ranks=n)
    srcs = [r.output("src", i).reshape(8, 64) for i in range(n)]
    assert not np.array_equal(srcs[0], srcs[1])  # each rank's data is its own
    expect = np.concatenate(srcs)
    for i in range(n):
        assert np.array_equal(r.output("out", i).reshape(8 * n, 64), expect), i


def test_tget_pulls_the_peers_data_and_inputs_per_rank():
    k = sim.Kernel("pull")
    me = k.rank_idx
    src = k.gm("src", "f16", (4, 32))
    dst = k.gm("dst", "f16", (4, 32))
    stage = k.tile("vec", "f16", 2, 32)  # two chunks
    k.TGET(dst, src, stage, peer=(me + 1) % 3)
    data = [np.full((4, 32), i + 1, np.float16) * np.arange(32, dtype=np.float16) for i in range(3)]
    r = sim.simulate(
        k, ranks=3, inputs=[{"src": d, "dst": np.zeros((4, 32), np.float16)} for d in data]
    )
    for i in range(3):
        assert np.array_equal(r.output("dst", i).reshape(4, 32), data[(i + 1) % 3])
        assert np.array_equal(r.output("src", i).reshape(4, 32), data[i])  # untouched


def test_tput_atomic_add_sums_every_ranks_block_on_the_root():
    n = 4
    k = sim.Kernel("reduce")
    src = k.gm("src", "f32", (8, 16))
    acc = k.gm("acc", "f32", (8, 16), np.zeros((8, 16), np.float32))
    stage = k.tile("vec", "f32", 8, 16)
    k.TPUT(acc, src, stage, peer=0, atomic="atomic_add")
    rng = np.random.default_rng(5)  # integers: f32 sums exact in any order of arrival
    data = [rng.integers(-50, 50, (8, 16)).astype(np.float32) for _ in range(n)]
    r = sim.simulate(k, ranks=n, inputs=[{"src": d} for d in data])
    assert np.array_equal(r.output("acc", 0).reshape(8, 16), sum(data))
    for i in range(1, n):
        assert not r.output("acc", i).any()


def test_ttest_answers_each_compare_mode_when_it_issues():
    k = sim.Kernel("probe")
    sig = k.gm("sig", "i32", (1, 2), np.array([[3, 7]], np.int32))
    seen = k.gm("seen", "i32", (1, 6), np.full((1, 6), -1, np.int32))
    modes = ("eq", "ne", "gt", "ge", "lt", "le")
    answers = [k.TTEST(sig, 3, cmp=c) for c in modes]
    for i, ok in enumerate(answers):  # each answer written back locally as a value
        k.TNOTIFY(seen.view(1, 1, col=i), ok, op="set")
    r = sim.simulate(k, ranks=1)
    ref = [
        all(f(v, 3) for v in (3, 7))
        for f in (np.equal, np.not_equal, np.greater, np.greater_equal, np.less, np.less_equal)
    ]
    assert r.output("seen", 0).tolist() == [int(x) for x in ref]
    polls = t = r.ranks[0].trace
    polls = t[t.opcode == "TTEST"]
    assert (polls.duration_cycles == 2 * COMM["signals"]["poll_cycles_per_element"]).all()


# --- time ------------------------------------------------------------------------------------


def _remote_cycles(nbytes: int) -> float:
    links = COMM["links"]
    return links["latency_cycles"] + nbytes / (links["bandwidth_gb_per_s"] * 1e9 / CLOCK)


def _local_store_cycles(nbytes: int) -> float:
    path = MACHINE["dma"]["paths"]["UB_GM"]
    return path["startup_cycles"] + nbytes // (path["bandwidth_gib_per_s"] * 2**30 / CLOCK)


# The TGET benchmark's device time is an average over iterations of one launch (comm
# §10.1), whose GM pages are warm: the first touch's page walks made free
WARM = "gm_first_touch"


def _tget_kernel(nbytes: int) -> sim.Kernel:
    """The TGET benchmark of communication.md §8.4: a single block, a 1 x 1024 f32 staging
    tile (4 KB chunks, no pong)."""
    k = sim.Kernel("tget_bw")
    n = nbytes // 4
    src = k.gm("send", "f32", (1, n))
    dst = k.gm("recv", "f32", (1, n))
    stage = k.tile("vec", "f32", 1, 1024)
    k.TGET(dst, src, stage, peer=1)
    return k


def test_tget_chunks_are_serial_remote_loads_and_local_stores():
    for nbytes in (4096, 65536):
        r = sim.simulate(_tget_kernel(nbytes), ranks=2, functional=False, free=WARM)
        per_chunk = _remote_cycles(4096) + _local_store_cycles(4096)
        assert abs(r.ranks[0].total_cycles - nbytes // 4096 * per_chunk) <= nbytes // 4096


# communication.md §10.1, README set: TGET device cycles are SYS_CNT ticks of 20 ns
_TGET_TICKS = {4096: 36.28, 16384: 149.98, 65536: 579.62, 262144: 2409.72, 1048576: 9317.93}


@pytest.mark.parametrize("nbytes", sorted(_TGET_TICKS))
def test_tget_device_time_within_15_percent_of_the_public_table(nbytes):
    r = sim.simulate(_tget_kernel(nbytes), ranks=2, functional=False, trace="none", free=WARM)
    ticks = r.ranks[0].total_cycles / CLOCK / 20e-9
    assert abs(ticks / _TGET_TICKS[nbytes] - 1) <= 0.15


def test_a_signal_lands_one_link_latency_later_and_wakes_the_waiter_one_poll_after():
    k = sim.Kernel("ping")
    me = k.rank_idx
    sig = k.gm("sig", "i32", (1, 1), np.zeros((1, 1), np.int32))
    # rank 0 notifies rank 1 at once; rank 1 waits for it
    k.TNOTIFY(sig, 1, op="set", peer=1 - me)
    k.TWAIT(sig, 1, cmp="eq")
    r = sim.simulate(k, ranks=2)
    s = COMM["signals"]
    lands = s["notify_cycles"] + COMM["links"]["latency_cycles"]
    for res in r.ranks:
        t = res.trace
        wait = t[t.opcode == "TWAIT"].iloc[0]
        assert wait.end_cycle == lands + s["poll_cycles_per_element"]
    assert r.total_cycles == lands + s["poll_cycles_per_element"]


def test_ring_topology_counts_hops_and_full_mesh_one():
    import attrs

    from sim.engine.links import Links
    from sim.target import load_target

    tgt = load_target("a2a3")
    ring = attrs.evolve(tgt, comm={**tgt.comm, "topology": "ring"})
    mesh, rl = Links(None, tgt, 8), Links(None, ring, 8)
    for a in range(8):
        for b in range(8):
            d = abs(a - b)
            assert mesh.hops(a, b) == (a != b)
            assert rl.hops(a, b) == min(d, 8 - d)
    extra = rl.remote_cycles(0, 4, 4096) - rl.remote_cycles(0, 1, 4096)
    assert abs(extra - 3 * COMM["links"]["latency_cycles"]) <= 1
    with pytest.raises(UserError, match="topology"):
        Links(None, attrs.evolve(tgt, comm={**tgt.comm, "topology": "torus"}), 2)


def test_a_twait_nobody_satisfies_is_a_deadlock_naming_rank_signal_and_value():
    k = sim.Kernel("stuck")
    sig = k.gm("sig", "i32", (1, 1), np.zeros((1, 1), np.int32))
    k.TNOTIFY(sig, 1, op="atomic_add", peer=0)  # every rank adds 1 to rank 0's counter
    k.TWAIT(sig, 5, cmp="ge")  # 3 ranks never make 5
    with pytest.raises(DeadlockError) as e:
        sim.simulate(k, ranks=3)
    msg = str(e.value)
    for r in range(3):
        assert f"rank {r} core 0 AIV0: TWAIT" in msg
    assert "signal %sig[0] >= 5" in msg
    assert "holds [3]" in msg  # rank 0 got every add
    assert "holds [0]" in msg


# --- refusals and the one-chip path ----------------------------------------------------------


def test_refusals_name_what_is_wrong():
    k = _example("allgather").build(ranks=2, rows=8, cols=64)
    with pytest.raises(UserError, match="needs ranks"):
        sim.simulate(k)
    with pytest.raises(UserError, match="peer rank 1 is outside"):
        sim.simulate(k, ranks=1)
    with pytest.raises(UserError, match="max_ranks"):
        sim.simulate(k, ranks=9)
    with pytest.raises(UserError, match="no \\[comm\\] link model"):
        sim.simulate(k, "a5", ranks=2)
    with pytest.raises(UserError, match="one dict per rank"):
        sim.simulate(k, ranks=2, inputs=[{}])


def test_rank_ids_on_one_chip_and_with_ranks():
    k = sim.Kernel("ids")
    me, n = k.rank_idx, k.rank_num
    out = k.gm("out", "i32", (1, 8), np.zeros((1, 8), np.int32))
    sig = k.gm("sig", "i32", (1, 1), np.zeros((1, 1), np.int32))
    # rank r sets word r of rank 0 to r + 7; every rank adds the rank count to its sig
    k.TNOTIFY(out.view(1, 1, col=me), me + 7, op="set", peer=0)
    k.TNOTIFY(sig, n, op="atomic_add", peer=0)
    r = sim.simulate(k, ranks=4)
    assert r.output("out", 0).tolist() == [7, 8, 9, 10, 0, 0, 0, 0]
    assert r.output("sig", 0).tolist() == [16]
    one = sim.simulate(k, ranks=1)
    assert one.output("out", 0).tolist() == [7, 0, 0, 0, 0, 0, 0, 0]
    assert one.output("sig", 0).tolist() == [1]


def test_cli_run_with_ranks_reports_every_rank(capsys, tmp_path, monkeypatch):
    from sim.cli import main

    monkeypatch.chdir(tmp_path)
    path = str(ROOT / "examples" / "comm" / "allgather.py")
    argv = ["run", path, "--ranks", "2", "--arg", "ranks=2", "--arg", "rows=8", "--arg", "cols=64"]
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["ranks"] == 2 and len(got["per_rank"]) == 2
    assert got["total_cycles"] == max(p["total_cycles"] for p in got["per_rank"])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "=== rank 0:" in out and "=== rank 1:" in out


# --- the .pto spellings ----------------------------------------------------------------------

PTO = ROOT / "examples" / "comm" / "allgather.pto"


@pytest.mark.parametrize("n", [2, 4])
def test_allgather_pto_addresses_peers_through_the_context(n):
    from sim.frontend import parse_file

    r = sim.simulate(
        parse_file(str(PTO)),
        ranks=n,
        comm_context="ctx",
        inputs={"arrived": np.zeros(1, np.int32), "out": np.zeros(16 * 64 * n, np.float32)},
    )
    srcs = [r.output("src", i)[: 16 * 64] for i in range(n)]
    for i in range(n):
        assert np.array_equal(r.output("out", i), np.concatenate(srcs)), i
        assert r.output("arrived", i).tolist() == [n]
        assert r.output("ctx", i)[2] == i | (n << 32)


def test_comm_ops_print_back_as_they_parse():
    from sim.frontend import parse_file, parse_text
    from sim.frontend.printer import print_program

    text = print_program(parse_file(str(PTO)))
    for op in ("pto.comm.tput(", "pto.comm.tnotify(", "pto.comm.twait("):
        assert op in text
    assert "buf(%stage)" in text and "#pto<wait_cmp ge>" in text
    assert print_program(parse_text(text)) == text


_SIG = "!pto.partition_tensor_view<1x1xi32>"
_TV = "!pto.tensor_view<?x?xi32>"


def _sig_kernel(op_line: str) -> str:
    return f"""
module {{
  func.func @k(%s: !pto.ptr<i32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = arith.constant 3 : i32
    %t = pto.make_tensor_view %s, shape = [%c1, %c1], strides = [%c1, %c1] : {_TV}
    %sv = pto.partition_view %t, offsets = [%c0, %c0], sizes = [%c1, %c1] : {_TV} -> {_SIG}
    {op_line}
    return
  }}
}}
"""


def test_ttest_parses_with_its_i1_result_and_bad_forms_are_refused():
    from sim.frontend import parse_text
    from sim.isa.comm import CommOp
    from sim.isa.program import walk

    p = parse_text(
        _sig_kernel(
            f"%ok = pto.comm.ttest(%sv, %v : {_SIG}, i32) {{cmp = #pto<wait_cmp gt>}} -> i1"
        )
    )
    (op,) = [st for st in walk(p.main.body) if isinstance(st, CommOp)]
    assert op.op == "pto.comm.ttest" and op.attr("cmp") == "gt"
    assert op.results[0].type == "i1"
    with pytest.raises(UserError, match="wait_cmp|expected one of"):
        parse_text(
            _sig_kernel(f"pto.comm.twait(%sv, %v : {_SIG}, i32) {{cmp = #pto<wait_cmp gte>}}")
        )
    with pytest.raises(UserError, match="buf"):
        parse_text(_sig_kernel(f"pto.comm.tput(%sv, %sv : {_SIG}, {_SIG})"))


# --- the async forms (SDMA) ------------------------------------------------------------------

SDMA = COMM["sdma"]


def _sdma_cycles(nbytes: int) -> float:
    """One post + Wait, from the [comm.sdma] figures read directly."""
    fixed = SDMA["post_cycles"] + SDMA["latency_cycles"] + SDMA["poll_cycles"]
    return fixed + nbytes / (SDMA["bandwidth_gb_per_s"] * 1e9 / CLOCK)


def _tget_async_kernel(nbytes: int, posts: int = 1, queues: int | None = None) -> sim.Kernel:
    k = sim.Kernel("tget_async_bw")
    n = nbytes // 4
    src = k.gm("send", "f32", (1, n * posts))
    dst = k.gm("recv", "f32", (1, n * posts))
    s = k.async_session(k.tile("vec", "u8", 1, 256), queues=queues)
    e = None
    for i in range(posts):
        e = k.TGET_ASYNC(
            dst.view(1, n, col=i * n), src.view(1, n, col=i * n), s, peer=1 - k.rank_idx
        )
    k.wait_async(e, s)  # quiet semantics: the last event covers every post
    return k


# communication.md §10.1, README set: TGET_ASYNC device cycles in SYS_CNT ticks of 20 ns
_ASYNC_TICKS = {
    4096: 136.51,
    16384: 161.40,
    65536: 277.25,
    262144: 745.54,
    1048576: 2624.24,
    4194304: 10273.68,
}


@pytest.mark.parametrize("nbytes", sorted(_ASYNC_TICKS))
def test_tget_async_device_time_within_15_percent_of_the_public_table(nbytes):
    r = sim.simulate(_tget_async_kernel(nbytes), ranks=2, functional=False, trace="none")
    ticks = r.ranks[0].total_cycles / CLOCK / 20e-9
    assert abs(ticks / _ASYNC_TICKS[nbytes] - 1) <= 0.15
    assert abs(r.ranks[0].total_cycles - _sdma_cycles(nbytes)) <= 2


def test_async_copies_move_the_peers_data_and_a_wait_covers_the_sessions_posts():
    k = _tget_async_kernel(4096, posts=3)
    r = sim.simulate(k, ranks=2)
    assert np.array_equal(r.output("recv", 0), r.output("send", 1))
    assert np.array_equal(r.output("recv", 1), r.output("send", 0))
    bpc = SDMA["bandwidth_gb_per_s"] * 1e9 / CLOCK
    post, start, poll = SDMA["post_cycles"], SDMA["latency_cycles"], SDMA["poll_cycles"]
    # small posts: each one's start-up runs from its own posting; the last one decides
    expect = 3 * post + start + 4096 / bpc + poll
    assert abs(r.ranks[0].total_cycles - expect) <= 2
    # large posts on one queue: the bytes stream one post after the other
    big = sim.simulate(_tget_async_kernel(1 << 20, posts=3), ranks=2, functional=False)
    expect = post + start + 3 * (1 << 20) / bpc + poll
    assert abs(big.ranks[0].total_cycles - expect) <= 3


def test_more_queues_stream_a_large_post_in_parallel():
    big = 4 * SDMA["block_bytes"]
    one = sim.simulate(_tget_async_kernel(big), ranks=2, functional=False).ranks[0]
    four = sim.simulate(_tget_async_kernel(big, queues=4), ranks=2, functional=False).ranks[0]
    per_block = SDMA["block_bytes"] / (SDMA["bandwidth_gb_per_s"] * 1e9 / CLOCK)
    assert abs((one.total_cycles - four.total_cycles) - 3 * per_block) <= 3


def test_test_async_answers_false_before_completion_and_true_after():
    k = sim.Kernel("probe")
    src = k.gm("send", "f32", (1, 1024))
    dst = k.gm("recv", "f32", (1, 1024))
    seen = k.gm("seen", "i32", (1, 2), np.full((1, 2), -1, np.int32))
    s = k.async_session(k.tile("vec", "u8", 1, 256))
    e = k.TGET_ASYNC(dst, src, s, peer=1)
    early = k.test_async(e, s)
    k.wait_async(e, s)
    late = k.test_async(e, s)
    k.TNOTIFY(seen.view(1, 1, col=0), early, op="set")
    k.TNOTIFY(seen.view(1, 1, col=1), late, op="set")
    r = sim.simulate(k, ranks=2)
    assert r.output("seen", 0).tolist() == [0, 1]


def test_allgather_async_example():
    n = 4
    k = _example("allgather_async").build(ranks=n, n=64)
    r = sim.simulate(k, ranks=n)
    expect = np.concatenate([r.output("send", i) for i in range(n)])
    for i in range(n):
        assert np.array_equal(r.output("recv", i), expect), i


def test_async_refusals():
    k = sim.Kernel("bad")
    src = k.gm("send", "f32", (4, 64))
    dst = k.gm("recv", "f32", (4, 64))
    s = k.async_session(k.tile("vec", "u8", 1, 256), channel_group=48)
    k.TPUT_ASYNC(dst, src, s, peer=1)
    with pytest.raises(UserError, match="channel group 48"):
        sim.simulate(k, ranks=2)
    k = sim.Kernel("strided")
    src = k.gm("send", "f32", (4, 64))
    dst = k.gm("recv", "f32", (4, 64))
    s = k.async_session(k.tile("vec", "u8", 1, 256))
    k.TPUT_ASYNC(dst[0:4, 0:32], src[0:4, 0:32], s, peer=1)
    with pytest.raises(UserError, match="flat contiguous"):
        sim.simulate(k, ranks=2)


def test_the_65th_post_of_a_session_waits_for_the_first_slot():
    limit = SDMA["max_outstanding_posts"]
    r = sim.simulate(_tget_async_kernel(1 << 20, posts=limit + 1), ranks=2, functional=False).ranks[
        0
    ]
    t = r.trace
    posts = t[t.opcode == "TGET_ASYNC"].sort_values("start_cycle")
    bpc = SDMA["bandwidth_gb_per_s"] * 1e9 / CLOCK
    first_done = SDMA["post_cycles"] + SDMA["latency_cycles"] + (1 << 20) / bpc
    assert (posts.duration_cycles.iloc[:limit] == SDMA["post_cycles"]).all()
    last = posts.iloc[limit]
    assert last.start_cycle == limit * SDMA["post_cycles"]
    assert abs(last.end_cycle - (first_done + SDMA["post_cycles"])) <= 1


def test_a_pong_tile_overlaps_one_chunks_store_with_the_next_load():
    def kernel(tiles: int) -> sim.Kernel:
        k = sim.Kernel("push")
        src = k.gm("src", "f32", (56, 256))
        dst = k.gm("dst", "f32", (56, 256), np.zeros((56, 256), np.float32))
        # 7 chunks of 8 KB (8 to 16 would split each in two: tests/test_comm_isa.py)
        stages = [k.tile("vec", "f32", 8, 256) for _ in range(tiles)]
        k.TPUT(dst, src, *stages, peer=1 - k.rank_idx)
        return k

    one, two = (sim.simulate(kernel(t), ranks=2, free=WARM) for t in (1, 2))
    for r in (one, two):
        assert np.array_equal(r.output("dst", 0), r.output("src", 1))
        assert np.array_equal(r.output("dst", 1), r.output("src", 0))
    load = _local_load_cycles(8 * 256 * 4)
    store = _remote_cycles(8 * 256 * 4)
    # one tile: load and store of every chunk in turn; two: the loads hide behind the
    # (longer) remote stores but the first
    assert abs(one.ranks[0].total_cycles - 7 * (load + store)) <= 7
    assert abs(two.ranks[0].total_cycles - (load + 7 * store)) <= 7


def _local_load_cycles(nbytes: int) -> float:
    path = MACHINE["dma"]["paths"]["GM_UB"]
    return path["startup_cycles"] + nbytes // (path["bandwidth_gib_per_s"] * 2**30 / CLOCK)


# --- the collectives -------------------------------------------------------------------------


def test_broadcast_scatter_gather_move_the_roots_rows():
    n = 4
    k = sim.Kernel("coll")
    src = k.gm("src", "f32", (8 * n, 64))
    dst = k.gm("dst", "f32", (8 * n, 64), np.zeros((8 * n, 64), np.float32))
    part = k.gm("part", "f32", (8, 64))
    sc = k.gm("sc", "f32", (8, 64), np.zeros((8, 64), np.float32))
    g = k.gm("g", "f32", (8 * n + 8, 64), np.zeros((8 * n + 8, 64), np.float32))
    stage = k.tile("vec", "f32", 8, 64)
    k.TBROADCAST(dst, src, stage, root=1)
    k.comm_scatter(sc, src, stage, root=2)
    k.comm_gather(g, part, stage, root=3)
    r = sim.simulate(k, ranks=n)
    rows = r.output("src", 2).reshape(8 * n, 64)
    parts = [r.output("part", i).reshape(8, 64) for i in range(n)]
    for i in range(n):
        assert np.array_equal(r.output("dst", i), r.output("src", 1)), i
        assert np.array_equal(r.output("sc", i).reshape(8, 64), rows[8 * i : 8 * i + 8]), i
    gathered = r.output("g", 3).reshape(8 * n + 8, 64)
    assert np.array_equal(gathered[: 8 * n], np.concatenate(parts))
    assert not gathered[8 * n :].any()  # rows past N H untouched
    assert not r.output("g", 0).any()  # only the root's dst
    assert r.ranks[0].total_cycles == 0  # rank 0 is no root: it runs nothing


def test_broadcast_costs_one_load_and_a_store_per_rank_per_chunk():
    n = 4
    k = sim.Kernel("bcast")
    src = k.gm("src", "f32", (16, 256))
    dst = k.gm("dst", "f32", (16, 256))
    k.TBROADCAST(dst, src, k.tile("vec", "f32", 8, 256), root=0)
    r = sim.simulate(k, ranks=n, functional=False).ranks[0]
    nbytes = 8 * 256 * 4
    per_chunk = (
        _local_load_cycles(nbytes) + _local_store_cycles(nbytes) + (n - 1) * _remote_cycles(nbytes)
    )
    assert abs(r.total_cycles - 2 * per_chunk) <= 8


_BCAST = """
!VT = !pto.tile_buf<vec, 4x64xf32>
!PV = !pto.partition_tensor_view<4x64xf32>
!TV = !pto.tensor_view<?x?xf32>
module {
  func.func @bcast(%src: !pto.ptr<f32>, %dst: !pto.ptr<f32>, %ctx: !pto.ptr<i64>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c64 = arith.constant 64 : index
    %low = arith.constant 4294967295 : i64
    %f32b = arith.constant 4 : i64
    %w2 = pto.load_scalar %ctx[%c2] : !pto.ptr<i64> -> i64
    %me64 = arith.andi %w2, %low : i64
    %me = arith.index_cast %me64 : i64 to index
    %myslot = arith.addi %me, %c4 : index
    %lbase = pto.load_scalar %ctx[%myslot] : !pto.ptr<i64> -> i64
    %b0 = pto.load_scalar %ctx[%c4] : !pto.ptr<i64> -> i64
    %b1 = pto.load_scalar %ctx[%c5] : !pto.ptr<i64> -> i64
    %x0 = arith.subi %b0, %lbase : i64
    %x1 = arith.subi %b1, %lbase : i64
    %e0 = arith.divsi %x0, %f32b : i64
    %e1 = arith.divsi %x1, %f32b : i64
    %d0 = arith.index_cast %e0 : i64 to index
    %d1 = arith.index_cast %e1 : i64 to index
    %p0 = pto.addptr %dst, %d0 : !pto.ptr<f32> -> !pto.ptr<f32>
    %p1 = pto.addptr %dst, %d1 : !pto.ptr<f32> -> !pto.ptr<f32>
    %t0 = pto.make_tensor_view %p0, shape = [%c4, %c64], strides = [%c64, %c1] : !TV
    %t1 = pto.make_tensor_view %p1, shape = [%c4, %c64], strides = [%c64, %c1] : !TV
    %g0 = pto.partition_view %t0, offsets = [%c0, %c0], sizes = [%c4, %c64] : !TV -> !PV
    %g1 = pto.partition_view %t1, offsets = [%c0, %c0], sizes = [%c4, %c64] : !TV -> !PV
    %ts = pto.make_tensor_view %src, shape = [%c4, %c64], strides = [%c64, %c1] : !TV
    %sv = pto.partition_view %ts, offsets = [%c0, %c0], sizes = [%c4, %c64] : !TV -> !PV
    %ping = pto.alloc_tile : !VT
    pto.comm.tbroadcast(%sv, recv(%ping), group(%g0, %g1) : !PV, !VT, !PV, !PV) {root = 1 : i32}
    return
  }
}
"""


def test_tbroadcast_in_pto_lists_each_ranks_view_and_prints_back():
    from sim.frontend import parse_text
    from sim.frontend.printer import print_program

    p = parse_text(_BCAST)
    text = print_program(p)
    assert "recv(%ping), group(%g0, %g1)" in text and "{root = 1 : i32}" in text
    assert print_program(parse_text(text)) == text
    zeros = np.zeros(4 * 64, np.float32)
    r = sim.simulate(p, ranks=2, comm_context="ctx", inputs={"dst": zeros})
    for i in range(2):
        assert np.array_equal(r.output("dst", i), r.output("src", 1)), i


# --- two streams -----------------------------------------------------------------------------

_N, _T, _R, _C = 4, 4, 16, 64


def _producer() -> sim.Kernel:
    """The compute stream: tile i of work = src + 1, then its local ready counter + 1."""
    k = sim.Kernel("produce")
    src = k.gm("src", "f32", (_T * _R, _C))
    work = k.gm("work", "f32", (_T * _R, _C))
    ready = k.gm("ready", "i32", (1, 1), np.zeros((1, 1), np.int32))
    a = k.tile("vec", "f32", _R, _C)
    for i in range(_T):
        e = k.TLOAD(a, src[i * _R : (i + 1) * _R, :])
        for _ in range(4):
            e = k.TADDS(a, a, 0.25, e)
        k.TSTORE(work[i * _R : (i + 1) * _R, :], a, e)
        k.pipe_barrier("PIPE_ALL")  # release: the tile is in GM before the signal
        k.TNOTIFY(ready, 1, op="atomic_add")
    return k


def _pusher(ready_from_host: bool = False) -> sim.Kernel:
    """The communication stream: as tile i is ready, push it to every rank's out."""
    k = sim.Kernel("push")
    me = k.rank_idx
    work = k.gm("work", "f32", (_T * _R, _C))
    out = k.gm("out", "f32", (_N * _T * _R, _C), np.zeros((_N * _T * _R, _C), np.float32))
    start = _T if ready_from_host else 0
    ready = k.gm("ready", "i32", (1, 1), np.full((1, 1), start, np.int32))
    arrived = k.gm("arrived", "i32", (1, 1), np.zeros((1, 1), np.int32))
    stage = k.tile("vec", "f32", _R, _C)
    for i in range(_T):
        k.TWAIT(ready, i + 1, cmp="ge")
        for p in range(_N):
            row = me * (_T * _R) + i * _R
            k.TPUT(out.view(_R, _C, row=row), work[i * _R : (i + 1) * _R, :], stage, peer=p)
    k.pipe_barrier("PIPE_ALL")
    for p in range(_N):
        k.TNOTIFY(arrived, 1, op="atomic_add", peer=p)
    k.TWAIT(arrived, _N, cmp="ge")
    return k


def test_two_streams_share_the_ranks_gm_and_overlap_compute_with_communication():
    r = sim.simulate(_producer(), ranks=_N, streams=[_pusher()])
    ref = np.concatenate([r.output("src", i) + 1.0 for i in range(_N)])
    for i in range(_N):
        np.testing.assert_allclose(r.output("out", i), ref, rtol=1e-6)
        assert r.output("ready", i).tolist() == [_T]  # the producer's signals, shared GM
    assert len(r.streams) == _N and all(len(s) == 2 for s in r.streams)
    compute = sim.simulate(_producer(), ranks=_N).total_cycles
    comm = sim.simulate(_pusher(ready_from_host=True), ranks=_N).total_cycles
    assert r.total_cycles < compute + comm  # the sequential run: compute, then comm
    assert r.total_cycles >= max(compute, comm)
    # the pusher's first TPUT waits for the producer's first tile: it starts after it
    t = r.streams[0][1].trace
    first_put = t[t.opcode == "TPUT"].start_cycle.min()
    p = r.streams[0][0].trace
    first_notify = p[p.opcode == "TNOTIFY"].start_cycle.min()
    assert first_put > first_notify


@pytest.mark.parametrize(("op", "ref"), [("sum", np.add), ("max", np.maximum), ("min", np.minimum)])
def test_treduce_leaves_the_reduction_on_the_root_only(op, ref):
    n = 4
    k = sim.Kernel("reduce")
    src = k.gm("src", "f32", (8, 64))
    dst = k.gm("dst", "f32", (8, 64), np.zeros((8, 64), np.float32))
    acc, recv = k.tile("vec", "f32", 8, 64), k.tile("vec", "f32", 8, 64)
    k.TREDUCE(dst, src, acc, recv, op=op, root=2)
    rng = np.random.default_rng(11)  # integers: every order of the reduction is exact
    data = [rng.integers(-50, 50, (8, 64)).astype(np.float32) for _ in range(n)]
    r = sim.simulate(k, ranks=n, inputs=[{"src": d} for d in data])
    expect = data[0]
    for d in data[1:]:
        expect = ref(expect, d)
    assert np.array_equal(r.output("dst", 2).reshape(8, 64), expect)
    for i in (0, 1, 3):
        assert not r.output("dst", i).any()
    t = r.ranks[2].trace
    vops = t[(t["pipe"] == "PIPE_V") & (t.kind == "op")]
    assert (vops.opcode == {"sum": "TADD", "max": "TMAX", "min": "TMIN"}[op]).all()
    assert len(vops) == n - 1  # one reduction per other rank


def test_treduce_with_a_pong_tile_overlaps_the_next_load_with_the_reduction():
    def kernel(tiles):
        k = sim.Kernel("reduce")
        src = k.gm("src", "f32", (16, 256))
        dst = k.gm("dst", "f32", (16, 256))
        acc = k.tile("vec", "f32", 16, 256)
        recvs = [k.tile("vec", "f32", 16, 256) for _ in range(tiles)]
        k.TREDUCE(dst, src, acc, *recvs, root=0)
        return k

    one, two = (sim.simulate(kernel(t), ranks=8, functional=False).ranks[0] for t in (1, 2))
    t = two.trace
    loads = t[(t["pipe"] == "PIPE_MTE2") & (t.opcode == "TREDUCE")].sort_values("start_cycle")
    adds = t[(t["pipe"] == "PIPE_V") & (t.kind == "op")].sort_values("start_cycle")
    # the load for rank j + 1 starts before the reduction of rank j ends
    assert (loads.start_cycle.iloc[2:].to_numpy() < adds.end_cycle.iloc[:-1].to_numpy()).all()
    assert two.total_cycles < one.total_cycles


_REDUCE = _BCAST.replace(
    "pto.comm.tbroadcast(%sv, recv(%ping), group(%g0, %g1) : !PV, !VT, !PV, !PV) {root = 1 : i32}",
    "%acc = pto.alloc_tile : !VT\n"
    "    pto.comm.treduce(%sv, %acc, recv(%ping), group(%g0, %g1) : !PV, !VT, !VT, !PV, !PV)"
    " {reduceOp = #pto<reduce_op max>, root = 1 : i32}",
)


def test_treduce_in_pto_reads_each_ranks_member_and_prints_back():
    from sim.frontend import parse_text
    from sim.frontend.printer import print_program

    p = parse_text(_REDUCE)
    text = print_program(p)
    assert "pto.comm.treduce(%sv, %acc, recv(%ping), group(%g0, %g1)" in text
    assert "{reduceOp = #pto<reduce_op max>, root = 1 : i32}" in text
    assert print_program(parse_text(text)) == text
    data = [np.arange(256, dtype=np.float32) * s for s in (1.0, -1.0)]
    r = sim.simulate(p, ranks=2, comm_context="ctx", inputs=[{"dst": d} for d in data])
    # the group is each rank's dst; the root (rank 1) reduces it into its src view
    assert np.array_equal(r.output("src", 1), np.maximum(*data))
    assert np.array_equal(r.output("dst", 1), data[1])


@pytest.mark.parametrize("n", [2, 4])
def test_gemm_allreduce_on_two_streams_sums_every_ranks_product(n):
    g = _example("gemm_allreduce")
    b = np.random.default_rng(1).standard_normal((64, 128)).astype(np.float16)
    r = sim.simulate(g.compute(n), ranks=n, streams=[g.comm(n)], inputs={"b": b})
    a = [r.output("a", i).reshape(128, 64).astype(np.float64) for i in range(n)]
    assert not np.array_equal(a[0], a[1])  # each rank's A is its own
    ref = sum(x @ b.astype(np.float64) for x in a)
    for i in range(n):
        np.testing.assert_allclose(
            r.output("reduced", i).reshape(128, 128), ref, rtol=1e-4, atol=1e-3
        )
        assert r.output("ag_done", i).tolist() == [n]
    compute = sim.simulate(g.compute(n), ranks=n, inputs={"b": b}).total_cycles
    assert r.total_cycles > compute  # the all-reduce finishes after the last tile


def test_the_ranks_trace_puts_every_ranks_timeline_side_by_side():
    r = sim.simulate(_producer(), ranks=_N, streams=[_pusher()])
    t = r.trace
    assert list(t.columns[:2]) == ["rank", "launch"]
    for i in range(_N):
        for j in range(2):
            mine = t[(t["rank"] == i) & (t["launch"] == j)].drop(columns=["rank", "launch"])
            own = r.streams[i][j].trace  # categories merge into plain values across ranks
            assert mine.reset_index(drop=True).astype(str).equals(own.astype(str))
    assert t.end_cycle.max() == r.total_cycles


def test_limits_stop_a_run_with_ranks():
    from sim.engine.limits import Limits, RunStopped

    k = _example("allgather").build(ranks=2, rows=8, cols=64)
    with pytest.raises(RunStopped, match="max-cycles|cycle"):
        sim.simulate(k, ranks=2, limits=Limits(max_cycles=100))
    assert sim.simulate(k, ranks=2, limits=Limits(max_cycles=10**9)).total_cycles > 100


def test_a_shared_link_serialises_the_bytes_of_transfers_that_meet_on_it():
    import attrs

    from sim.target import load_target

    def kernel(blocks):
        k = sim.Kernel("push", block_dim=blocks)
        src = k.gm("src", "f32", (blocks * 16, 256))
        dst = k.gm("dst", "f32", (blocks * 16, 256))
        rows = k.block_idx * 16
        stage = k.tile("vec", "f32", 16, 256)  # one 16 KB chunk per block
        k.TPUT(dst.view(16, 256, row=rows), src.view(16, 256, row=rows), stage, peer=1 - k.rank_idx)
        return k

    tgt = load_target("a2a3")
    free = attrs.evolve(tgt, comm={**tgt.comm, "links": {**tgt.comm["links"], "shared": False}})
    stream = 16 * 256 * 4 / (COMM["links"]["bandwidth_gb_per_s"] * 1e9 / CLOCK)
    # the GM models made free: the eight blocks' bytes meet only on the link (their writes
    # queue on the peer's write path otherwise: tests/test_ranks_memory.py)
    quiet = dict(ranks=2, functional=False, free=("gm_bandwidth", "gm_write_queue"))
    one = sim.simulate(kernel(1), tgt, **quiet).total_cycles
    alone = sim.simulate(kernel(8), free, **quiet).total_cycles
    shared = sim.simulate(kernel(8), tgt, **quiet).total_cycles
    assert alone == one  # without sharing, eight blocks take one block's time
    assert abs(shared - alone - 7 * stream) <= 8  # the last waits for seven transfers' bytes


def test_ranks_timeline_draws_a_lane_per_rank_and_kernel():
    r = sim.simulate(_producer(), ranks=_N, streams=[_pusher()])
    fig = sim.trace.ranks_timeline(r.trace)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == [f"rank {i} / kernel {j}" for i in range(_N) for j in range(2)]
    with pytest.raises(UserError, match="rank column"):
        sim.trace.ranks_timeline(r.ranks[0].trace)


_SETTER = """
module {
  func.func @setter(%flag: !pto.ptr<i32>) {
    %c0 = arith.constant 0 : index
    %v = arith.constant 7 : i32
    pto.store_scalar %v, %flag[%c0] : !pto.ptr<i32>, i32
    return
  }
}
"""
_WAITER = f"""
module {{
  func.func @waiter(%flag: !pto.ptr<i32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = arith.constant 7 : i32
    %t = pto.make_tensor_view %flag, shape = [%c1, %c1], strides = [%c1, %c1] : {_TV}
    %sv = pto.partition_view %t, offsets = [%c0, %c0], sizes = [%c1, %c1] : {_TV} -> {_SIG}
    pto.comm.twait(%sv, %v : {_SIG}, i32) {{cmp = #pto<wait_cmp eq>}}
    return
  }}
}}
"""


def test_a_scalar_store_to_a_signal_wakes_its_waiter():
    from sim.frontend import parse_text

    flag = {"flag": np.zeros(1, np.int32)}
    r = sim.simulate(parse_text(_WAITER), ranks=1, streams=[parse_text(_SETTER)], inputs=flag)
    wait = r.streams[0][0].trace
    wait = wait[wait.opcode == "TWAIT"].iloc[0]
    assert wait.end_cycle == COMM["signals"]["poll_cycles_per_element"]  # the store at cycle 0
    assert r.output("flag", 0).tolist() == [7]


def test_a_signal_a_tstore_writes_still_wakes_its_waiter():
    k = sim.Kernel("store_signal")
    sig = k.gm("sig", "i32", (1, 8), np.zeros((1, 8), np.int32))
    t = k.tile("vec", "i32", 1, 8)
    e = k.TEXPANDS(t, 5)
    k.TSTORE(sig, t, e)
    w = sim.Kernel("wait_signal")
    sig_w = w.gm("sig", "i32", (1, 8), np.zeros((1, 8), np.int32))
    w.TWAIT(sig_w, 5, cmp="eq")
    r = sim.simulate(w, ranks=1, streams=[k])  # no deadlock: the write is found late
    assert r.output("sig", 0).tolist() == [5] * 8


_ASYNC_PTO = """!PV = !pto.partition_tensor_view<1x1024xf32>
!TV = !pto.tensor_view<?x?xf32>
!ST = !pto.tile_buf<vec, 1x256xi8>
!PB = !pto.ptr<i8>
module {
  func.func @pull(%send: !pto.ptr<f32>, %recv: !pto.ptr<f32>, %ws: !PB, %ctx: !pto.ptr<i64>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c1024 = arith.constant 1024 : index
    %low = arith.constant 4294967295 : i64
    %f32b = arith.constant 4 : i64
    %w2 = pto.load_scalar %ctx[%c2] : !pto.ptr<i64> -> i64
    %me64 = arith.andi %w2, %low : i64
    %me = arith.index_cast %me64 : i64 to index
    %pe = arith.subi %c1, %me : index
    %myslot = arith.addi %me, %c4 : index
    %pslot = arith.addi %pe, %c4 : index
    %lbase = pto.load_scalar %ctx[%myslot] : !pto.ptr<i64> -> i64
    %pbase = pto.load_scalar %ctx[%pslot] : !pto.ptr<i64> -> i64
    %x = arith.subi %pbase, %lbase : i64
    %e64 = arith.divsi %x, %f32b : i64
    %d = arith.index_cast %e64 : i64 to index
    %psend = pto.addptr %send, %d : !pto.ptr<f32> -> !pto.ptr<f32>
    %ts = pto.make_tensor_view %psend, shape = [%c1, %c1024], strides = [%c1024, %c1] : !TV
    %sv = pto.partition_view %ts, offsets = [%c0, %c0], sizes = [%c1, %c1024] : !TV -> !PV
    %tr = pto.make_tensor_view %recv, shape = [%c1, %c1024], strides = [%c1024, %c1] : !TV
    %rv = pto.partition_view %tr, offsets = [%c0, %c0], sizes = [%c1, %c1024] : !TV -> !PV
    %scratch = pto.alloc_tile : !ST
    %s = pto.comm.build_async_session(%scratch, %ws : !ST, !PB)
      {sync_id = 0 : i32, queue_num = 2 : i32} -> !pto.async_session
    %e = pto.comm.tget_async(%rv, %sv, %s : !PV, !PV, !pto.async_session) -> !pto.async_event
    %ok = pto.comm.wait_async_event(%e, %s : !pto.async_event, !pto.async_session) -> i1
    return
  }
}
"""


def test_the_async_forms_in_pto_pull_a_peers_data_and_print_back():
    from sim.frontend import parse_text
    from sim.frontend.printer import print_program

    p = parse_text(_ASYNC_PTO)
    text = print_program(p)
    assert "-> !pto.async_session" in text and "{queue_num = 2 : i64}" in text
    assert "pto.comm.wait_async_event(%e, %s : !pto.async_event, !pto.async_session) -> i1" in text
    assert print_program(parse_text(text)) == text
    r = sim.simulate(p, ranks=2, comm_context="ctx")
    for i in range(2):
        assert np.array_equal(r.output("recv", i), r.output("send", 1 - i)[:1024])
    reads = 3 * MACHINE["scalar"]["load_scalar_cycles"]  # the context's three words
    assert abs(r.ranks[0].total_cycles - reads - _sdma_cycles(4096)) <= 2


def test_ideal_sync_keeps_the_signal_waits_that_order_data():
    k = _example("allgather").build(ranks=4, rows=8, cols=64)
    real = sim.simulate(k, ranks=4)
    ideal = sim.simulate(k, ranks=4, ideal_sync=True)
    for i in range(4):
        assert np.array_equal(ideal.output("out", i), real.output("out", i))
        assert ideal.output("arrived", i).tolist() == [4]
    # rank 0's TWAIT still waits for the last signal to land on it
    lands = max(
        row.start_cycle
        + COMM["signals"]["notify_cycles"]
        + COMM["links"]["latency_cycles"] * (i != 0)
        for i in range(4)
        for row in ideal.ranks[i].trace.itertuples()
        if row.opcode == "TNOTIFY" and str(row.operands).endswith("rank 0 %arrived_v")
    )
    t = ideal.ranks[0].trace
    assert t[t.opcode == "TWAIT"].end_cycle.iloc[0] >= lands
    assert ideal.total_cycles <= real.total_cycles


# --- races across ranks ----------------------------------------------------------------------


def _put_then_read(signal: bool) -> sim.Kernel:
    """tests/data/put_then_read.py: rank 0's TPUT into rank 1's buf, read there (after a
    signal when ``signal``)."""
    return kernel_source(str(ROOT / "tests" / "data" / "put_then_read.py"))(signal=signal)


def test_a_remote_write_and_a_local_read_without_a_signal_race():
    r = sim.simulate(_put_then_read(signal=False), ranks=2, races=True)
    assert len(r.races) == 1, r.races
    msg = r.races[0]
    assert msg.startswith("race on rank 1 %buf[0:512]")
    assert "rank 0 block 0 AIV0 pto.comm.tput" in msg and "writes" in msg
    assert "rank 1 block 0 AIV0 TLOAD" in msg and "reads" in msg
    ok = sim.simulate(_put_then_read(signal=True), ranks=2, races=True)
    assert ok.races == ()
    assert np.array_equal(ok.output("out", 1)[:512], ok.output("src", 0))


def test_race_check_on_the_examples():
    # every rank writes its own rows (mesh all-gather): no race
    k = _example("allgather").build(ranks=4, rows=8, cols=64)
    assert sim.simulate(k, ranks=4, races=True).races == ()
    # atomic adds into one owner's tile never race; the owners broadcast after the counts
    g = _example("gemm_allreduce")
    r = sim.simulate(g.compute(2), ranks=2, streams=[g.comm(2)], races=True)
    assert r.races == ()
    # two ranks writing the same bytes of a third without order: a write-write race
    w = sim.Kernel("clash")
    src = w.gm("src", "f32", (8, 64))
    dst = w.gm("dst", "f32", (8, 64))
    w.TPUT(dst, src, w.tile("vec", "f32", 8, 64), peer=2)
    r = sim.simulate(w, ranks=3, races=True)
    assert any("race on rank 2 %dst" in m and "writes, then" in m for m in r.races)


def test_windows_of_one_array_meet_only_where_they_share_elements():
    from sim.engine.rankraces import _meet

    left, right = (0, 64, 64, 128), (64, 64, 64, 128)  # two 64x64 tiles side by side
    assert not _meet(left, right) and not _meet(right, left)
    assert _meet(left, (32 * 128 + 32, 8, 8, 128))  # inside the left tile
    assert not _meet(left, (64 * 128, 64, 64, 128))  # the tile below
    assert _meet((0, 1, 100, 100), (99, 1, 5, 5)) and not _meet((0, 1, 100, 100), (100, 1, 5, 5))
