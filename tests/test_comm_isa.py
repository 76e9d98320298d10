"""The communication ISA's smaller pieces: TPUT / TGET's automatic half-chunk split
(communication.md §5.1 step 3), the cache and barrier ops around signals (§6,
instructions-more.md §3.9) and auto mode ordering the communication ops' accesses.

Times are checked against figures read straight from models/a2a3/machine.toml; data against
numpy.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import numpy as np

import sim
from sim.isa.comm import half_split
from sim.isa.tile import TileType

ROOT = Path(__file__).resolve().parent.parent
MACHINE = tomllib.loads((ROOT / "models" / "a2a3" / "machine.toml").read_text())
CLOCK = MACHINE["target"]["clock_hz"]


def _remote(nbytes: int) -> float:
    links = MACHINE["comm"]["links"]
    return links["latency_cycles"] + nbytes / (links["bandwidth_gb_per_s"] * 1e9 / CLOCK)


def _local(path: str, nbytes: int) -> float:
    p = MACHINE["dma"]["paths"][path]
    return p["startup_cycles"] + nbytes // (p["bandwidth_gib_per_s"] * 2**30 / CLOCK)


# --- the half-chunk split (§5.1 step 3) ------------------------------------------------------


def _staged(op: str, rows: int, tile_rows: int = 8, tiles: int = 1) -> sim.Kernel:
    k = sim.Kernel(op)
    src = k.gm("src", "f32", (rows, 256))
    dst = k.gm("dst", "f32", (rows, 256), np.zeros((rows, 256), np.float32))
    stages = [k.tile("vec", "f32", tile_rows, 256) for _ in range(tiles)]
    getattr(k, op)(dst, src, *stages, peer=1 - k.rank_idx)
    return k


def _moves(r, rank: int, op: str, pipe: str) -> list[int]:
    """The bytes of each of ``op``'s items on ``pipe`` (their text: "chunk i/n load N B ...")."""
    t = r.ranks[rank].trace
    rows = t[(t["opcode"] == op) & (t["pipe"] == pipe)]["operands"]
    return [int(re.search(r"(\d+) B\b", s).group(1)) for s in rows]


def test_tput_of_8_to_16_full_tile_chunks_moves_half_tiles_as_ping_pong():
    half = 4 * 256 * 4  # a 4-row half of the 8 x 256 f32 tile
    load, store = _local("GM_UB", half), _remote(half)
    for chunks in (8, 16):
        r = sim.simulate(_staged("TPUT", 8 * chunks), ranks=2)
        for me in (0, 1):  # every element arrived, whatever the chunking
            np.testing.assert_array_equal(r.output("dst", me), r.output("src", 1 - me))
        assert _moves(r, 0, "TPUT", "PIPE_MTE3") == [half] * (2 * chunks)
        # the loads hide behind the (longer) remote stores but the first
        assert abs(r.ranks[0].total_cycles - (load + 2 * chunks * store)) <= 2 * chunks
    full = 8 * 256 * 4
    r = sim.simulate(_staged("TPUT", 8 * 17), ranks=2, functional=False)  # 17: no split
    assert _moves(r, 0, "TPUT", "PIPE_MTE3") == [full] * 17
    one = _local("GM_UB", full) + _remote(full)
    assert abs(r.ranks[0].total_cycles - 17 * one) <= 17


def test_tget_splits_from_8_chunks_up_with_no_upper_bound():
    half = 4 * 256 * 4
    for chunks, split in ((7, False), (8, True), (17, True)):
        r = sim.simulate(_staged("TGET", 8 * chunks), ranks=2, functional=chunks == 17)
        n = 2 * chunks if split else chunks
        assert _moves(r, 1, "TGET", "PIPE_MTE2") == [half * (2 - split)] * n
    for me in (0, 1):
        np.testing.assert_array_equal(r.output("dst", me), r.output("src", 1 - me))
    # remote loads (the longer side) back to back, one local store after the last
    want = 34 * _remote(half) + _local("UB_GM", half)
    assert abs(r.ranks[1].total_cycles - want) <= 34


def test_the_split_needs_one_even_row_major_vec_tile_filled_by_every_chunk():
    vec = TileType("vec", "f32", 8, 256)
    parts = [(8 * i, 8, 0, 256) for i in range(8)]
    got = half_split("tput", vec, 1, parts)
    assert got == [(4 * i, 4, 0, 256) for i in range(16)]
    assert half_split("tput", vec, 2, parts) is None  # a pong tile: step 4 as written
    assert half_split("tput", TileType("vec", "f32", 7, 256), 1, parts) is None
    assert half_split("tput", TileType("vec", "f32", 1, 256), 1, parts) is None
    zn = TileType("vec", "f32", 8, 256, blayout="col_major", slayout="row_major")
    assert half_split("tput", zn, 1, parts) is None
    short = [(8 * i, 8, 0, 128) for i in range(8)]  # valid cols below the capacity
    assert half_split("tput", vec, 1, short) is None
    assert half_split("tput", vec, 1, parts[:7]) is None
    assert half_split("tget", vec, 1, parts * 3) is not None
    assert half_split("tput", vec, 1, parts * 3) is None


def test_the_pong_tile_form_is_not_split():
    r = sim.simulate(_staged("TPUT", 64, tiles=2), ranks=2, functional=False)
    assert _moves(r, 0, "TPUT", "PIPE_MTE3") == [8 * 256 * 4] * 8
