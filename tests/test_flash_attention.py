"""Flash attention end to end: ``examples/flash_attention.pto`` — the PTO IR
kernel, a cube function and a vector function tied by cube <-> vector FIFOs — against numpy
on A2/A3 and A5, race-free as written, the same algorithm and cycles as
``examples/flash_attention.py``, and its scaling over cores.

The reference is softmax(Q K^T / sqrt(128)) V in float64 from the f16 inputs the run used.
Tolerance: P goes to the cube as f16 (a relative rounding of 2^-11 per element) and S, the
row sums and O are accumulated in f32, so O carries ~1e-3 of its own magnitude: the check
is |O - O_ref| <= 2e-3 max |O_ref|.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sim

EX = Path(__file__).resolve().parent.parent / "examples"
PTO = EX / "flash_attention.pto"
HEAD = S0 = 128


def _program(target="a2a3"):
    text = PTO.read_text()
    if target != "a2a3":  # the module names its arch; the parser derives L0A's layout
        text = text.replace('pto.target_arch = "a2a3"', f'pto.target_arch = "{target}"')
    return sim.parse_text(text, str(PTO))


def _reference(r, cores, s1):
    q = r.output("q").reshape(-1, HEAD).astype(np.float64)
    kt = r.output("kt").reshape(HEAD, -1).astype(np.float64)
    v = r.output("v").reshape(-1, HEAD).astype(np.float64)
    want = []
    for b in range(cores):
        s = q[b * S0 : (b + 1) * S0] @ kt[:, b * s1 : (b + 1) * s1] / np.sqrt(HEAD)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        want.append(p / p.sum(axis=1, keepdims=True) @ v[b * s1 : (b + 1) * s1])
    return np.concatenate(want)


@pytest.mark.parametrize(
    "target,s1,tile,cores",
    [
        ("a2a3", 256, 128, 1),
        ("a2a3", 384, 128, 2),  # 3 key blocks: the odd tail
        ("a5", 256, 128, 1),  # FIXPIPE L0C -> UB FIFOs
        ("a2a3", 256, 0, 1),  # the default rule: 128 below 2048 keys
        ("a2a3", 256, 256, 1),  # one key tile: no loop iteration takes a second tile
        ("a2a3", 768, 256, 2),  # 3 tiles: the second tile of the last iteration is absent
        ("a5", 512, 256, 1),
        ("a2a3", 512, 512, 1),
        ("a2a3", 1536, 512, 1),
        ("a5", 1024, 512, 1),
    ],
)
def test_pto_matches_numpy_race_free(target, s1, tile, cores):
    r = sim.simulate(
        _program(target), target, inputs={"S1": s1, "S1_TILE": tile}, block_dim=cores, races=True
    )
    assert r.target.name == target
    pushes = r.trace[(r.trace["opcode"] == "TPUSH") & (r.trace["unit"] == "AIC")]
    path = "L0C_UB" if target == "a5" else "L0C_GM"  # A5: FIXPIPE straight into UB
    # 128: one S and one O push per block; longer tiles: S per 128-key chunk and row pass
    # (two passes), O per pass and tile
    want = 2 * (s1 // 128) if tile in (0, 128) else 2 * (s1 // 128) + 2 * (s1 // tile)
    assert len(pushes) == cores * want and pushes["operands"].str.contains(path).all()
    assert r.mode == "manual"  # its own flags: the default runs it as written
    assert not r.races, r.races[:1]
    got = r.output("o").reshape(-1, HEAD)
    want = _reference(r, cores, s1)
    assert got.dtype == np.float32
    assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max()


def _py_build(**kw):
    spec = importlib.util.spec_from_file_location("ex_fa", EX / "flash_attention.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build(**kw)


@pytest.mark.parametrize(
    "target,s1,tile",
    [
        ("a2a3", 384, 128),
        ("a2a3", 512, 128),
        ("a5", 256, 128),
        ("a2a3", 256, 256),
        ("a2a3", 768, 256),
        ("a2a3", 1024, 256),
        ("a5", 1024, 256),
        ("a2a3", 512, 512),
        ("a2a3", 1536, 512),
        ("a5", 1024, 512),
        ("a2a3", 1024, 0),
        ("a2a3", 2048, 0),
        ("a2a3", 2304, 0),
    ],
)  # default: 128, 512, 256
def test_pto_and_py_are_the_same_kernel_to_the_cycle(target, s1, tile):
    """Same instructions per unit and opcode, same busy cycles, same total, for each key
    tile (0: both follow the default rule)."""
    pto = sim.simulate(
        _program(target), target, inputs={"S1": s1, "S1_TILE": tile}, functional=False
    )
    py = sim.simulate(_py_build(s1=s1, s1_tile=tile or None, arch=target), target, functional=False)
    assert pto.total_cycles == py.total_cycles
    assert {o: v["busy_cycles"] for o, v in pto.opcodes.items()} == {
        o: v["busy_cycles"] for o, v in py.opcodes.items()
    }
    for t in (pto.trace, py.trace):
        assert set(t["unit"]) == {"AIC", "AIV0", "AIV1"}
    count = [
        t[t["kind"] == "op"].groupby(["unit", "opcode"], observed=True).size().to_dict()
        for t in (pto.trace, py.trace)
    ]
    assert count[0] == count[1]


def test_preload_issues_the_next_scores_before_this_blocks_output():
    """Cube matmul order with preload over 3 blocks: S0 S1 O0 S2 O1 O2."""
    r = sim.simulate(_program(), inputs={"S1": 384, "S1_TILE": 128}, functional=False)
    t = r.trace
    mm = t[(t["opcode"] == "TMATMUL") & (t["unit"] == "AIC")].sort_values("start_cycle")
    assert ["s" if o.startswith("%s_acc") else "o" for o in mm["operands"]] == [
        "s",
        "s",
        "o",
        "s",
        "o",
        "o",
    ]


@pytest.mark.parametrize("s1_tile,s1,ahead", [(256, 768, 2), (256, 1024, 2), (512, 1024, 1)])
def test_long_key_tiles_preload_two_passes_where_l1_holds_two_tiles(s1_tile, s1, ahead):
    """Chunked cube order, by row pass: S of passes 0 .. ahead first, then O of pass n
    before S of pass n + ahead + 1 (256-key tiles: L1 holds two tiles of K / V, so two
    passes; 512: one), each pass's S as its 128-key chunks and one O."""
    r = sim.simulate(_py_build(s1=s1, s1_tile=s1_tile), "a2a3", functional=False)
    t = r.trace
    mm = t[t["opcode"].isin(["TMATMUL"]) & (t["unit"] == "AIC")].sort_values("start_cycle")
    got = ["s" if o.startswith("%s_acc") else "o" for o in mm["operands"]]
    passes, c = 2 * s1 // s1_tile, s1_tile // 128
    want = ["s"] * c * min(ahead, passes)
    for n in range(passes):
        if n + ahead < passes:
            want += ["s"] * c
        want += ["o"]
    assert got == want


