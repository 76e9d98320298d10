"""Auto-mode sync insertion: the statements it adds, on kernels small enough to derive by
hand, and its correctness (race-free, same results) on bigger ones."""

import numpy as np
import pytest
from placement_kernels import gm_inputs, loop_program, manual_loop_program, relu_sub

import sim
from sim.isa.program import Barrier, For, Instr, SetFlag, WaitFlag
from sim.placement import plan_auto, to_auto


def _shape(prog):
    """The top-level body as short strings: opcodes and sync statements."""
    out = []
    for st in prog.main.body:
        if isinstance(st, Instr):
            out.append(st.opcode)
        elif isinstance(st, SetFlag):
            out.append(f"set {st.src[5:]}>{st.dst[5:]} {st.event}")
        elif isinstance(st, WaitFlag):
            out.append(f"wait {st.src[5:]}>{st.dst[5:]} {st.event}")
        elif isinstance(st, Barrier):
            out.append(f"bar {st.pipe[5:]}")
        elif isinstance(st, For):
            out.append("for")
    return out


def _k():
    k = sim.Kernel("k")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    return k, x, y


def test_one_flag_covers_both_loads_of_a_binary_op():
    # MTE2 runs its queue in order, so a set after the second load fires after both
    k, x, y = _k()
    a, b, c = (k.tile("vec", "f32", 16, 64) for _ in range(3))
    k.TLOAD(a, x)
    k.TLOAD(b, x)
    k.TADD(c, a, b)
    k.TSTORE(y, c)
    assert _shape(to_auto(k)) == [
        "TLOAD",
        "TLOAD",
        "set MTE2>V 0",
        "wait MTE2>V 0",
        "TADD",
        "set V>MTE3 0",
        "wait V>MTE3 0",
        "TSTORE",
    ]


def test_same_pipe_raw_gets_a_barrier():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64)
    k.TEXPANDS(a, 1.0)
    k.TADDS(a, a, 1.0)
    k.TSTORE(y, a)
    assert _shape(to_auto(k)) == [
        "TEXPANDS",
        "bar V",
        "TADDS",
        "set V>MTE3 0",
        "wait V>MTE3 0",
        "TSTORE",
    ]


def test_a_hazard_ordered_through_other_flags_needs_nothing_more():
    # the second TLOAD of a is WAW with the first (same pipe) and WAR with TADD (V):
    # waiting for TADD also proves the first load done (TADD waited for it), so no
    # pipe_barrier(PIPE_MTE2) is added
    k, x, y = _k()
    a, b = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.TADD(b, a, a)
    k.TLOAD(a, x)
    k.TADD(b, b, a)
    k.TSTORE(y, b)
    shape = _shape(to_auto(k))
    assert shape[:7] == [
        "TLOAD",
        "set MTE2>V 0",
        "wait MTE2>V 0",
        "TADD",
        "set V>MTE2 0",
        "wait V>MTE2 0",
        "TLOAD",
    ]
    assert "bar MTE2" not in shape


def test_gm_round_trip_is_ordered():
    k, x, y = _k()
    a, b = k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)
    k.TEXPANDS(a, 3.0)
    k.TSTORE(y, a)
    k.TLOAD(b, y)  # reads what MTE3 wrote: RAW through GM:y
    k.TADDS(b, b, 1.0)
    k.TSTORE(x, b)
    prog = to_auto(k)
    assert "wait MTE3>MTE2 0" in _shape(prog)
    r = sim.simulate(prog, races=True)
    assert r.races == () and (r.output("x") == 4.0).all()


def test_unsynchronised_kernel_becomes_race_free_with_the_manual_results():
    def build(tokens):
        rng = np.random.default_rng(1)
        k = sim.Kernel("chain")
        x = k.gm("x", "f32", (64, 64), rng.standard_normal((64, 64)))
        w = k.gm("w", "f32", (16, 64), rng.standard_normal((16, 64)))
        y = k.gm("y", "f32", (64, 64))
        a = k.tile("vec", "f32", 16, 64, name="a")
        g = k.tile("vec", "f32", 16, 64, name="g")
        c = k.tile("vec", "f32", 16, 64, name="c")
        eg = k.TLOAD(g, w)
        prev = stored = None
        for i in range(4):
            rows = slice(16 * i, 16 * (i + 1))
            ea = k.TLOAD(a, x[rows, :], *([prev] if tokens and prev else []))
            waits = [ea, eg] + ([stored] if stored else [])  # c free once stored
            e = k.TMUL(c, a, g, *(waits if tokens else []))
            prev = e  # a free again once TMUL is done
            e = k.TADDS(c, c, 1.0, *([e] if tokens else []))
            stored = k.TSTORE(y[rows, :], c, *([e] if tokens else []))
        return k

    bare = build(tokens=False)
    assert len(sim.simulate(bare, races=True, sync="manual").races) > 0  # as written: racy
    default = sim.simulate(bare, races=True)  # no sync: auto by default
    assert default.mode == "auto" and default.races == ()
    manual = sim.simulate(build(tokens=True), races=True)
    assert manual.races == ()
    auto = sim.simulate(to_auto(bare), inputs=bare.inputs, races=True)
    assert auto.races == ()
    assert np.array_equal(auto.output("y"), manual.output("y"))


