"""tools/real_kernels.py: the arguments a file's usage comment gives, the causes it counts
and its counts over a folder."""

import contextlib
import importlib.util
import io
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("real_kernels", ROOT / "tools" / "real_kernels.py")
assert _spec and _spec.loader
rk = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rk)


def test_usage_args_read_the_run_lines_continued_over_a_backslash():
    text = (ROOT / "examples" / "gemm.pto").read_text()
    args = rk.usage_args(text)
    flags = list(zip(args[::2], args[1::2], strict=True))
    pairs = dict(v.split("=") for f, v in flags if f == "--arg")
    assert set(pairs) == {"m", "k", "n", "singleCoreM", "singleCoreN"}
    assert ("--block-dim", "24") in flags
    # launch flags are kept, files and modes dropped; an --arg outside a ptosim run line
    # (or outside a comment) is no usage
    line = "//   ptosim run k.pto --timing-only --ranks 4 --input x=z.npy --func f --arg n=2\n"
    assert rk.usage_args(line) == ["--ranks", "4", "--func", "f", "--arg", "n=2"]
    assert rk.usage_args("// see --arg n=3\n%x = --arg m=4\n") == []


def test_causes_drop_the_file_location_names_and_numbers():
    a = rk.cause(
        "/a/b.pto:3:5: error: kernel @k: scalar argument %n (index) has no value; "
        "pass --arg n=VALUE"
    )
    b = rk.cause(
        "ptosim: error: kernel @g: scalar argument %m (index) has no value; pass --arg m=VALUE"
    )
    assert a == b and "b.pto" not in a and "@k" not in a
    c = rk.cause("ptosim: error: instruction #15 TSCATTER (x.pto:47:5): index -32 at element (4,)")
    assert c == "TSCATTER : index N at element (N,)"


def test_a_folder_of_kernels_is_counted_by_mode():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = rk.main(["tests/data/compiler_output"])
    text = out.getvalue()
    n = len(list((ROOT / "tests" / "data" / "compiler_output").glob("*.pto")))
    assert rc == 0
    assert f"{n} .pto files; check accepts {n}, refuses 0" in text
    assert f"run in some mode: {n} of {n} accepted" in text and "tracebacks: 0" in text
