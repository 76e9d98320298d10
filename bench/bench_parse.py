"""Parse speed of the PTO IR front end (target: 10 k lines in <= 1 s).

Builds a module of realistic PTO IR — the function bodies of every examples/*.pto, each
repeated with its SSA names renamed, so no two copies collide — until it has at least
``--lines`` lines, then times ``parse_text`` on it (best of ``--repeat`` runs; the first
run also pays for building the LALR tables). Prints lines/s; asserts nothing.

    python bench/bench_parse.py [--lines 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sim.frontend import parse_text  # noqa: E402

_SSA = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def _functions(text: str) -> list[str]:
    """The func.func blocks of a module (one per top-level function), aliases inlined."""
    aliases = dict(re.findall(r"^(![A-Za-z_]\w*) = (.+)$", text, flags=re.M))
    for name, value in aliases.items():
        text = re.sub(re.escape(name) + r"\b", value, text)
    lines = text.splitlines()
    out, cur, depth = [], None, 0
    for line in lines:
        stripped = line.strip()
        if cur is None and stripped.startswith("func.func"):
            cur, depth = [], 0
        if cur is not None:
            cur.append(line)
            depth += line.count("{") - line.count("}")
            if depth == 0 and stripped.endswith("}"):
                out.append("\n".join(cur))
                cur = None
    return out


def corpus(min_lines: int) -> str:
    funcs = []
    for path in sorted((ROOT / "examples").glob("*.pto")):
        funcs += _functions(path.read_text())
    body, n, copy = [], 0, 0
    while n < min_lines:
        for f in funcs:
            renamed = _SSA.sub(rf"%\g<1>_{copy}", f)
            renamed = re.sub(r"@(\w+)", rf"@\g<1>_{copy}", renamed)
            body.append(renamed)
            n += renamed.count("\n") + 1
        copy += 1
    return 'module attributes {pto.target_arch = "a2a3"} {\n' + "\n\n".join(body) + "\n}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    text = corpus(args.lines)
    lines = text.count("\n")
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        program = parse_text(text, "bench.pto")
        times.append(time.perf_counter() - t0)
    stmts = sum(len(f.body) for f in program.functions)
    best = min(times)
    print(
        f"parsed {lines} lines ({len(program.functions)} functions, {stmts} top-level "
        f"statements) in {best:.3f} s (first run {times[0]:.3f} s): "
        f"{lines / best:,.0f} lines/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
