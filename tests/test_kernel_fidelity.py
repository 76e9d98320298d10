"""The data-path model against the public on-board GEMM figures.

On-board (pto-isa ``kernels/gemm_performance``): GEMM f16 -> f32 6144^3 on 24 A3 cores,
the tiling of examples/gemm.pto (singleCoreM 1536, singleCoreK 6144, singleCoreN 1024,
base 128x64x256, stepK 4): wall 1.506 ms, AIC total cycles 66 725 939 over 24 cores, busy
shares (pipe busy / wall) cube 86.1 %, MTE1 68.1 %, MTE2 95.2 %, MTE3 (the output write,
the FIXPIPE here) 3.1 %. These are measurements, the test's data; models/a2a3/machine.toml
states how each data path was fitted to them.

Per core: 1152 A chunks (128x256 f16, 64 KiB) and 1152 B chunks (256x256 f16, 128 KiB) GM
-> L1; 4608 A extracts (128x64 f16, 16 KiB) into L0A and 4608 B extracts (64x256, 32 KiB)
into L0B; 48 stores of a 128x256 f32 accumulator (charged 2 bytes per element).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dma_formula import dma_cycles

import sim
from sim.kernel.files import kernel_source

AIC_CYCLES = 66_725_939 / 24  # per core
WALL_US = 1506.0
SHARES = {"PIPE_M": 0.861, "PIPE_MTE1": 0.681, "PIPE_MTE2": 0.952, "PIPE_FIX": 0.031}
GEMM = str(Path(__file__).resolve().parent.parent / "examples" / "gemm.py")


def test_the_on_board_wall_and_cycle_count_agree_at_the_model_clock():
    assert AIC_CYCLES / sim.load_target("a2a3").clock_hz * 1e6 == pytest.approx(WALL_US, rel=0.01)


@pytest.mark.parametrize(
    "pipe,busy",
    [
        ("PIPE_MTE2", lambda: 1152 * (dma_cycles("GM_L1", 65536) + dma_cycles("GM_L1", 131072))),
        ("PIPE_MTE1", lambda: 4608 * (dma_cycles("L1_L0A", 16384) + dma_cycles("L1_L0B", 32768))),
        ("PIPE_FIX", lambda: 48 * dma_cycles("L0C_GM", 128 * 256 * 2)),
    ],
)
def test_each_path_gives_the_on_board_busy_cycles(pipe, busy):
    """The machine figures, summed over one core's transfers, are the on-board busy
    cycles (share x AIC cycles) within one point."""
    assert busy() / AIC_CYCLES == pytest.approx(SHARES[pipe], abs=0.01)


@pytest.fixture(scope="module")
def one_block():
    """One core's block of the 6144^3 GEMM (the other 23 cores run the same work on
    their own blocks; the shared GM costs them ~1 %)."""
    build = kernel_source(GEMM)
    k = build(
        m=1536,
        k=6144,
        n=1024,
        singleCoreM=1536,
        singleCoreK=6144,
        singleCoreN=1024,
        baseM=128,
        baseK=64,
        baseN=256,
        stepKa=4,
        stepKb=4,
    )
    return sim.simulate(k, "a2a3", functional=False, trace="none")


def test_one_block_takes_the_on_board_wall_within_10_percent(one_block):
    us = one_block.total_cycles / one_block.target.clock_hz * 1e6
    assert us == pytest.approx(WALL_US, rel=0.10)


@pytest.mark.parametrize("pipe", sorted(SHARES))
def test_one_block_busy_shares_within_5_points(one_block, pipe):
    share = one_block.pipes[pipe]["busy_cycles"] / one_block.total_cycles
    assert share == pytest.approx(SHARES[pipe], abs=0.05)
