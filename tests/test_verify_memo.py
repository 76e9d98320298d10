"""Verdicts of the verifier are kept per process (``sim.isa.verify.verify_instr``).

A verdict depends on the instruction by value, the target and its tiles' valid regions;
these tests run an instruction twice with one of them changed in between and check that
the second run gets its own verdict and its own message location.
"""

from __future__ import annotations

import re

import pytest

import sim
from sim.errors import VerifyError

R, C = 16, 64


def _kernel(src_valid, extra_loads: int = 0):
    """TADD of a and b, b's valid region ``src_valid``, behind ``extra_loads`` more TLOADs."""
    k = sim.Kernel("memo")
    ga, gb, gc = (k.gm(n, "f32", (R, C)) for n in "abc")
    a, b, c = (k.tile("vec", "f32", R, C, valid=(None, None), name=n) for n in "abc")
    for t in (a, c):
        k.set_valid(t, R, C)
    k.set_valid(b, *src_valid)
    for _ in range(1 + extra_loads):
        k.TLOAD(a, ga)
    k.TLOAD(b, gb)
    k.TADD(c, a, b)
    k.TSTORE(gc, c)
    return k


def test_a_valid_kernel_then_an_equal_instruction_on_other_valid_regions():
    sim.simulate(_kernel((R, C)), functional=False)           # clean: verdict kept
    with pytest.raises(VerifyError, match="valid"):
        sim.simulate(_kernel((8, 32)), functional=False)


def test_an_invalid_verdict_does_not_stick_to_the_valid_case():
    with pytest.raises(VerifyError):
        sim.simulate(_kernel((8, 32)), functional=False)
    assert sim.simulate(_kernel((R, C)), functional=False).total_cycles > 0


def _failing_seq(k) -> int:
    with pytest.raises(VerifyError) as e:
        sim.simulate(k, functional=False)
    m = re.search(r"instruction #(\d+) TADD", str(e.value))
    assert m, str(e.value)
    return int(m.group(1))


def test_a_kept_verdict_names_the_instruction_that_breaks_the_rule_now():
    first = _failing_seq(_kernel((8, 32)))
    assert _failing_seq(_kernel((8, 32), extra_loads=3)) >= first + 3
