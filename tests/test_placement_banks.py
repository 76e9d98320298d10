"""UB bank conflicts (ASSUMPTION of models/a2a3/machine.toml [buffers.UB]): 16 banks of
32 B, interleaved; a binary op whose two source tiles start at different addresses in one
bank pays 1 cycle per repeat. 16x64 f32 = 4 KiB = 16 repeats of 256 B."""

import ast
import shutil
from pathlib import Path

import sim
from sim.target import models_dir


def _tadd(addr_b, same_tile=False, target="a2a3", opcode="TADD", assign=None):
    k = sim.Kernel("banks")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    a = k.tile("vec", "f32", 16, 64, name="a", addr=0x0)  # bank 0
    b = k.tile("vec", "f32", 16, 64, name="b", addr=addr_b)
    c = k.tile("vec", "f32", 16, 64, name="c", addr=0x8000)
    e1 = k.TLOAD(a, x)
    e2 = k.TLOAD(b, y)
    if assign is not None:
        k.TASSIGN(b, assign)
    k.instr(opcode, c, a, a if same_tile else b, e1, e2)
    r = sim.simulate(k, target, detail="cce")
    row = r.trace[(r.trace["kind"] == "op") & (r.trace["opcode"] == opcode)].iloc[0]
    return int(row["duration_cycles"]), str(row["cce"])


def test_sources_in_the_same_bank_pay_one_cycle_per_repeat():
    same, cce = _tadd(0x1000)  # 4096 / 32 = 128, 128 % 16 = 0: bank 0
    other, cce2 = _tadd(0x1020)  # bank 1
    assert same - other == 16
    assert "ub_bank_conflict(+16 over 16 rep)" in cce and "ub_bank_conflict" not in cce2
    assert _tadd(0x1200)[0] == same  # 0x1200 / 32 = 144, 144 % 16 = 0: bank 0 again
    assert _tadd(0x1100)[0] == other  # 136 % 16 = 8


def test_one_source_read_twice_or_a_non_binary_op_never_conflicts():
    base = _tadd(0x1020)[0]
    assert _tadd(0x1000, same_tile=True)[0] == base
    assert "ub_bank_conflict" in _tadd(0x1000, opcode="TMAX")[1]  # binary family too
    # a tile-scalar op has one source tile
    k = sim.Kernel("s")
    x = k.gm("x", "f32", (16, 64))
    a = k.tile("vec", "f32", 16, 64, addr=0x0)
    b = k.tile("vec", "f32", 16, 64, addr=0x1000)
    e = k.TLOAD(a, x)
    k.TADDS(b, a, 1.0, e)
    r = sim.simulate(k, detail="cce")
    assert not r.trace["cce"].str.contains("ub_bank_conflict").any()


def test_an_address_set_by_tassign_counts():
    clean = _tadd(0x1020)[0]
    assert _tadd(0x1020, assign=0x2000)[0] == clean + 16  # re-bound into bank 0


def test_tiles_the_engine_places_keep_the_calibrated_cost():
    # simulate_op places src0 / src1 back to back (4 KiB apart: same bank) by itself
    assert sim.simulate_op("TADD", "f32", (16, 64)).total_cycles == 56


def test_a_target_without_bank_keys_has_no_conflicts(tmp_path):
    d = tmp_path / "nobanks"
    shutil.copytree(models_dir() / "a2a3", d)
    text = (d / "machine.toml").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("bank_"))
    (d / "machine.toml").write_text(text)
    assert _tadd(0x1000, target=str(d))[0] == _tadd(0x1020)[0]


# --- layering: the IR passes do not run the engine ------------------------------------------


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out.add(node.module or "")
    return out


def test_placement_package_layering():
    pkg = Path(sim.__file__).parent / "placement"
    files = sorted(pkg.glob("*.py"))
    assert {p.name for p in files} >= {"auto.py", "alloc.py", "sync.py", "metrics.py"}
    for p in files:
        mods = _imports(p)
        assert not any(m == "simpy" or m.startswith("simpy.") for m in mods), p.name
        engine = {m for m in mods if m == "sim.engine" or m.startswith("sim.engine.")}
        assert not engine, (p.name, engine)  # the passes sit below the engine