def test_cores_give_the_same_numbers_and_cost_only_what_they_share():
    """1, 2 and 4 cores, every core given the same Q, K, V: every core's O is bit-identical
    to the one-core run's. With the GM write queue made free the cores share nothing that
    costs, so n cores take no more cycles than one; with it, more cores never take fewer
    cycles than fewer cores (their FIFO writes share the path)."""
    rng = np.random.default_rng(7)
    s1 = 256
    q, k, v = (
        rng.standard_normal(s).astype(np.float16) for s in ((S0, HEAD), (s1, HEAD), (s1, HEAD))
    )
    runs, free = {}, {}
    for n in (1, 2, 4):
        inputs = {
            "S1": s1,
            "S1_TILE": 128,
            "q": np.tile(q, (n, 1)),
            "kt": np.tile(k.T, (1, n)),
            "v": np.tile(v, (n, 1)),
        }
        runs[n] = sim.simulate(_program(), inputs=inputs, block_dim=n)
        free[n] = sim.simulate(
            _program(), inputs=inputs, block_dim=n, functional=False, free="gm_write_queue"
        )
    one = runs[1].output("o").reshape(-1, HEAD)
    for n, r in runs.items():
        o = r.output("o").reshape(n, S0, HEAD)
        assert all(np.array_equal(o[b], one) for b in range(n)), n
        assert free[n].total_cycles <= free[1].total_cycles, n
        assert free[n].total_cycles <= r.total_cycles, n
        assert {u["core"] for u in r.units} == set(range(n))
    assert runs[1].total_cycles <= runs[2].total_cycles <= runs[4].total_cycles


