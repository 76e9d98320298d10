"""Sampled waves: a long launch simulated in part, the rest estimated (``sim.engine.waves``).

``sample_waves=k`` runs the first k waves and the last, partly filled one, and adds the
full waves left out at the steady block time. Checked against the exact run of the same
launch: equal to the cycle where every block costs the same (with and without a dispatch
latency), within a few per cent where the blocks share the GM model, on families of
(blocks, cores, k); the blocks that ran are the ones the rule names, with their own
indices; everything but the device time is of the blocks that ran.
"""

import json
import sys
from pathlib import Path

import attrs
import pytest

import sim
from sim.base.errors import UserError
from sim.target import load_target

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_fixtures import one_line_error  # noqa: E402
from test_flash_attention import _program  # noqa: E402
from test_waves import _compute, _stream  # noqa: E402


def _chip(cores: int, dispatch: int = 0):
    tgt = load_target("a2a3")
    return attrs.evolve(tgt, chip={**tgt.chip, "cores": cores, "block_dispatch_cycles": dispatch})


def _both(kernel, tgt, k, **kw):
    exact = sim.simulate(kernel, tgt, functional=False, trace="none", **kw)
    sampled = sim.simulate(kernel, tgt, functional=False, trace="none", sample_waves=k, **kw)
    return exact, sampled


@pytest.mark.parametrize(
    "blocks,cores,k,dispatch",
    [
        (9, 2, 2, 0),
        (9, 2, 1, 0),
        (30, 4, 2, 0),
        (31, 4, 3, 0),
        (50, 8, 2, 0),
        (23, 3, 2, 40),
        (25, 4, 1, 12),
        (40, 4, 3, 7),
    ],
)
def test_equal_blocks_are_estimated_to_the_cycle(blocks, cores, k, dispatch):
    tgt = _chip(cores, dispatch)
    exact, sampled = _both(_compute(blocks), tgt, k)
    s = sampled.sample
    tail = blocks % cores
    left_out = (blocks - k * cores) // cores * cores
    assert s["blocks_simulated"] == blocks - left_out == k * cores + tail
    assert s["waves_simulated"] == k and s["waves_estimated"] == left_out // cores
    one = sim.simulate(_compute(1), tgt, functional=False).total_cycles
    assert s["block_cycles"] == one
    assert sampled.total_cycles == exact.total_cycles
    assert s["simulated_cycles"] < exact.total_cycles


CASES = [(30, 4, 2), (30, 4, 1), (45, 8, 2), (45, 8, 1), (37, 4, 3), (22, 2, 4), (61, 8, 2)]


@pytest.mark.parametrize("blocks,cores,k", CASES)
def test_blocks_sharing_gm_are_estimated_within_two_per_cent(blocks, cores, k):
    exact, sampled = _both(_stream(blocks), _chip(cores), k, free="gm_first_touch")
    assert sampled.sample["waves_estimated"] >= 1
    assert abs(sampled.total_cycles / exact.total_cycles - 1) <= 0.02


@pytest.mark.parametrize("blocks,cores", [(11, 2), (17, 3)])
def test_one_wave_counts_the_start_in_every_wave_left_out(blocks, cores):
    """The first wave pays the launch's first touches (page walks, lines not yet in the
    L2): sampled from it alone, every wave left out pays them again, so with short blocks
    k = 1 comes out above k = 2 and above the exact run."""
    kw = dict(inputs={"S1": 256, "S1_TILE": 128}, block_dim=blocks)
    exact, one = _both(_program(), _chip(cores), 1, **kw)
    two = sim.simulate(
        _program(), _chip(cores), functional=False, trace="none", sample_waves=2, **kw
    )
    assert one.sample["block_cycles"] > two.sample["block_cycles"]
    assert one.total_cycles > two.total_cycles
    assert one.total_cycles > exact.total_cycles


