"""The trace schema: one row per executed instruction or sync statement.

This is the one definition of the trace columns; the engine writes them, every analysis,
report, plot and exporter reads them, and ``traces/README.md`` documents them. All times
are in core clock cycles from the start of the run.
"""

from __future__ import annotations

__all__ = ["COLUMNS", "DTYPES", "KINDS", "RANK_COLUMNS", "describe", "describe_ranks"]

# (name, pandas dtype, meaning)
_SCHEMA = (
    ("id", "int64", "dynamic sequence number in program order (0-based)"),
    ("core", "int64", "the physical AI core that ran the row"),
    (
        "block",
        "int64",
        "block index (get_block_idx) of the row's unit; equal to core unless the launch has "
        "more blocks than cores (blocks then run in waves, a block per free core)",
    ),
    ("unit", "category", "AIV0 / AIV1 (vector cores) or AIC (cube core)"),
    ("pipe", "category", "hardware pipe: PIPE_S, PIPE_V, PIPE_MTE1/2/3, PIPE_M, PIPE_FIX"),
    (
        "kind",
        "category",
        "op, scalar, set_flag, wait_flag, barrier, or cce (a lowered CCE "
        "instruction of the op with the same id; only with --detail cce)",
    ),
    (
        "opcode",
        "category",
        "PTO opcode (TADD ...), the sync statement name, or the CCE "
        "instruction (vadd ...) of a cce row",
    ),
    ("dispatch_cycle", "int64", "cycle the scalar unit handed the item to its pipe queue"),
    (
        "start_cycle",
        "int64",
        "cycle the item reached the head of its queue and started; "
        "for wait_flag: when it began waiting",
    ),
    ("end_cycle", "int64", "cycle the item finished; for wait_flag: when the flag arrived"),
    ("duration_cycles", "int64", "end_cycle - start_cycle"),
    (
        "stream",
        "category",
        "vector stream state the op entered: cold (paid head+tail), warm "
        "(streamed behind its predecessor), restart (right after a barrier), "
        "or empty (not PIPE_V)",
    ),
    ("repeats", "int64", "vector repeats (or cube fractal steps) of the lowered instructions"),
    ("bytes", "int64", "bytes moved by DMA items"),
    (
        "waits",
        "category",
        "flags waited on just before this op on its pipe: SRC->DST#id, ';'-separated",
    ),
    ("records", "category", "flags set right after this op on its pipe"),
    ("operands", "category", "outs <- ins, as %names and literals"),
    ("source", "category", "file:line of the statement that issued it"),
    ("cce", "category", "the lowered CCE instruction sequence (why the op costs what it costs)"),
)

# the trace of a run with ranks (RanksResult.trace) has these first: one table of every
# rank's rows, each row's (rank, launch) naming the chip that ran it
_RANKS = (
    ("rank", "int64", "the rank (NPU) whose chip ran the row (runs with ranks only)"),
    (
        "launch",
        "int64",
        "which kernel launched on the rank ran it: 0 the kernel, 1 .. the --stream kernels "
        "in order (runs with ranks only)",
    ),
)

COLUMNS = tuple(c[0] for c in _SCHEMA)
DTYPES = {c[0]: c[1] for c in _SCHEMA}
RANK_COLUMNS = tuple(c[0] for c in _RANKS)
KINDS = ("op", "scalar", "set_flag", "wait_flag", "barrier", "cce")


def describe() -> str:
    """Markdown table of the columns (used to write traces/README.md)."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{n}` | {t} | {m} |" for n, t, m in _SCHEMA]
    return "\n".join(lines)


def describe_ranks() -> str:
    """Markdown table of the columns a run with ranks adds in front (traces/README.md)."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{n}` | {t} | {m} |" for n, t, m in _RANKS]
    return "\n".join(lines)
