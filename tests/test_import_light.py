"""``import sim`` loads the builder and the ISA only: pandas, matplotlib, Dask's
distributed and lark (the PTO IR parser) load when a run, a trace, a plot, a sweep or a
``.pto`` file needs them, and every public name still resolves to what it always was."""

import subprocess
import sys

import pytest

HEAVY = ("pandas", "matplotlib", "distributed", "dask", "lark", "simpy")


def _modules_after(code: str) -> set:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_import_sim_loads_none_of_the_heavy_libraries():
    loaded = _modules_after("import sim")
    assert "sim.kernel.builder" in loaded  # the check sees what was imported
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_building_a_kernel_loads_none_of_them_either():
    loaded = _modules_after(
        "import sim\nk = sim.Kernel('k')\nt = k.tile('vec', 'f32', 16, 64)\n"
        "x = k.gm('x', 'f32', (16, 64))\nk.TSTORE(x, t, k.TLOAD(t, x))\n"
        "k.program()"
    )
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


@pytest.mark.parametrize(
    "name, module",
    [
        ("simulate", "sim.engine.run"),
        ("Result", "sim.engine.result"),
        ("parse_file", "sim.frontend.cached"),
        ("parse_text", "sim.frontend.parse"),
        ("print_program", "sim.frontend.printer"),
        ("compare", "sim.studies.compare"),
        ("simulate_op", "sim.studies.ops"),
        ("scaling", "sim.studies.scaling"),
        ("scaling_plot", "sim.studies.scaling"),
        ("sweep", "sim.studies.sweep"),
        ("sweep_heatmap", "sim.studies.sweep_plot"),
        ("whatif", "sim.studies.whatif"),
    ],
)
def test_lazy_names_are_the_functions_of_their_modules(name, module):
    import importlib

    import sim

    assert getattr(sim, name) is getattr(importlib.import_module(module), name)


def test_every_public_name_resolves_and_submodules_are_the_packages():
    import sim
    import sim.placement
    import sim.studies
    import sim.trace

    for name in sim.__all__:
        assert getattr(sim, name) is not None, name
    assert sim.trace is sys.modules["sim.trace"] and sim.placement is sys.modules["sim.placement"]
    assert sim.studies is sys.modules["sim.studies"]
    assert callable(sim.compare) and sim.compare.__module__ == "sim.studies.compare"
    assert set(sim.__all__) <= set(dir(sim))
    with pytest.raises(AttributeError):
        _ = sim.no_such_name


def test_star_import_gives_every_name():
    loaded = _modules_after("from sim import *\nassert callable(simulate) and callable(sweep)")
    assert "pandas" in loaded  # names the heavy parts define come with them