@pytest.mark.parametrize(
    "s1,tile",
    [
        (1024, 384),  # no form for 384
        (768, 512),  # 512 does not divide 768
        (1000, 0),
    ],
)  # the default (128) does not divide
def test_pto_refuses_a_key_tile_it_has_no_form_for(tmp_path, s1, tile):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "run",
            str(PTO),
            "--arg",
            f"S1={s1}",
            "--arg",
            f"S1_TILE={tile}",
            "--timing-only",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "S1_TILE_must_be_0_128_256_or_512_and_divide_S1" in out.stderr
    assert "flash_attention.pto:" in out.stderr


@pytest.mark.parametrize("s1", [512, 4096])
def test_py_s1_tile_0_is_the_default_rule_as_in_the_pto(s1):
    from sim.frontend import print_program

    default, zero = _py_build(s1=s1), _py_build(s1=s1, s1_tile=0)
    assert print_program(zero.program()) == print_program(default.program())


@pytest.mark.parametrize(
    "kw, said",
    [
        ({"s1_tile": 256.0}, "s1_tile=256.0: expected 0 (the default rule) or a key count"),
        ({"s1_tile": -128}, "s1_tile=-128: expected 0 (the default rule) or a key count"),
        ({"s1": 0}, "s1=0: expected a positive integer"),
        ({"s0": 128.0}, "s0=128.0: expected a positive integer"),
        ({"cores": True}, "cores=True: expected a positive integer"),
    ],
)
def test_py_refuses_sizes_that_are_no_counts(kw, said):
    with pytest.raises(ValueError) as e:
        _py_build(**kw)
    assert str(e.value) == said