@pytest.mark.parametrize("blocks,cores,k", [(17, 3, 2), (16, 3, 3), (21, 4, 2), (17, 3, 1)])
def test_the_steady_block_time_is_the_mean_of_wave_k(blocks, cores, k):
    r = sim.simulate(
        _program(),
        _chip(cores),
        functional=False,
        inputs={"S1": 256, "S1_TILE": 128},
        block_dim=blocks,
        sample_waves=k,
    )
    wave = [e - s for b, _, s, e in r.blocks if (k - 1) * cores <= b < k * cores]
    assert len(wave) == cores and len(set(wave)) > 1  # the blocks differ: the mean matters
    assert r.sample["block_cycles"] == round(sum(wave) / cores)


@pytest.mark.parametrize("blocks,cores,k", CASES)
def test_first_touches_in_the_waves_left_out_bound_the_error(blocks, cores, k):
    """A block left out never walks the GM pages it would have touched first, and the
    steady block time may hold a walk the waves left out do not: each estimated wave is
    off by at most one page walk on its critical path (walks of pages overlap)."""
    tgt = _chip(cores)
    exact, sampled = _both(_stream(blocks), tgt, k)
    walk = tgt.gm["first_touch"]["walk_cycles"]
    assert (
        abs(sampled.total_cycles - exact.total_cycles) <= sampled.sample["waves_estimated"] * walk
    )


@pytest.mark.parametrize("blocks,cores,k", [(11, 2, 2), (17, 3, 2), (17, 4, 3)])
def test_flash_attention_in_waves_is_estimated_within_two_per_cent(blocks, cores, k):
    """Cube and vector units meeting through GM FIFOs, GM channels and write ports shared."""
    exact, sampled = _both(
        _program(), _chip(cores), k, inputs={"S1": 256, "S1_TILE": 128}, block_dim=blocks
    )
    assert sampled.sample["waves_estimated"] >= 1
    assert abs(sampled.total_cycles / exact.total_cycles - 1) <= 0.02


@pytest.mark.parametrize("blocks,cores,k", [(30, 4, 2), (31, 4, 3), (26, 8, 2)])
def test_the_blocks_that_ran_are_the_first_waves_and_the_last(blocks, cores, k):
    r = sim.simulate(_stream(blocks), _chip(cores), functional=False, sample_waves=k)
    tail = blocks % cores
    ran = [b for b, *_ in r.blocks]
    assert ran == list(range(k * cores)) + list(range(blocks - tail, blocks))
    assert sorted(r.trace["block"].unique()) == ran
    # the last blocks run on the cores the first-waves' blocks free, after them
    head_end = {c: e for b, c, _, e in r.blocks if b < k * cores}
    for b, c, s, _ in r.blocks:
        if b >= k * cores:
            assert s >= head_end[c]


def test_a_launch_with_no_full_wave_to_leave_out_runs_exactly():
    tgt = _chip(4)
    for blocks, k in [(3, 2), (6, 2), (5, 3), (7, 1), (9, 2), (11, 2), (12, 3), (15, 3)]:
        exact, sampled = _both(_stream(blocks), tgt, k)
        assert sampled.sample == {}
        assert sampled.total_cycles == exact.total_cycles
        assert any(f"sample_waves={k}: {blocks} blocks on" in w for w in sampled.warnings)
        assert not any("sample_waves" in w for w in exact.warnings)


def test_pipe_figures_are_of_the_blocks_that_ran():
    """Equal blocks: the sampled run's busy cycles and instructions are the exact run's
    share of the blocks that ran."""
    exact, sampled = _both(_compute(40), _chip(4), 2)
    assert sampled.total_cycles == exact.total_cycles
    got, want = sampled.pipes["PIPE_V"], exact.pipes["PIPE_V"]
    share = sampled.sample["blocks_simulated"] / 40
    assert got["instructions"] == want["instructions"] * share
    assert got["busy_cycles"] == want["busy_cycles"] * share