def test_event_pool_exhaustion_falls_back_to_a_full_barrier():
    # nine loads, then nine vector ops each reading one loaded tile: the nine MTE2 -> V
    # dependencies are all outstanding at once (every set precedes every wait), the pool
    # has 8 ids, so the ninth consumer gets pipe_barrier(PIPE_ALL)
    k = sim.Kernel("pool")
    x = k.gm("x", "f32", (9 * 16, 64))
    ts = [k.tile("vec", "f32", 16, 64, name=f"t{i}") for i in range(9)]
    us = [k.tile("vec", "f32", 16, 64, name=f"u{i}") for i in range(9)]
    for i, t in enumerate(ts):
        k.TLOAD(t, x[16 * i : 16 * (i + 1), :])
    for t, u in zip(ts, us, strict=True):
        k.TADDS(u, t, 1.0)
    plan = plan_auto(k)
    shape = _shape(plan.program)
    assert plan.stats.pairs == 8 and plan.stats.fallback_barriers == 1
    assert sorted(s for s in shape if s.startswith("set")) == [f"set MTE2>V {i}" for i in range(8)]
    assert shape.count("bar ALL") == 1
    assert shape.index("bar ALL") == len(shape) - 2  # right before the ninth TADDS
    assert sim.simulate(plan.program, inputs=k.inputs, races=True).races == ()


def test_builder_relu_sub_in_auto_mode_is_race_free_and_equal():
    k = relu_sub()
    auto = sim.simulate(to_auto(k), inputs=k.inputs, races=True)
    manual = sim.simulate(k, races=True)
    assert auto.races == () and np.array_equal(auto.output("out"), manual.output("out"))


def test_hand_synchronised_loop_in_auto_mode_primes_and_drains_its_loop_flags():
    prog = manual_loop_program(4)
    inputs = gm_inputs(8 * 32)
    manual = sim.simulate(prog, inputs=inputs, races=True)
    plan = plan_auto(prog)
    auto = sim.simulate(plan.program, inputs=inputs, races=True)
    assert manual.races == () and auto.races == ()
    assert np.array_equal(auto.output("po"), manual.output("po"))
    shape = _shape(plan.program)
    i = shape.index("for")
    # WAR across iterations: V -> MTE2 (inputs free) and MTE3 -> V (result free), one
    # flag per ping / pong buffer, primed before the loop and drained after it
    primes, drains = shape[:i], shape[i + 1 :]
    assert sorted(p for p in primes if p.startswith("set")) == [
        "set MTE3>V 0",
        "set MTE3>V 1",
        "set V>MTE2 0",
        "set V>MTE2 1",
    ]
    assert sorted(d.replace("wait", "set") for d in drains) == sorted(
        p for p in primes if p.startswith("set")
    )
    assert plan.stats.loop_flags == 4 and plan.stats.fallback_barriers == 0


def test_double_buffered_loop_alternates_event_ids():
    plan = plan_auto(loop_program(8))
    loop = next(st for st in plan.program.main.body if isinstance(st, For))
    flags = [st for st in loop.body if isinstance(st, (SetFlag, WaitFlag))]
    # the carried WAR hazards only exist between iterations two apart (the copies
    # alternate), so their flags alternate two ids and are primed twice
    primes = [st for st in plan.program.main.body if isinstance(st, SetFlag)]
    assert len(primes) == 4
    assert all(not isinstance(st.event, int) for st in flags)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_loops_of_any_trip_count_balance_their_flags(n):
    prog = loop_program(max(n, 1)) if n else loop_program(1)
    if n == 0:  # a loop that never runs: primes and drains still pair up
        import attrs

        from sim.isa.program import Const

        fn = prog.main
        body = tuple(
            attrs.evolve(st, upper=Const(0)) if isinstance(st, For) else st for st in fn.body
        )
        prog = attrs.evolve(prog, functions=(attrs.evolve(fn, body=body),))
    r = sim.simulate(to_auto(prog), inputs=gm_inputs(max(n, 1) * 32), races=True)
    assert r.races == ()


def test_nested_loops_and_branches_stay_race_free_and_correct():
    import attrs

    from sim.isa.program import Alloc, Arith, Const, If, Scalar

    inner = loop_program(4)
    fn = inner.main
    loop = fn.body[-1]
    inputs = gm_inputs(4 * 32)
    want = (np.maximum(inputs["pa"] - inputs["pb"], 0) * np.float32(0.25)).reshape(4, -1)
    # the loop twice, inside an outer loop
    outer = For(Scalar("j"), Const(0), Const(2), Const(1), (loop,))
    nested = attrs.evolve(inner, functions=(attrs.evolve(fn, body=fn.body[:-1] + (outer,)),))
    r = sim.simulate(to_auto(nested), inputs=inputs, races=True)
    assert r.races == () and np.array_equal(r.output("po"), want.reshape(-1))
    # a conditional vector op on r in the first two iterations
    r_t = next(st.tile for st in loop.body if isinstance(st, Alloc) and st.tile.name == "r")
    cond = Scalar("c", "i1")
    body = list(loop.body)
    body[-1:-1] = [
        Arith(cond, "arith.cmpi", (loop.iv, Const(2)), {"predicate": "slt"}),
        If(cond, (Instr("TADDS", (r_t,), (r_t, Const(1.0, "f32"))),)),
    ]
    branchy = attrs.evolve(
        inner,
        functions=(attrs.evolve(fn, body=fn.body[:-1] + (attrs.evolve(loop, body=tuple(body)),)),),
    )
    r = sim.simulate(to_auto(branchy), inputs=inputs, races=True)
    want[:2] += 1
    assert r.races == () and np.allclose(r.output("po"), want.reshape(-1))
