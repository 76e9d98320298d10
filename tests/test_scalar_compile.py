"""``compile_op`` (an arith statement resolved once, as the interpreter runs scalar code) gives
what ``evaluate`` (the generic path) gives, for every op it compiles and the ops it hands back."""

import random
import re

import numpy as np
import pytest

from sim.base.errors import SimulationError
from sim.engine.scalars import _IOPS, compile_op, evaluate

TYPES = ("index", "i64", "i32", "i16", "i8", "i1")
EDGES = (0, 1, -1, 2, 7, -8, 255, 256, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63))


def _same(op, args, types, t, attrs=None):
    attrs = attrs or {}
    try:
        want = evaluate(op, list(args), list(types), t, attrs)
    except (SimulationError, ValueError) as e:  # the interpreter reports both
        with pytest.raises(type(e), match=re.escape(str(e))):
            compile_op(op, list(types), t, attrs)(list(args))
        return str(e)
    assert compile_op(op, list(types), t, attrs)(list(args)) == want, (op, args, t)
    return want


@pytest.mark.parametrize("name", sorted(_IOPS))
@pytest.mark.parametrize("t", TYPES)
def test_integer_ops_match_evaluate(name, t):
    rng = random.Random(f"{name}{t}")
    pairs = [(a, b) for a in EDGES for b in EDGES[:6]]
    pairs += [(rng.randrange(-(2**40), 2**40), rng.randrange(0, 63)) for _ in range(50)]
    for a, b in pairs:
        _same(f"arith.{name}", (a, b), (t, t), t)


@pytest.mark.parametrize("t", TYPES + ("f32", "f16"))
def test_constant_matches_evaluate(t):
    with np.errstate(over="ignore"):  # large integers overflow f16 to inf, both ways
        for v in (*EDGES, 1.5, -2.25, 1e10):
            _same("arith.constant", (v,), (t,), t)


@pytest.mark.parametrize(
    "op,args,types,t,attrs",
    [
        ("arith.divsi", (7, -2), ("index", "index"), "index", {}),
        ("arith.divsi", (7, 0), ("index", "index"), "index", {}),
        ("arith.remui", (-7, 3), ("i32", "i32"), "i32", {}),
        ("arith.ceildivsi", (9, 4), ("index", "index"), "index", {}),
        ("arith.cmpi", (3, 5), ("index", "index"), "i1", {"predicate": "slt"}),
        ("arith.select", (0, 4, 9), ("i1", "index", "index"), "index", {}),
        ("arith.index_cast", (2**40 + 3,), ("i64",), "i32", {}),
        ("arith.addf", (1.5, 2**-30), ("f32", "f32"), "f32", {}),
        ("arith.sitofp", (3,), ("i32",), "f16", {}),
    ],
)
def test_generic_ops_are_handed_back(op, args, types, t, attrs):
    _same(op, args, types, t, attrs)
