"""Random kernels never crash the engine: they run, or fail with a UserError subclass
(verifier error, deadlock, simulation error) — never another exception, never a hang."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sim
from sim.base.errors import UserError

PIPES = ["PIPE_MTE2", "PIPE_V", "PIPE_MTE3", "PIPE_S"]
OPS = [
    "TADD",
    "TSUB",
    "TMULS",
    "TRELU",
    "TEXP",
    "TDIVS",
    "TREM",
    "TROWSUM",
    "TCVT",
    "TLOAD",
    "TSTORE",
    "set_flag",
    "wait_flag",
    "barrier",
    "set_valid",
]


def _build(steps, dtype, rows, cols):
    k = sim.Kernel("fuzz")
    g = k.gm("g", dtype, (rows, cols))
    tiles = [
        k.tile("vec", dtype, rows, cols, valid=(None, None) if i == 3 else (rows, cols))
        for i in range(4)
    ]
    k.set_valid(tiles[3], rows, cols)
    tokens = []
    for op, a, b, c, flag in steps:
        ta, tb, tc = tiles[a], tiles[b], tiles[c]
        waits = tokens[-flag % len(tokens) :][:1] if (tokens and flag % 3 == 0) else []
        if op == "TLOAD":
            tokens.append(k.TLOAD(ta, g, *waits))
        elif op == "TSTORE":
            tokens.append(k.TSTORE(g, ta, *waits))
        elif op in ("TADD", "TSUB"):
            tokens.append(k.instr(op, ta, tb, tc, *waits))
        elif op in ("TMULS", "TDIVS"):
            tokens.append(k.instr(op, ta, tb, 2.0 if flag % 2 else 0.0, *waits))
        elif op in ("TRELU", "TEXP"):
            tokens.append(k.instr(op, ta, tb, *waits))
        elif op == "TREM":
            tokens.append(k.TREM(ta, tb, tc, *waits))
        elif op == "TROWSUM":
            tokens.append(k.TROWSUM(ta, tb, tc, *waits))
        elif op == "TCVT":
            tokens.append(k.TCVT(ta, tb, *waits, rmode="RINT"))
        elif op == "set_flag":
            k.set_flag(PIPES[a], PIPES[b], flag % 8)
        elif op == "wait_flag":
            k.wait_flag(PIPES[a], PIPES[b], flag % 8)
        elif op == "barrier":
            k.pipe_barrier(["PIPE_V", "PIPE_ALL", "PIPE_MTE2"][a % 3])
        else:
            k.set_valid(tiles[3], max(1, rows - a), max(1, cols - 8 * b))
    return k


step = st.tuples(
    st.sampled_from(OPS),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(0, 20),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(step, min_size=1, max_size=14),
    dtype=st.sampled_from(["f32", "f16", "i32", "i16"]),
    shape=st.sampled_from([(16, 64), (1, 64), (8, 128), (4, 16)]),
    functional=st.booleans(),
)
def test_random_kernels_run_or_fail_cleanly(steps, dtype, shape, functional):
    try:
        k = _build(steps, dtype, *shape)
        r = sim.simulate(k, functional=functional, races=True)
    except UserError as e:
        assert str(e)  # a message, naming what went wrong
        return
    assert r.total_cycles >= 0
    again = sim.simulate(k, functional=functional, races=True)
    assert again.trace.equals(r.trace)  # deterministic
