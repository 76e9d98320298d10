"""The whole-chip examples, numerically checked at small sizes.

``examples/gemm.py`` (production-style tiled GEMM over cores) against numpy; the structure
checks count what the tiling parameters imply (hand-derived per case below).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import sim

EX = Path(__file__).resolve().parent.parent / "examples"


def _example(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}", EX / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _gemm_check(r, m, k, n):
    A = r.output("a").reshape(m, k).astype(np.float64)
    B = r.output("b").reshape(k, n).astype(np.float64)
    C = r.output("c").reshape(m, n)
    assert C.dtype == np.float32
    # f16 products are exact in f32 accumulation; the only rounding is f32 summation order
    assert np.allclose(C, A @ B, rtol=1e-5, atol=1e-3 * np.abs(A @ B).max())


@pytest.mark.parametrize(
    "params",
    [
        {},  # defaults: 4 cores
        dict(
            m=64,
            k=128,
            n=128,
            singleCoreM=64,
            singleCoreK=128,
            singleCoreN=128,
            baseM=32,
            baseK=16,
            baseN=64,
            stepKa=1,
            stepKb=4,
        ),  # 1 core, uneven steps
        dict(
            m=96,
            k=64,
            n=96,
            singleCoreM=32,
            singleCoreK=64,
            singleCoreN=48,
            baseM=16,
            baseK=32,
            baseN=48,
            stepKa=2,
            stepKb=1,
        ),  # 6 cores
    ],
)
def test_gemm_matches_numpy(params):
    g = _example("gemm")
    kern = g.build(**params)
    full = dict(m=128, k=256, n=128, singleCoreM=64, singleCoreN=64) | params
    assert kern.block_dim == (full["m"] // full["singleCoreM"]) * (full["n"] // full["singleCoreN"])
    r = sim.simulate(kern, races=True)
    _gemm_check(r, full["m"], full["k"], full["n"])
    # the L1 / L0 ping-pong hand-offs never set an event id again while it is pending
    assert not r.races, r.races[:1]


def test_gemm_structure_follows_the_tiling():
    """Defaults: per core 64x64 of C = 2 x 1 base tiles of 32x64, K = 256 = 8 base steps;
    A chunks of 32*2 and B chunks of 32*2 -> 4 + 4 loads per tile, 8 + 8 extracts, 1
    TMATMUL + 7 TMATMUL_ACC, 1 store."""
    r = sim.simulate(_example("gemm").build(), functional=False)
    ops = r.trace[(r.trace["kind"] == "op") & (r.trace["core"] == 0)]
    counts = {o: n for o, n in ops["opcode"].value_counts().items() if n}
    assert counts == {"TLOAD": 16, "TEXTRACT": 32, "TMATMUL": 2, "TMATMUL_ACC": 14, "TSTORE": 2}
    assert set(r.trace["core"]) == {0, 1, 2, 3}
    # double buffering: the cube starts step 2 before MTE2 has loaded every chunk
    mm = ops[ops["opcode"].str.startswith("TMATMUL")]
    loads = ops[ops["opcode"] == "TLOAD"]
    assert mm["start_cycle"].iloc[1] < loads["end_cycle"].max()


def test_gemm_rejects_a_tiling_that_does_not_divide():
    with pytest.raises(ValueError, match="baseM=48 must divide singleCoreM=64"):
        _example("gemm").build(baseM=48)


def _attention(r, cores, s0, s1, head):
    for b in range(cores):
        Q = r.output("q").reshape(-1, head)[b * s0 : (b + 1) * s0].astype(np.float64)
        KT = r.output("kt").reshape(head, -1)[:, b * s1 : (b + 1) * s1].astype(np.float64)
        V = r.output("v").reshape(-1, head)[b * s1 : (b + 1) * s1].astype(np.float64)
        S = Q @ KT / np.sqrt(head)
        P = np.exp(S - S.max(axis=1, keepdims=True))
        want = (P / P.sum(axis=1, keepdims=True)) @ V
        got = r.output("o").reshape(-1, head)[b * s0 : (b + 1) * s0]
        # P goes to the cube as f16: ~1e-3 relative error on O
        assert np.allclose(got, want, atol=2e-3 * np.abs(want).max()), b


@pytest.mark.parametrize(
    "params",
    [
        dict(s1=256, cores=1),
        dict(s1=384, cores=2),
        dict(s1=128, s1_tile=64, head=64, s0=64, cores=3),
    ],
)
def test_flash_attention_matches_numpy(params):
    kern = _example("flash_attention").build(**params)
    full = dict(s1_tile=128, head=128, s0=128) | params
    _attention(sim.simulate(kern), full["cores"], full["s0"], full["s1"], full["head"])


def test_flash_attention_preloads_the_next_scores():
    """Cube order with preload: QK(0), QK(1), PV(0), QK(2), PV(1), PV(2) — the matmul into
    the score accumulator for block j+1 is issued before the one into O for block j; the
    vector units run the softmax of a block while the cube computes the next."""
    r = sim.simulate(_example("flash_attention").build(s1=384), functional=False)
    t = r.trace
    mm = t[(t["opcode"] == "TMATMUL") & (t["unit"] == "AIC")].sort_values("start_cycle")
    order = ["s" if o.startswith("%s_acc") else "o" for o in mm["operands"]]
    assert order == ["s", "s", "o", "s", "o", "o"]
    v = t[(t["unit"] == "AIV0") & (t["pipe"] == "PIPE_V") & (t["kind"] == "op")]
    # the softmax of some block overlaps a cube matmul
    assert any(
        ((v["start_cycle"] < e) & (v["end_cycle"] > s)).any()
        for s, e in zip(mm["start_cycle"], mm["end_cycle"], strict=True)
    )


def test_gemm_pto_matches_numpy_and_the_builder_kernel():
    """examples/gemm.pto: the same tiling written with scf.for loops and level-3 flags,
    parameterised by scalar arguments; on 4 cores (2 x 2 blocks of 128 x 256, K = 512 in two
    ping/pong L1 chunks) it computes A.B and takes within 2 % of the builder kernel's cycles."""
    m, k, n = 256, 512, 512
    args = dict(m=m, k=k, n=n, singleCoreM=128, singleCoreN=256)
    r = sim.simulate(sim.parse_file(EX / "gemm.pto"), inputs=args, block_dim=4)
    A = r.output("pa").reshape(m, k).astype(np.float64)
    B = r.output("pb").reshape(k, n).astype(np.float64)
    assert np.allclose(
        r.output("pc").reshape(m, n), A @ B, rtol=1e-5, atol=1e-3 * np.abs(A @ B).max()
    )
    built = sim.simulate(
        _example("gemm").build(
            m=m,
            k=k,
            n=n,
            singleCoreM=128,
            singleCoreK=k,
            singleCoreN=256,
            baseM=128,
            baseK=64,
            baseN=256,
            stepKa=4,
            stepKb=4,
        ),
        functional=False,
    )
    assert abs(r.total_cycles - built.total_cycles) <= 0.02 * built.total_cycles
    # a fifth core has no block: it idles
    idle = sim.simulate(sim.parse_file(EX / "gemm.pto"), inputs=args, block_dim=5, functional=False)
    assert not ((idle.trace["core"] == 4) & (idle.trace["kind"] == "op")).any()
