"""Forms real compilers emit, rebuilt as small kernels from pto-ir-in-the-wild.md and
instructions-more.md: each one ran into a refusal or an unsupported op before."""

from pathlib import Path

import numpy as np

import sim
from sim.frontend import parse_file, parse_text
from sim.placement.auto import plan_auto

DATA = Path(__file__).resolve().parent / "data" / "real"


# --- auto placement of a kernel that asks for exactly the UB --------------------------------


def test_tiles_that_fill_the_ub_exactly_are_placed_without_the_bank_stagger():
    program = parse_file(DATA / "ub_exactly_full.pto")
    plan = plan_auto(program, "a2a3")
    addrs = {name: a[1] for name, a in plan.addresses.items()}
    # 64 + 64 + 56 KiB = the 184 KiB A2/A3 leaves to user tiles: packed, no gap
    assert sorted(addrs.values()) == [0, 0x10000, 0x20000]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((128, 128)).astype(np.float32)
    y = rng.standard_normal((128, 128)).astype(np.float32)
    w = rng.standard_normal((112, 128)).astype(np.float32)
    r = sim.simulate(program, "a2a3", sync="auto", inputs={"px": x, "py": y, "pw": w})
    np.testing.assert_array_equal(r.output("pz").reshape(128, 128), x + y)


def test_the_bank_stagger_stays_where_it_fits():
    text = (DATA / "ub_exactly_full.pto").read_text()
    # the same kernel with a 16 KiB third tile leaves room: %b moves off %a's bank
    small = text.replace("112", "16").replace("v_row=16, v_col=128", "v_row=16, v_col=128")
    plan = plan_auto(parse_text(small), "a2a3")
    a, b = plan.addresses["a"][1], plan.addresses["b"][1]
    assert (a // 32) % 16 != (b // 32) % 16
