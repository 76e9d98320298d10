"""Same program, target, inputs and seed -> same cycles, same trace, same GM
(docs/concepts/timing.md)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sim

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "relu_sub.py"

# A kernel with an unbound GM input (seeded random data), two buffer sets and all three
# DMA/vector pipes overlapping, so the schedule has real concurrency to get wrong.
RANDOM_KERNEL = textwrap.dedent("""\
    import sim

    def build():
        k = sim.Kernel("noisy")
        x = k.gm("x", "f32", (64, 64))            # unbound: seeded random data
        y = k.gm("y", "f32", (64, 64))
        bufs = [(k.tile("vec", "f32", 16, 64), k.tile("vec", "f32", 16, 64)) for _ in range(2)]
        free = [None, None]
        for i in range(4):
            a, r = bufs[i % 2]
            e = k.TLOAD(a, x[i * 16:(i + 1) * 16, :], *([free[i % 2]] if free[i % 2] else []))
            e = k.TMULS(r, a, 3.0, e)
            e = k.TADD(r, r, a, e)
            free[i % 2] = k.TSTORE(y[i * 16:(i + 1) * 16, :], r, e)
        return k
    """)

# Runs in a fresh interpreter: simulate the kernel file, dump trace + GM.
SUBPROCESS_SCRIPT = textwrap.dedent("""\
    import importlib.util, sys
    import sim
    import numpy as np
    spec = importlib.util.spec_from_file_location("kmod", sys.argv[1])
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    r = sim.simulate(m.build(), "a2a3", seed=int(sys.argv[3]))
    r.trace.to_pickle(sys.argv[2] + ".pkl")
    np.savez(sys.argv[2] + ".npz", **r.gm)
    print(r.total_cycles)
    """)


def load_kernel(path: Path):
    spec = importlib.util.spec_from_file_location(f"k_{path.stem}", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m.build()


@pytest.fixture
def random_kernel_file(tmp_path):
    p = tmp_path / "noisy.py"
    p.write_text(RANDOM_KERNEL)
    return p


def assert_same_gm(g1: dict, g2: dict):
    assert g1.keys() == g2.keys()
    for name in g1:
        assert g1[name].dtype == g2[name].dtype, name
        np.testing.assert_array_equal(g1[name], g2[name], err_msg=name)


@pytest.mark.parametrize("path", ["example", "random"])
def test_twice_in_process_identical(path, random_kernel_file):
    p = EXAMPLE if path == "example" else random_kernel_file
    r1 = sim.simulate(load_kernel(p), "a2a3")
    r2 = sim.simulate(load_kernel(p), "a2a3")
    assert r1.total_cycles == r2.total_cycles > 0
    pd.testing.assert_frame_equal(r1.trace, r2.trace)
    assert_same_gm(r1.gm, r2.gm)


def test_same_kernel_object_simulated_twice(random_kernel_file):
    k = load_kernel(random_kernel_file)
    r1, r2 = sim.simulate(k), sim.simulate(k)
    pd.testing.assert_frame_equal(r1.trace, r2.trace)
    assert_same_gm(r1.gm, r2.gm)


@pytest.mark.parametrize("hashseed", ["0", "4242"])
def test_fresh_subprocess_identical(tmp_path, random_kernel_file, hashseed):
    """A fresh interpreter (with a different string-hash seed, so set/dict-of-str ordering
    differs) reproduces the in-process run exactly."""
    script = tmp_path / "run_once.py"
    script.write_text(SUBPROCESS_SCRIPT)
    out = tmp_path / f"sub{hashseed}"
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    p = subprocess.run(
        [sys.executable, str(script), str(random_kernel_file), str(out), "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    here = sim.simulate(load_kernel(random_kernel_file), "a2a3", seed=0)
    assert int(p.stdout.strip()) == here.total_cycles
    pd.testing.assert_frame_equal(pd.read_pickle(f"{out}.pkl"), here.trace)
    with np.load(f"{out}.npz") as z:
        assert_same_gm({n: z[n] for n in z.files}, here.gm)


def test_seed_changes_unbound_inputs_not_cycles(random_kernel_file):
    k = load_kernel(random_kernel_file)
    r1, r1b, r2 = sim.simulate(k, seed=1), sim.simulate(k, seed=1), sim.simulate(k, seed=2)
    # unbound input: same seed -> same data, other seed -> other data
    np.testing.assert_array_equal(r1.output("x"), r1b.output("x"))
    assert not np.array_equal(r1.output("x"), r2.output("x"))
    # outputs follow the inputs: y = 3x + x
    for r in (r1, r2):
        np.testing.assert_array_equal(r.output("y"), r.output("x") * np.float32(3) + r.output("x"))
    assert not np.array_equal(r1.output("y"), r2.output("y"))
    # timing does not depend on data
    assert r1.total_cycles == r2.total_cycles
    pd.testing.assert_frame_equal(r1.trace, r2.trace)


def test_seed_does_not_touch_bound_inputs():
    r1, r2 = sim.simulate(load_kernel(EXAMPLE), seed=1), sim.simulate(load_kernel(EXAMPLE), seed=2)
    np.testing.assert_array_equal(r1.output("a"), r2.output("a"))
    np.testing.assert_array_equal(r1.output("out"), r2.output("out"))


def test_cli_seed_flag_same_cycles_same_trace(tmp_path, random_kernel_file):
    results = {}
    for seed in ("1", "2"):
        trace = tmp_path / f"t{seed}.csv"
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "sim",
                "run",
                str(random_kernel_file),
                "--json",
                "--seed",
                seed,
                "--trace",
                str(trace),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stderr
        results[seed] = (json.loads(p.stdout), trace.read_bytes())
    assert results["1"][0]["total_cycles"] == results["2"][0]["total_cycles"]
    assert results["1"][0] == results["2"][0]
    assert results["1"][1] == results["2"][1]
