"""The builder's output pinned: the ``Program`` of each bundled builder kernel, to the
statement and its source location, is what it was when the digests were recorded.

The builder is tuned for speed (bench/bench_builder.py: <= 5 us per instruction), and such
work must not change what it builds: the printed IR and the source location of every
statement of each kernel below are digested and compared with
``data/builder_programs.json``, recorded from the builder before its speed work (``python
tests/test_builder_program_digest.py --write`` records them again, for a change that means
to change the IR). Each digest is kept with a digest of the kernel's own source file
(``bench/kernels.py``, the example): a kernel whose code changed since fails, saying how to
record it again (on purpose, with the builder from before any builder change). Kernels: the
bench kernels at several sizes (tokens across pipes and sections, the event-id pools
wrapping), the ``.py`` examples over their parameters.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data" / "builder_programs.json"
sys.path.insert(0, str(ROOT / "bench"))


def _example(name):
    spec = importlib.util.spec_from_file_location(
        f"digest_{name}", ROOT / "examples" / f"{name}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bench(name, n):
    import kernels

    return lambda: kernels.build(name, n)


def _source(name) -> Path:
    """The file whose code (besides the builder) makes kernel ``name``."""
    if name.startswith("bench "):
        return ROOT / "bench" / "kernels.py"
    return ROOT / "examples" / f"{name.split()[0]}.py"


CASES = {
    **{
        f"bench {name} {n}": (_bench, (name, n))
        for name in ("vector", "auto", "cube", "chip")
        for n in (7, 1000, 4099)
    },
    "relu_sub": (lambda: _example("relu_sub").build, ()),
    "relu_sub_tiled": (lambda: _example("relu_sub_tiled").build, ()),
    "relu_sub_tiled 3 buffers": (lambda: lambda: _example("relu_sub_tiled").build(buffers=3), ()),
    "gemm": (lambda: _example("gemm").build, ()),
    "gemm 2 cores": (lambda: lambda: _example("gemm").build(m=256, singleCoreM=128), ()),
    **{
        f"flash_attention {s1} {tile} {arch}": (
            (
                lambda s1, tile, arch: (
                    lambda: _example("flash_attention").build(
                        s1=s1, s1_tile=tile, arch=arch, cores=2
                    )
                )
            ),
            (s1, tile, arch),
        )
        for s1, tile, arch in [
            (256, 128, "a2a3"),
            (512, 256, "a2a3"),
            (1024, 512, "a2a3"),
            (512, 256, "a5"),
        ]
    },
}


def digest(kernel) -> str:
    from sim.frontend.printer import print_program
    from sim.isa.program import walk

    program = kernel.program()
    h = hashlib.sha256(print_program(program).encode())
    for f in program.functions:
        for st in walk(f.body):
            loc = getattr(st, "loc", None)
            where = f"{Path(loc.file).name}:{loc.line}" if loc else "-"
            h.update(f"{type(st).__name__} {where}\n".encode())
    return h.hexdigest()[:16]


def _build(name):
    make, args = CASES[name]
    return make(*args)()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_builder_builds_what_it_built(name):
    want = json.loads(DATA.read_text())[name]
    if want["source"] != _sha(_source(name)):
        # the kernel's own code changed since the digest was recorded: a golden is
        # recorded again only on purpose, so this fails until someone does
        pytest.fail(
            f"{_source(name).name} changed since {DATA.name} was recorded: record "
            f"again with `python tests/test_builder_program_digest.py --write` on "
            f"the builder before the change under test"
        )
    assert digest(_build(name)) == want["digest"], (
        f"{name}: the builder now builds another Program (IR or source lines)"
    )


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    # the sim imported (installed, or PYTHONPATH=<an older checkout>) records the digests
    DATA.write_text(
        json.dumps(
            {n: {"digest": digest(_build(n)), "source": _sha(_source(n))} for n in sorted(CASES)},
            indent=1,
        )
        + "\n"
    )
