"""`ptosim check --races` and `ptosim compare`: exit codes and output contracts."""

import json
import subprocess
import sys
import textwrap

EXAMPLE = "examples/relu_sub.py"

RACY = textwrap.dedent("""\
    import sim

    def build():
        k = sim.Kernel("racy")
        x = k.gm("x", "f32", (16, 64))
        y = k.gm("y", "f32", (16, 64))
        a = k.tile("vec", "f32", 16, 64, name="a")
        k.TLOAD(a, x)          # no flag: TADDS races with the load (RAW on %a)
        k.TADDS(a, a, 1.0)
        k.TSTORE(y, a)         # no flag: the store races with the add (RAW on %a)
        return k
    """)


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "sim", *args], capture_output=True, text=True, cwd=cwd
    )


def test_check_races_clean_exits_0():
    p = _cli("check", "--races", EXAMPLE)
    assert p.returncode == 0, p.stderr
    assert "clean" in p.stdout


def test_check_races_reports_and_exits_1(tmp_path):
    k = tmp_path / "racy.py"
    k.write_text(RACY)
    p = _cli("check", "--races", str(k))
    assert p.returncode == 1, p.stderr
    assert p.stdout.count("RAW") >= 2
    assert "PIPE_MTE2" in p.stdout and "PIPE_V" in p.stdout and "PIPE_MTE3" in p.stdout
    assert "%a" in p.stdout


def test_compare_json_contract(tmp_path):
    p = _cli("compare", EXAMPLE, "--json", "--plot", str(tmp_path / "c.png"))
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    for mode in ("manual", "auto"):
        m = data[mode]
        assert isinstance(m["total_cycles"], int)
        assert isinstance(m["syncs"], int) and isinstance(m["barriers"], int)
        assert m["peak_bytes"]["UB"] == 6 * 32 * 64 * 4  # six 8 KiB tiles live at once
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_text_table_and_racy_manual(tmp_path):
    k = tmp_path / "racy.py"
    k.write_text(RACY)
    p = _cli("compare", str(k))
    assert p.returncode == 0, p.stderr
    rows = {line.split()[0]: line.split()[1:] for line in p.stdout.splitlines()[2:] if line.strip()}
    manual_races, auto_races = rows["races"][0], rows["races"][1]
    assert int(manual_races) >= 2 and int(auto_races) == 0


BAD_ADDRESSES = textwrap.dedent("""\
    import sim

    def build():
        k = sim.Kernel("bad")
        x = k.gm("x", "f32", (16, 64))
        a = k.tile("vec", "f32", 16, 64, name="a", addr=188416)   # inside TMP_UB scratch
        b = k.tile("vec", "f32", 16, 64, name="b", addr=0x10)     # not 32-byte aligned
        e = k.TLOAD(a, x)
        k.TADDS(b, a, 1.0, e)
        return k
    """)


def test_hand_placement_is_checked_by_check_and_run(tmp_path):
    k = tmp_path / "bad.py"
    k.write_text(BAD_ADDRESSES)
    p = _cli("check", str(k))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "%a" in p.stderr and "[0x2e000, 0x2f000)" in p.stderr and "reserved" in p.stderr
    assert "%b" in p.stderr and "multiple of 32" in p.stderr
    r = _cli("run", str(k))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "%a" in r.stderr and "reserved" in r.stderr
