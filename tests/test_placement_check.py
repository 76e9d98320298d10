"""Manual-mode checks: hand placement rules, overlapping tiles, races and deadlocks."""

import pytest

import sim
from sim.studies import check_placement, check_races, format_findings


def _k():
    k = sim.Kernel("k")
    x = k.gm("x", "f32", (16, 64))
    y = k.gm("y", "f32", (16, 64))
    return k, x, y


def test_overlapping_tiles_with_unordered_accesses_name_both_tiles_and_ranges():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64, name="a", addr=0x0)  # [0x0, 0x1000)
    b = k.tile("vec", "f32", 16, 64, name="b", addr=0x800)  # [0x800, 0x1800)
    k.TLOAD(a, x)
    k.TEXPANDS(b, 1.0)
    with pytest.raises(sim.VerifyError) as e:
        check_placement(k)
    msg = str(e.value)
    assert "%a [0x0, 0x1000)" in msg and "%b [0x800, 0x1800)" in msg and "overlap in UB" in msg
    found = check_placement(k, raise_errors=False)
    assert [(f.kind, f.first, f.second, f.first_range, f.second_range) for f in found] == [
        ("overlap", "%a", "%b", (0x0, 0x1000), (0x800, 0x1800))
    ]


def test_ordered_overlap_is_legal_reuse():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64, name="a", addr=0x0)
    b = k.tile("vec", "f32", 16, 64, name="b", addr=0x800)
    e = k.TLOAD(a, x)
    e = k.TSTORE(y, a, e)
    k.TEXPANDS(b, 1.0, e)  # waits until the store has read a
    assert check_placement(k) == []


def test_capacity_alignment_and_reserved_rules():
    k, x, y = _k()
    k.tile("vec", "f32", 16, 64, name="far", addr=196_608 - 2048)  # runs past 192 KiB
    k.tile("vec", "f32", 16, 64, name="odd", addr=0x10)  # not 32-B aligned
    k.tile("vec", "f32", 16, 64, name="scr", addr=188_416)  # TMP_UB_OFFSET scratch
    found = check_placement(k, raise_errors=False)
    kinds = {(f.kind, f.first) for f in found}
    assert ("capacity", "%far") in kinds and ("alignment", "%odd") in kinds
    assert ("reserved", "%scr") in kinds and ("reserved", "%far") in kinds
    scr = next(f for f in found if f.first == "%scr")
    assert "[0x2e000, 0x2f000)" in scr.message and "TMP_UB_OFFSET" in scr.message
    with pytest.raises(sim.VerifyError, match="rule: alignment"):
        check_placement(k)


def test_tassign_addresses_are_checked_too():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64, name="a")
    k.TASSIGN(a, 0x44)
    found = check_placement(k, raise_errors=False)
    assert [(f.kind, f.first) for f in found] == [("alignment", "%a")]
    assert "TASSIGN places tile %a" in found[0].message


def test_check_races_lists_races_and_formats_them():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64, name="a")
    b = k.tile("vec", "f32", 16, 64, name="b")
    k.TLOAD(a, x)
    k.TADD(b, a, a)
    k.TSTORE(y, b)
    found = check_races(k)
    assert [f.kind for f in found] == ["RAW", "RAW"]
    assert {f.space for f in found} == {"UB"}
    assert any("PIPE_MTE2 #0 TLOAD" in f.message and "PIPE_V #1 TADD" in f.message for f in found)
    assert any("PIPE_V #1 TADD" in f.message and "PIPE_MTE3 #2 TSTORE" in f.message for f in found)
    text = format_findings(found, kernel="k")
    assert text.splitlines()[-1] == "k: 2 findings"
    assert text.startswith("RAW: RAW race in UB")


def test_check_races_reports_pending_and_unmatched_sets():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64)
    k.TLOAD(a, x)
    k.set_flag("PIPE_MTE2", "PIPE_V", 3)
    k.set_flag("PIPE_MTE2", "PIPE_V", 3)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 3)
    k.TADDS(a, a, 1.0)
    assert sorted(f.kind for f in check_races(k)) == ["pending_set", "unmatched_set"]


def test_check_races_reports_a_deadlock():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64)
    k.wait_flag("PIPE_MTE2", "PIPE_V", 1)  # never set
    k.TEXPANDS(a, 1.0)
    found = check_races(k)
    assert [f.kind for f in found] == ["deadlock"]
    assert "PIPE_MTE2->PIPE_V#1" in found[0].message


def test_clean_kernel():
    k, x, y = _k()
    a = k.tile("vec", "f32", 16, 64)
    e = k.TLOAD(a, x)
    e = k.TADDS(a, a, 1.0, e)
    k.TSTORE(y, a, e)
    assert check_races(k) == []
    assert format_findings([]) == "clean: no races, no deadlock"
