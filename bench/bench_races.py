"""The race check's own cost: the proof of race freedom, and the detector's calls replayed.

A run with the race check first takes the timed path and tries to show from the units'
dispatch logs that the detector would find nothing (``sim.engine.racefree``); only when
that fails does it run again with the detector. This bench times both parts alone on
the same run, with no engine and no interpreter in the figure:

* ``proof``: ``race_free`` over the logs of the run (what every race-checked run pays);
* ``detector``: the run is forced down the detector's path, each call the engine makes to
  its detectors (``op``, ``set_flag``, ``wait_flag``, ``barrier_all``, in order) is
  recorded and replayed on fresh detectors (``RaceDetector`` on one unit, ``UnitRaces``
  sharing one ``ChipRaces`` on a chip) — what a run the proof cannot settle pays on top:

    .venv/bin/python bench/bench_races.py                  # vector and cube 10^5, gemm, fa
    .venv/bin/python bench/bench_races.py --only gemm --repeat 5
    .venv/bin/python bench/bench_races.py --root /tmp/old-checkout

Cases: ``vector`` and ``cube`` (``bench/kernels.py``, one unit, 10^5 instructions);
``gemm`` (``examples/gemm.pto`` 3072 x 3072 x 6144, 24 cores) and ``fa``
(``examples/flash_attention.pto`` S1 = 8192, 24 cores). Each figure is the minimum CPU
time of ``--repeat`` replays in one process; it also prints the calls and the findings
(which must not change) and whether the proof went through. ``--root DIR`` runs another
checkout's ``sim`` (first on ``sys.path``), as ``bench_chip_cli.py`` does.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHIP = {
    "gemm": (
        "examples/gemm.pto",
        {"m": 3072, "k": 3072, "n": 6144, "singleCoreM": 768, "singleCoreN": 1024},
    ),
    "fa": ("examples/flash_attention.pto", {"S1": 8192, "S1_TILE": 128}),
}
SINGLE = {"vector": 100_000, "cube": 100_000}
_METHODS = ("op", "set_flag", "wait_flag", "barrier_all")


def _recording(base, log: list):
    """A subclass of the detector ``base`` that logs every call before making it."""

    def logged(name):
        def call(self, *args, **kw):
            log.append((self, name, args + tuple(kw.values())))
            return getattr(base, name)(self, *args, **kw)

        return call

    return type("Recording" + base.__name__, (base,), {m: logged(m) for m in _METHODS})


_LOG: list = []  # (detector, method, arguments) of every call, in order
_CHIPS: list = []  # the Chips of the run (the detector's last)
_PROOF: list = []  # [the dispatch logs of the run, whether the proof went through]


def _install() -> None:
    """Make the engine's detectors log their calls (once per process)."""
    import sim.engine.chip as chip_module
    from sim.engine import races, xraces

    if chip_module.RaceDetector is not races.RaceDetector:
        return
    chip_module.RaceDetector = _recording(races.RaceDetector, _LOG)
    chip_module.UnitRaces = _recording(xraces.UnitRaces, _LOG)
    init = chip_module.Chip.__init__

    def keep(self, *args, **kw):
        init(self, *args, **kw)
        _CHIPS.append(self)

    chip_module.Chip.__init__ = keep
    if hasattr(chip_module.Chip, "race_free"):  # a checkout with the proof
        from sim.engine.racefree import race_free

        def logs_then_detector(self):
            logs = [m.log for _, _, m in self.units]
            # a unit alone keeps its GM accesses summarised: the proof reads the summary
            summaries = getattr(self, "_gm_summaries", None)
            _PROOF[:] = [logs, race_free(logs, None, summaries), summaries]
            return False  # the detector's run follows: its calls are recorded

        chip_module.Chip.race_free = logs_then_detector


def record(name: str):
    """(the calls of one race-checked run of ``name``, a replay function)."""
    import sim
    from sim.engine import races, xraces

    _install()
    _LOG.clear()
    _CHIPS.clear()
    if name in SINGLE:
        sys.path.insert(0, str(ROOT / "bench"))
        import kernels

        sim.simulate(
            kernels.build(name, SINGLE[name]),
            "a2a3",
            functional=False,
            races="manual",
            trace="none",
        )
    else:
        from sim.kernel.files import load_kernel

        file, args = CHIP[name]
        sim.simulate(
            load_kernel(str(ROOT / file), []),
            "a2a3",
            functional=False,
            inputs=args,
            block_dim=24,
            races="manual",
            trace="none",
        )
    log = list(_LOG)
    xr = _CHIPS[-1].xraces if _CHIPS else None
    credits = dict(xr.credits) if xr is not None else {}

    def replay() -> int:
        """Replay the calls on fresh detectors; the number of findings."""
        shared = xraces.ChipRaces()
        shared.credits = dict(credits)  # the FIFO slots the chip's set-up added
        fresh: dict = {}
        for det, method, args in log:
            d = fresh.get(id(det))
            if d is None:
                if isinstance(det, xraces.UnitRaces):
                    d = xraces.UnitRaces(shared, 0, "")
                    d.prefix, d.name = det.prefix, det.name
                else:
                    d = races.RaceDetector()
                d = fresh[id(det)] = d
            getattr(d, method)(*args)
        return sum(len(d.finish()) for d in fresh.values()) + len(shared.findings)

    return log, replay


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="replays per case (minimum kept)")
    ap.add_argument(
        "--only",
        choices=sorted(SINGLE) + sorted(CHIP),
        action="append",
        help="run only this case (repeatable)",
    )
    ap.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose sim runs (default: this one)"
    )
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.root.resolve()))
    print(f"sim from {args.root}; min of {args.repeat} replays")
    for name in args.only or [*SINGLE, *CHIP]:
        _PROOF.clear()
        log, replay = record(name)
        best, found = float("inf"), 0
        for _ in range(args.repeat):
            t0 = time.process_time()
            found = replay()
            best = min(best, time.process_time() - t0)
        ops = sum(1 for _, m, _ in log if m == "op")
        print(
            f"{name}: {len(log)} calls ({ops} ops), {found} findings, replay {best:.3f} s CPU, "
            f"{1e6 * best / len(log):.2f} µs per call"
        )
        if _PROOF:
            from sim.engine.racefree import race_free

            logs, held, summaries = _PROOF
            proof = float("inf")
            for _ in range(args.repeat):
                t0 = time.process_time()
                race_free(logs, None, summaries)
                proof = min(proof, time.process_time() - t0)
            items = sum(map(len, logs))
            print(
                f"  proof: {items} items dispatched, {'race-free' if held else 'not shown'}, "
                f"{proof:.3f} s CPU, {1e6 * proof / items:.2f} µs per item"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
