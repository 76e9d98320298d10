"""What stopped real kernels in the engine, rebuilt as small kernels from
the description and pto-ir-in-the-wild.md.

* a file of independent kernels (no calls) places the tiles of the one it runs only;
* ``tpop_from_aic`` / ``tpop_from_aiv`` into a tile whose valid region is dynamic
  (``v_row=?, v_col=?``) takes the pushed shape;
* pypto's ``%__pypto_spmd_block_idx`` / ``_block_num`` / ``_subblock_idx`` arguments are
  bound by the launch, per unit (the two-function cube + vector kernels asked for
  ``--arg __pypto_spmd_subblock_idx=VALUE``, then refused it).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sim
from sim.frontend import parse_file, parse_text

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "real_kernels"


def _ptosim(*args):
    return subprocess.run(
        [sys.executable, "-m", "sim", *map(str, args)], capture_output=True, text=True, timeout=120
    )


# --- independent kernels in one file ----------------------------------------------------


@pytest.mark.parametrize("sync", [None, "auto", "manual", "ideal"])
@pytest.mark.parametrize("func", [None, "k0", "k5", "k7"])
def test_a_file_of_independent_kernels_runs_each_in_every_mode(sync, func):
    program = parse_file(DATA / "many_kernels.pto")
    if func is not None:
        import attrs

        program = attrs.evolve(program, entry=func)
    r = sim.simulate(program, "a2a3", functional=False, **({"sync": sync} if sync else {}))
    assert r.total_cycles > 0
    # the run is the kernel alone: the same cycles as a file holding only it
    alone = attrs_alone(program)
    r1 = sim.simulate(alone, "a2a3", functional=False, **({"sync": sync} if sync else {}))
    assert r.total_cycles == r1.total_cycles


def attrs_alone(program):
    import attrs

    return attrs.evolve(program, functions=(program.main,), entry=program.main.name)


def test_a_file_of_independent_kernels_from_the_command_line():
    for extra in ((), ("--sync", "manual"), ("--func", "k3"), ("--func", "k3", "--sync", "auto")):
        p = _ptosim("run", DATA / "many_kernels.pto", "--timing-only", "--json", *extra)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["total_cycles"] > 0


# --- popping into a tile of dynamic valid region ------------------------------------------


def _pop_kernel(rows: int, cols: int, split: int, valid: str, dtype: str = "f32") -> str:
    """A cube entry pushing a rows x cols acc tile to its vector peer, which pops it
    (split between the two vector sub-blocks as ``split`` says) into a tile typed
    ``valid`` and scales it; pypto's launch arguments on both functions."""
    prow, pcol = (
        (rows // 2, cols) if split == 1 else (rows, cols // 2) if split == 2 else (rows, cols)
    )
    vt = f"!pto.tile_buf<vec, {prow}x{pcol}x{dtype}{valid}>"
    rt = f"!pto.tile_buf<vec, {prow}x{pcol}x{dtype}>"
    at = f"!pto.tile_buf<acc, {rows}x{cols}x{dtype}>"
    slot = rows * cols * 4
    spmd = "%__pypto_spmd_block_idx: i32, %__pypto_spmd_block_num: i32"
    return f"""module {{
  func.func @mm_aic(%a: !pto.ptr<f32>, {spmd}) attributes {{pto.entry, pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %buf = pto.import_reserved_buffer {{name = "c2v", peer_func = @mm_aiv}} -> i32
    pto.aic_initialize_pipe {{id = 0, dir_mask = 1, slot_size = {slot}}} (c2v_consumer_buf = %buf : i32)
    %t = pto.alloc_tile : {at}
    pto.tpush_to_aiv(%t : {at}) {{split = {split}}}
    return
  }}
  func.func @mm_aiv(%a: !pto.ptr<f32>, {spmd}, %__pypto_spmd_subblock_idx: i32) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %s = arith.constant 2.0 : f32
    %buf = pto.reserve_buffer {{name = "c2v", size = {2 * slot}, location = #pto.address_space<vec>, auto = false, base = 0}} -> i32
    pto.aiv_initialize_pipe {{id = 0, dir_mask = 1, slot_size = {slot}}} (c2v_consumer_buf = %buf : i32)
    %u = pto.tpop_from_aic {{split = {split}}} -> {vt}
    %r = pto.alloc_tile : {rt}
    pto.tmuls ins(%u, %s : {vt}, f32) outs(%r : {rt})
    pto.tfree_from_aic {{split = {split}}}
    return
  }}
}}
"""


@pytest.mark.parametrize(
    "rows,cols,split", [(16, 16, 1), (32, 16, 1), (16, 64, 2), (32, 32, 0), (64, 32, 1)]
)
@pytest.mark.parametrize("functional", [True, False])
def test_a_pop_into_a_dynamic_valid_region_takes_the_pushed_shape(rows, cols, split, functional):
    prow, pcol = (
        (rows // 2, cols) if split == 1 else (rows, cols // 2) if split == 2 else (rows, cols)
    )
    dynamic = sim.simulate(
        parse_text(_pop_kernel(rows, cols, split, ", v_row=?, v_col=?")),
        "a2a3",
        functional=functional,
    )
    static = sim.simulate(
        parse_text(_pop_kernel(rows, cols, split, "")), "a2a3", functional=functional
    )
    assert dynamic.total_cycles == static.total_cycles > 0
    assert dynamic.trace["duration_cycles"].tolist() == static.trace["duration_cycles"].tolist()
    assert dynamic.trace["bytes"].tolist() == static.trace["bytes"].tolist()
    del prow, pcol


def test_a_pop_into_a_static_region_of_another_shape_is_still_refused():
    text = _pop_kernel(16, 16, 1, "").replace("8x16xf32>\n    %r", "8x16xf32, valid=8x8>\n    %r")
    text = text.replace(
        "-> !pto.tile_buf<vec, 8x16xf32>", "-> !pto.tile_buf<vec, 8x16xf32, valid=8x8>"
    )
    text = text.replace(
        "ins(%u, %s : !pto.tile_buf<vec, 8x16xf32>",
        "ins(%u, %s : !pto.tile_buf<vec, 8x16xf32, valid=8x8>",
    )
    with pytest.raises(
        sim.SimulationError,
        match=r"popped 8x16 elements into %u whose valid "
        r"region is 8x8",
    ):
        sim.simulate(parse_text(text), "a2a3")


# --- pypto's launch arguments ---------------------------------------------------------------


@pytest.mark.parametrize("block_dim", [1, 2, 3])
def test_pypto_launch_arguments_are_bound_per_unit(block_dim):
    """The kernels read their launch arguments into GM: each unit writes its own
    block / sub-block index where get_block_idx / get_subblock_idx say it should."""
    text = """module {
  func.func @k(%o: !pto.ptr<i32>, %__pypto_spmd_block_idx: i32, %__pypto_spmd_block_num: i32) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %b = pto.get_block_idx
    %n = pto.get_block_num
    %i = arith.index_cast %b : i64 to index
    %c2 = arith.constant 2 : index
    %j = arith.muli %i, %c2 : index
    %c1 = arith.constant 1 : index
    %j1 = arith.addi %j, %c1 : index
    pto.store_scalar %__pypto_spmd_block_idx, %o[%j] : !pto.ptr<i32>, i32
    pto.store_scalar %__pypto_spmd_block_num, %o[%j1] : !pto.ptr<i32>, i32
    return
  }
}
"""
    import numpy as np

    out = np.full(2 * block_dim, -1, np.int32)
    r = sim.simulate(parse_text(text), "a2a3", block_dim=block_dim, inputs={"o": out})
    got = r.output("o").tolist()
    assert got == [v for b in range(block_dim) for v in (b, block_dim)]


def test_a_two_function_kernel_with_a_subblock_argument_runs_from_the_command_line(tmp_path):
    path = tmp_path / "k.pto"
    path.write_text(_pop_kernel(16, 16, 1, ", v_row=?, v_col=?"))
    p = _ptosim("run", path, "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["total_cycles"] > 0
    p = _ptosim("run", path, "--timing-only", "--block-dim", "2", "--json")
    assert p.returncode == 0, p.stderr


# --- a run that executes no tile instruction says so ----------------------------------------

IDLE = "warning: the run executed no tile instruction: its cycles measure no work"


@pytest.mark.parametrize("trace", ["full", "ops", "none"])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_run_of_no_tile_instruction_warns_naming_the_arguments(n, trace):
    program = parse_file(DATA / "loop_bounded_by_argument.pto")
    r = sim.simulate(program, "a2a3", inputs={"n": n}, functional=False, trace=trace)
    idle = [w for w in r.warnings if w.startswith(IDLE)]
    if n == 0:
        assert r.total_cycles == 0 and len(idle) == 1 and "%n = 0" in idle[0]
        assert "--arg NAME=VALUE" in idle[0]
    else:
        assert r.total_cycles > 0 and idle == []


def test_the_idle_warning_is_in_the_text_report_and_the_json():
    p = _ptosim("run", DATA / "loop_bounded_by_argument.pto", "--arg", "n=0", "--json")
    assert p.returncode == 0, p.stderr
    assert any(w.startswith(IDLE) for w in json.loads(p.stdout)["warnings"])
    p = _ptosim("run", DATA / "loop_bounded_by_argument.pto", "--arg", "n=0")
    assert p.returncode == 0 and IDLE in p.stdout
    p = _ptosim("run", DATA / "loop_bounded_by_argument.pto", "--arg", "n=2")
    assert p.returncode == 0 and "no tile instruction" not in p.stdout


def test_a_kernel_without_tile_instructions_says_so():
    r = sim.simulate(
        parse_file(ROOT / "tests" / "data" / "two_kernels.pto"), "a2a3", inputs={"n": 1, "m": 2}
    )
    assert "warning: the kernel has no tile instruction: its cycles measure no work" in r.warnings


@pytest.mark.parametrize("block_dim", [1, 2])
def test_a_chip_kernel_where_one_unit_works_has_no_idle_warning(block_dim):
    r = sim.simulate(
        parse_text(_pop_kernel(16, 16, 1, "")), "a2a3", block_dim=block_dim, functional=False
    )
    assert not [w for w in r.warnings if "no tile instruction" in w]


# --- functional runs stopped by values from random inputs say so ----------------------------


def _data_driven(op: str, rows: int):
    k = sim.Kernel(f"dd_{op}")
    idx = k.gm("idx", "i32", (rows, 16))
    src = k.gm("src", "i32", (rows, 16))
    out = k.gm("out", "i32", (rows, 16))
    a, i, d = (k.tile("vec", "i32", rows, 16, name=n) for n in "aid")
    k.TLOAD(a, src)
    k.TLOAD(i, idx)
    getattr(k, op)(d, a, i)
    k.TSTORE(out, d)
    return k


@pytest.mark.parametrize("op", ["TGATHER", "TSHL", "TSHR"])
@pytest.mark.parametrize("rows", [8, 16, 32])
def test_values_from_random_inputs_that_stop_a_run_name_input_and_timing_only(op, rows):
    import numpy as np

    k = _data_driven(op, rows)
    with pytest.raises(sim.SimulationError) as e:
        sim.simulate(k, "a2a3")
    msg = str(e.value)
    assert "the inputs drive it" in msg and "--input idx=FILE.npy" in msg
    assert msg.endswith("or run with --timing-only")
    assert sim.simulate(k, "a2a3", functional=False).total_cycles > 0
    # real inputs in range run; real inputs out of range stop with the kernel's message
    good = {
        "idx": np.arange(rows * 16, dtype=np.int32).reshape(rows, 16) % 8,
        "src": np.ones((rows, 16), np.int32),
    }
    assert sim.simulate(k, "a2a3", inputs=good).total_cycles > 0
    bad = {**good, "idx": good["idx"] - 9}
    with pytest.raises(sim.SimulationError) as e:
        sim.simulate(k, "a2a3", inputs=bad)
    assert "random" not in str(e.value) and "-9" in str(e.value)


# --- a two-function kernel whose vector side fits only by liveness ---------------------------


def _two_function_stages(ordered: bool, tiles: int = 3) -> str:
    """The cube pushes one tile; the vector peer pops it, then loads and stores ``tiles``
    64 KiB tiles one after another (192 KiB side by side: more than UB holds next to the
    FIFO buffer), each next load waiting for the previous store when ``ordered``."""
    at = "!pto.tile_buf<acc, 16x16xf32>"
    vt = "!pto.tile_buf<vec, 8x16xf32>"
    T = "!pto.tile_buf<vec, 64x256xf32>"
    V = "!pto.partition_tensor_view<64x256xf32>"
    stages = []
    for i in range(tiles):
        if i and ordered:
            stages.append(
                "    pto.set_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID1>]\n"
                "    pto.wait_flag[<PIPE_MTE3>, <PIPE_MTE2>, <EVENT_ID1>]"
            )
        stages.append(f"""    pto.tload ins(%vx : {V}) outs(%t{i} : {T})
    pto.set_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE3>, <EVENT_ID0>]
    pto.tstore ins(%t{i} : {T}) outs(%vo : {V})""")
    allocs = "\n".join(f"    %t{i} = pto.alloc_tile : {T}" for i in range(tiles))
    body = "\n".join(stages)
    return f"""module {{
  func.func @mm_aic(%px: !pto.ptr<f32>, %po: !pto.ptr<f32>) attributes {{pto.entry, pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %buf = pto.import_reserved_buffer {{name = "c2v", peer_func = @mm_aiv}} -> i32
    pto.aic_initialize_pipe {{id = 0, dir_mask = 1, slot_size = 1024}} (c2v_consumer_buf = %buf : i32)
    %t = pto.alloc_tile : {at}
    pto.tpush_to_aiv(%t : {at}) {{split = 1}}
    return
  }}
  func.func @mm_aiv(%px: !pto.ptr<f32>, %po: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %tx = pto.make_tensor_view %px, shape = [%c64, %c256], strides = [%c256, %c1] : !pto.tensor_view<?x?xf32>
    %to = pto.make_tensor_view %po, shape = [%c64, %c256], strides = [%c256, %c1] : !pto.tensor_view<?x?xf32>
    %vx = pto.partition_view %tx, offsets = [%c0, %c0], sizes = [%c64, %c256] : !pto.tensor_view<?x?xf32> -> {V}
    %vo = pto.partition_view %to, offsets = [%c0, %c0], sizes = [%c64, %c256] : !pto.tensor_view<?x?xf32> -> {V}
    %buf = pto.reserve_buffer {{name = "c2v", size = 2048, location = #pto.address_space<vec>, auto = false, base = 0}} -> i32
    pto.aiv_initialize_pipe {{id = 0, dir_mask = 1, slot_size = 1024}} (c2v_consumer_buf = %buf : i32)
    %u = pto.tpop_from_aic {{split = 1}} -> {vt}
    pto.tfree_from_aic {{split = 1}}
{allocs}
{body}
    return
  }}
}}
"""


@pytest.mark.parametrize("tiles", [3, 4])
def test_a_two_function_kernel_places_its_vector_side_by_liveness_where_ordered(tiles):
    r = sim.simulate(
        parse_text(_two_function_stages(True, tiles)),
        "a2a3",
        functional=False,
        sync="manual",
        races=True,
    )
    assert r.total_cycles > 0
    assert not [f for f in r.races if f.space == "UB"]  # both AIVs store the same GM: theirs
    with pytest.raises(
        sim.UserError,
        match=r"placement: tile %t\d \(65536 B\) does not fit "
        r"in UB .*\(not ordered\)",
    ):
        sim.simulate(
            parse_text(_two_function_stages(False, tiles)), "a2a3", functional=False, sync="manual"
        )


def test_a_scalar_argument_of_the_peer_function_is_taken_by_arg(tmp_path, capsys):
    """A two-function kernel whose vector peer alone declares a scalar argument: the run
    asks for it, and ``--arg`` gives it (it was refused: 'the kernel has no scalar
    argument', so the kernel could not run at all)."""
    from sim.cli import main

    text = _pop_kernel(16, 16, 1, "").replace("    %s = arith.constant 2.0 : f32\n", "")
    text = text.replace(
        "%__pypto_spmd_subblock_idx: i32)", "%__pypto_spmd_subblock_idx: i32, %s: f32)"
    )
    path = tmp_path / "peer_scalar.pto"
    path.write_text(text)
    assert main(["run", str(path), "--timing-only", "--quiet"]) == 2
    assert "%s (f32)" in capsys.readouterr().err
    assert main(["run", str(path), "--timing-only", "--quiet", "--arg", "s=3.0"]) == 0
    assert main(["run", str(path), "--timing-only", "--quiet", "--arg", "nope=1"]) == 2
    assert "(scalar arguments: " in capsys.readouterr().err
