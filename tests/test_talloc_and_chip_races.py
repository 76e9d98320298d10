"""``talloc_to_aiv`` takes a FIFO slot before the producer computes into it, and the
default ``ptosim run`` (race checks on for manual kernels) runs the chip examples."""

from __future__ import annotations

from pathlib import Path

import pytest

import sim
from sim.base.errors import DeadlockError
from sim.cli import main as ptosim

ROOT = Path(__file__).resolve().parent.parent

# One slot (size == slot_size); ROUNDS talloc + push pairs on the cube, no consumer.
KERNEL = """\
module {{
  func.func @k_aic(%a: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %buf = pto.reserve_buffer {{name = "c2v", size = 8192, location = #pto.address_space<mat>, auto = false, base = 0}} -> i32
    pto.aic_initialize_pipe {{id = 0, dir_mask = 1, slot_size = 8192}} (c2v_consumer_buf = %buf : i32)
{rounds}    return
  }}
}}
"""
ROUND = """\
    %t{i} = pto.talloc_to_aiv {{split = 1}} -> !pto.tile_buf<acc, 16x16xf32>
    pto.tpush_to_aiv(%t{i} : !pto.tile_buf<acc, 16x16xf32>) {{split = 1}}
"""


def _kernel(rounds: int):
    text = KERNEL.format(rounds="".join(ROUND.format(i=i) for i in range(rounds)))
    return sim.parse_text(text, "talloc.pto")


def test_the_push_after_a_talloc_uses_its_slot_instead_of_waiting_again():
    # with one slot, a push that waited for a second free slot would deadlock
    r = sim.simulate(_kernel(1), "a2a3", functional=False)
    pushes = r.trace[r.trace.opcode == "TPUSH"]
    assert len(pushes) == 1 and r.total_cycles == int(pushes.end_cycle.max())


def test_a_talloc_waits_for_a_free_slot():
    # the second round finds the only slot full and nobody frees it
    with pytest.raises(DeadlockError, match="free slot"):
        sim.simulate(_kernel(2), "a2a3", functional=False)


@pytest.mark.parametrize("example", ["flash_attention.py", "gemm.py"])
def test_default_run_of_the_chip_examples(example, capsys):
    # manual kernels run with race checks in the CLI; chip-level FIFO flags must not reach
    # a unit's race detector as if they were its own set/wait pairs
    assert ptosim(["run", str(ROOT / "examples" / example), "--timing-only"]) == 0
    captured = capsys.readouterr()
    assert "total cycles:" in captured.out and "Traceback" not in captured.err