def test_the_report_and_json_say_the_time_is_estimated():
    r = sim.simulate(_stream(30), _chip(4), functional=False, sample_waves=2)
    s = r.sample
    assert f"sampled: {s['blocks_simulated']} of 30 blocks simulated" in r.report()
    assert f"device time estimated {r.total_cycles} cycles" in r.report()
    j = r.to_json()
    assert j["sample"] == s and j["total_cycles"] == s["estimated_cycles"]
    assert j["total_cycles"] > s["simulated_cycles"]


def test_a_race_checked_sampled_run_says_what_it_checked():
    k = _stream(30)
    r = sim.simulate(k, _chip(4), functional=False, sample_waves=2, races=True)
    n = r.sample["blocks_simulated"]
    assert n == 4 * 2 + 30 % 4
    assert any(f"races were checked in the {n} simulated blocks only" in w for w in r.warnings)


@pytest.mark.parametrize(
    "kw,words",
    [
        (dict(sample_waves=0, functional=False), "an integer >= 1"),
        (dict(sample_waves=True, functional=False), "an integer >= 1"),
        (dict(sample_waves="2", functional=False), "an integer >= 1"),
        (dict(sample_waves=2), "timing-only"),
        (dict(sample_waves=2, functional=False, ranks=2), "not with ranks"),
    ],
)
def test_bad_sampling_is_refused(kw, words):
    with pytest.raises(UserError, match=words):
        sim.simulate(_stream(30), _chip(4), **kw)


def test_the_command_line_samples_and_refuses_a_functional_run(cli):
    kernel = str(Path(__file__).resolve().parent.parent / "examples" / "flash_attention.pto")
    args = ["run", kernel, "--arg", "S1=256", "--arg", "S1_TILE=128", "--block-dim", "80"]
    code, out, err = cli(*args, "--timing-only", "--sample-waves", "2", "--json")
    assert code == 0, err
    j = json.loads(out)
    assert j["sample"]["blocks_simulated"] == 48 + 80 % 24
    assert j["total_cycles"] == j["sample"]["estimated_cycles"]
    code, out, err = cli(*args, "--sample-waves", "2")
    assert (code, out) == (2, ""), err
    one_line_error(code, err, "sample_waves", "--timing-only")
    code, _, err = cli(*args, "--timing-only", "--sample-waves", "0")
    one_line_error(code, err, "--sample-waves", ">= 1")


def test_a_sampled_comparison_runs_both_sides_sampled():
    from sim.studies import run_comparison

    k, tgt = _stream(30), _chip(4)
    c = run_comparison(k, tgt, functional=False, sample_waves=2)
    exact = run_comparison(k, tgt, functional=False)
    assert exact.sampled is None
    for mode in ("manual", "auto"):
        run, full = getattr(c, mode), getattr(exact, mode)
        s = run.result.sample
        assert s["blocks_simulated"] == 4 * 2 + 30 % 4
        assert run.total_cycles == s["estimated_cycles"] != full.total_cycles
        assert c.to_json()[mode]["sample"] == s
        assert "sample" not in exact.to_json()[mode]
        assert any("races were checked in the 10 simulated blocks" in w for w in run.warnings)
    alone = sim.simulate(k, tgt, functional=False, sample_waves=2, races=True, sync="manual")
    assert c.manual.total_cycles == alone.total_cycles
    assert c.sampled.startswith("sampled: total_cycles is estimated")
    assert "(manual 10 of 30, auto 10 of 30 blocks)" in c.sampled
    with pytest.raises(UserError, match="timing-only"):
        run_comparison(k, tgt, sample_waves=2)


def test_the_command_line_compares_sampled(cli):
    kernel = str(Path(__file__).resolve().parent.parent / "examples" / "flash_attention.pto")
    args = ["compare", kernel, "--arg", "S1=256", "--arg", "S1_TILE=128", "--block-dim", "80"]
    code, out, err = cli(*args, "--timing-only", "--sample-waves", "1")
    assert code == 0, err
    assert "(manual 32 of 80, auto 32 of 80 blocks)" in out
    assert "races were checked in the 32 simulated blocks only" in out
    code, out, err = cli(*args, "--sample-waves", "1")
    one_line_error(code, err, "sample_waves", "--timing-only")