def test_cli_run_prints_per_unit_figures(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "run",
            str(PTO),
            "--arg",
            "S1=1024",
            "--arg",
            "S1_TILE=0",
            "--block-dim",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    units = [ln.split()[2] for ln in lines if ln.startswith("core 0 ")]
    assert units == ["AIC", "AIV0", "AIV1"]
    aic = next(ln for ln in lines if ln.startswith("core 0   AIC"))
    assert "TMATMUL" in aic and "FIX" in aic
    assert "warning" not in out.stdout + out.stderr  # no race warning


# --- manual vs auto on chip kernels (ptosim compare) --------------------------------------


def _o_error(r, s1):
    want = _reference(r, 1, s1)
    return np.abs(r.output("o").reshape(-1, HEAD) - want).max() / np.abs(want).max()


def test_py_matches_numpy_on_a5():
    r = sim.simulate(_py_build(s1=256, arch="a5"), "a5", races=True)
    assert not r.races and _o_error(r, 256) <= 2e-3
    with pytest.raises(ValueError, match="arch='a9'"):
        _py_build(arch="a9")


@pytest.mark.parametrize("form", ["py", "pto"])
def test_compare_places_and_synchronises_each_unit(form):
    """Auto mode on a chip kernel: the sections .py is placed per unit around its FIFO
    buffers and synchronised per unit; both sides compute O, race-free, and the pipe rows
    are per unit."""
    from sim.studies import run_comparison

    s1 = 384
    k = _program() if form == "pto" else _py_build(s1=s1)
    c = run_comparison(k, "a2a3", inputs={"S1": s1, "S1_TILE": 128} if form == "pto" else None)
    for run in (c.manual, c.auto):
        m = run.metrics()
        assert m["deadlock"] is None and m["races"] == 0, (run.mode, m["race_findings"][:1])
        assert {"AIC PIPE_M", "AIV0 PIPE_V", "AIV1 PIPE_V"} <= set(m["pipes"])
        assert _o_error(run.result, s1) <= 2e-3
    assert c.auto.metrics()["syncs"] > 0 and c.auto.program is not k
    assert "busy_cycles[AIV0 PIPE_V]" in c.frame().index
    # hand placement: the .pto places every tile of its three key-tile forms (one
    # ``alloc_tile addr =`` line each), the .py its L0B ring (4) and the softmax's per-row
    # columns (8: bank-staggered for their flat updates)
    want = PTO.read_text().count("pto.alloc_tile addr") if form == "pto" else 12
    assert (c.note is None) and c.hand_placed == want


def test_auto_places_tiles_around_the_fifo_buffers():
    from sim.isa.program import Alloc, PipeOp, walk
    from sim.placement import plan_auto

    plan = plan_auto(_py_build(s1=256), "a2a3")
    fifo = []
    for st in walk(plan.program.main.body):
        if isinstance(st, PipeOp) and st.op == "pto.reserve_buffer":
            a = dict(st.attrs)
            assert a["auto"] is False  # placed by the plan, first
            buf = "UB" if "vec" in str(a["location"]) else "L1"
            fifo.append((buf, a["base"], a["base"] + a["size"]))
    assert sorted(b for b, _, _ in fifo) == ["L1", "UB", "UB"]
    tiles = [st.tile for st in walk(plan.program.main.body) if isinstance(st, Alloc)]
    for t in tiles:
        for s in plan.slots[t].addrs:
            assert all(
                not (buf == t.loc.buffer and s < hi and lo < s + t.type.nbytes)
                for buf, lo, hi in fifo
            ), t.name
    ub = [(lo, hi) for b, lo, hi in fifo if b == "UB"]
    assert ub[0][1] <= ub[1][0] or ub[1][1] <= ub[0][0]  # two FIFOs, no overlap


def test_a_fifo_kernel_without_sync_runs_in_auto_mode_by_default():
    """The .pto with every flag and barrier taken out: the default run inserts them (auto
    mode) and the result is right and race-free."""
    bare = "\n".join(
        ln
        for ln in PTO.read_text().splitlines()
        if not ln.strip().startswith(("pto.set_flag", "pto.wait_flag", "pto.barrier"))
    )
    r = sim.simulate(
        sim.parse_text(bare, "bare.pto"), inputs={"S1": 256, "S1_TILE": 128}, races=True
    )
    assert r.mode == "auto" and not r.warnings and not r.races
    assert _o_error(r, 256) <= 2e-3


@pytest.mark.parametrize("s1,tile", [(256, 128), (256, 256), (512, 512)])
def test_compare_of_the_pto_places_every_key_tile_form(s1, tile):
    """Auto mode places the .pto's three key-tile forms: each ``scf.if`` branch reserves its
    own FIFO buffers, held only over that branch (``sim.placement.alloc.fifo_spans``), so the
    chunked forms' vector tiles (~100 KiB) take the bytes of the other branches' buffers.
    Both sides race-free, and auto computes exactly manual's O."""
    from sim.studies import run_comparison

    c = run_comparison(_program(), "a2a3", inputs={"S1": s1, "S1_TILE": tile})
    for run in (c.manual, c.auto):
        m = run.metrics()
        assert m["deadlock"] is None and m["races"] == 0, (run.mode, m["race_findings"][:1])
        assert _o_error(run.result, s1) <= 2e-3
    assert np.array_equal(c.manual.result.output("o"), c.auto.result.output("o"))
    assert c.auto.metrics()["peak_bytes"]["UB"] > 0
    # --plot shades the FIFO buffers of the branch the run took only
    suffix = "" if tile == 128 else str(tile)
    for run in (c.manual, c.auto):
        assert {label for bands in run.fifo.values() for label, _, _ in bands} == {
            f"FIFO fa_{x}{suffix}" for x in "pso"
        }


def test_compare_of_the_pto_runs_from_the_command_line(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sim", "compare", str(PTO), "--arg", "S1=256", "--arg", "S1_TILE=0"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.stdout.splitlines()[2:]}
    assert rows["races"][:2] == ["0", "0"] and "total_cycles" in rows


def test_compare_says_when_a_kernel_places_nothing_by_hand(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sim", "compare", str(EX / "gemm.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert (
        first.startswith("note: gemm_128x256x128 places no tile by hand") and "first fit" in first
    )
    assert out.stdout.splitlines()[1].split() == ["metric", "manual", "auto", "auto", "-", "manual"]
    j = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "compare",
            str(EX / "flash_attention.py"),
            "--arg",
            "s1=256",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert j.returncode == 0, j.stderr
    import json

    got = json.loads(j.stdout)
    assert got["manual"]["hand_placed_tiles"] == 12 and got["auto"]["races"] == 0
    assert not j.stdout.startswith("note")


def test_compare_figure_shades_the_fifo_buffers():
    import matplotlib

    matplotlib.use("Agg")
    from sim.studies import run_comparison

    fig = run_comparison(_py_build(s1=256), "a2a3").figure()
    labels = {t.get_text().strip() for ax in fig.axes for t in ax.texts}
    assert {"FIFO fifo0", "FIFO fifo1", "FIFO fifo2"} <= labels  # both columns, UB and L1
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("target", ["a2a3", "a5"])
def test_scaling_counts_the_fifo_round_trips_through_gm(target):
    """One core, S1 = 512 (4 key blocks): Q 32 KiB + K^T and V 4 x 32 KiB each + O 64 KiB
    over TLOAD / TSTORE; on A2/A3 each block also sends S (64 KiB f32) and O (64 KiB) out
    of L0C to GM and back into both UBs, and P (2 x 16 KiB f16) out of the UBs and back
    into L1: 4 x (2 x 64 + 2 x 64 + 2 x 32) KiB. A5's FIFOs never touch GM."""
    df = sim.scaling(_py_build, [dict(s1=512, arch=target)], target=target)
    loads_stores = 32768 + 2 * 4 * 32768 + 65536
    fifo = 4 * (2 * 65536 + 2 * 65536 + 2 * 32768) if target == "a2a3" else 0
    assert df["gm_bytes"].tolist() == [loads_stores + fifo]


# --- the key tile --------------------------------------------------------------------------


def _fa_module():
    spec = importlib.util.spec_from_file_location("ex_fa_rule", EX / "flash_attention.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "s1,tile",
    [
        (256, 128),
        (512, 128),
        (1024, 128),
        (1920, 128),
        (2048, 512),
        (2176, 128),
        (2304, 256),
        (2560, 512),
        (3072, 512),
        (3328, 256),
        (4096, 512),
        (8192, 512),
        (16384, 512),
    ],
)
def test_default_key_tile_rule(s1, tile):
    """128 below 2048 keys; from 2048 on 512 when it divides S1, else 256 when it does."""
    assert _fa_module().default_s1_tile(s1) == tile


def test_the_pto_is_what_its_generator_writes():
    """The 256- and 512-key branches of the .pto are tools/gen_flash_attention_pto.py's
    output (edit the script, not the text): regenerating changes nothing."""
    spec = importlib.util.spec_from_file_location(
        "gen_fa", EX.parent / "tools" / "gen_flash_attention_pto.py"
    )
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = PTO.read_text()
    assert text.count(gen.BEGIN) == 2 and text.count(gen.END) == 2
    assert gen.render(text) == text
    # the regions are rewritten, not copied: emptied, they come back the same
    lines = text.split("\n")
    begins = [i for i, ln in enumerate(lines) if ln.strip().startswith(gen.BEGIN)]
    ends = [i for i, ln in enumerate(lines) if ln.strip() == gen.END]
    emptied = "\n".join(lines[: begins[0] + 1] + lines[ends[0] : begins[1] + 1] + lines[ends[1] :])
    assert gen.render(emptied) == text


@pytest.mark.parametrize("s1_tile,s1", [(256, 1024), (512, 1024), (512, 2048)])
def test_long_key_tiles_load_each_k_and_v_tile_with_one_tload(s1_tile, s1):
    """The chunked forms bring a key tile's K^T (head x tile) and V (tile x head) into L1
    with one TLOAD each (one DMA start-up per tile, not per 128-key chunk), and extract
    its 128-key chunks from there: 1 Q + 2 per tile loads, 2 passes x chunks x 2 extracts."""
    r = sim.simulate(_py_build(s1=s1, s1_tile=s1_tile), "a2a3", functional=False)
    t = r.trace[r.trace["unit"] == "AIC"]
    tiles, c = s1 // s1_tile, s1_tile // 128
    loads = t[t["opcode"] == "TLOAD"]
    assert len(loads) == 1 + 2 * tiles
    assert sorted(set(loads["bytes"]))[-1] == 128 * s1_tile * 2
    assert (t["opcode"] == "TEXTRACT").sum() == 2 + tiles * 2 * c * 3  # Q; K^T, P, V


@pytest.mark.parametrize(
    "s1_tile,s1,cores,softmax",
    [
        (256, 512, 1, "mixed"),
        (256, 768, 2, "mixed"),
        (512, 1024, 1, "mixed"),
        (512, 1536, 1, "mixed"),
        (256, 768, 2, "f32"),
        (512, 1024, 1, "f32"),
    ],
)
def test_long_key_tiles_match_numpy_race_free(s1_tile, s1, cores, softmax):
    """Key tiles of 256 and 512 (128-key chunks, two row passes), either softmax: O within
    the f16 rounding of the float64 reference on every core, no race, 2 row passes x
    S1 / 128 S pushes."""
    r = sim.simulate(
        _py_build(s1=s1, s1_tile=s1_tile, cores=cores, softmax=softmax), "a2a3", races=True
    )
    assert not r.races, r.races[:1]
    want = _reference(r, cores, s1)
    assert np.abs(r.output("o").reshape(-1, HEAD) - want).max() <= 2e-3 * np.abs(want).max()
    t = r.trace
    pushes = t[(t["opcode"] == "TPUSH") & (t["unit"] == "AIC") & (t["pipe"] == "PIPE_FIX")]
    assert len(pushes) == cores * (2 * s1 // 128 + 2 * s1 // s1_tile)  # S chunks + O per pass


def test_a_longer_key_tile_costs_less_per_key_at_long_s1():
    """Per further 128 keys (S1 2048 -> 4096): a longer key tile reduces each row and
    rescales O once per tile, over more keys — 512 < 256 < 128, as the production kernels'
    choice of longer tiles for longer S1 (the default rule) supposes."""

    def per_128(tile):
        c = [
            sim.simulate(
                _py_build(s1=s1, s1_tile=tile), "a2a3", functional=False, trace="none"
            ).total_cycles
            for s1 in (2048, 4096)
        ]
        return (c[1] - c[0]) / 16

    assert per_128(512) < per_128(256) < per_128(128)


@pytest.mark.parametrize("s1_tile", [128, 256, 512])
def test_the_mixed_softmax_is_cheaper_per_key_than_f32_and_as_accurate(s1_tile):
    """The mixed softmax (f32 max and subtraction, f16 exp and sum, flat per-row updates)
    against the all-f32 one at each key tile: fewer vector-pipe cycles per further 128
    keys (S1 1024 -> 2048), a shorter kernel, and O still within 2e-3 of max |O|."""

    def run(softmax, s1, functional=False):
        return sim.simulate(
            _py_build(s1=s1, s1_tile=s1_tile, softmax=softmax),
            "a2a3",
            functional=functional,
            trace="none",
        )

    def per_128(softmax):
        a, b = run(softmax, 1024), run(softmax, 2048)
        busy = [sum(v["busy_cycles"] for p, v in x.pipes.items() if p == "PIPE_V") for x in (a, b)]
        return (b.total_cycles - a.total_cycles) / 8, (busy[1] - busy[0]) / 8

    (mixed_t, mixed_v), (f32_t, f32_v) = per_128("mixed"), per_128("f32")
    assert mixed_v < 0.9 * f32_v and mixed_t < f32_t
    r = run("mixed", 2 * s1_tile, functional=True)
    want = _reference(r, 1, 2 * s1_tile)
    assert np.abs(r.output("o").reshape(-1, HEAD) - want).max() <= 2e-3 * np.abs(want).max()


def test_reshape_aliases_a_column_as_a_flat_tile_and_checks_its_size():
    """``k.reshape``: a 32 x 8 f32 column seen as 4 x 64 writes the same bytes (a TROWMAX
    into the column read back through the flat view); a size mismatch is one clear error."""
    k = sim.Kernel("flat")
    x = k.gm("x", "f32", (32, 64), data=np.arange(32 * 64).reshape(32, 64) % 97)
    y = k.gm("y", "f32", (4, 64))
    t = k.tile("vec", "f32", 32, 64)
    col = k.tile("vec", "f32", 32, 8, valid=(32, 1))
    flat = k.reshape(col, 4, 64)
    e = k.TEXPANDS(flat, 0.0)
    e = k.TROWMAX(col, t, k.TLOAD(t, x), e)
    e = k.TADDS(flat, flat, 1.0, e)
    k.TSTORE(y, flat, e)
    r = sim.simulate(k, "a2a3")
    got = r.output("y").reshape(32, 8)
    data = (np.arange(32 * 64).reshape(32, 64) % 97).astype(np.float32)
    assert np.array_equal(got[:, 0], data.max(axis=1) + 1) and np.all(got[:, 1:] == 1)
    with pytest.raises(sim.UserError, match="expected the same size"):
        k.reshape(col, 4, 32)


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(s1=1024, s1_tile=384), "expected one of"),
        (dict(s1=1024, softmax="f8"), "softmax='f8'"),
        (dict(s1=768, s1_tile=512), "must divide"),
        (dict(s1=1024, s1_tile=256, head=64), "s0 = head = 128"),
    ],
)
def test_key_tile_errors(kw, msg):
    with pytest.raises(ValueError, match=msg):
        _py_build(**kw)
