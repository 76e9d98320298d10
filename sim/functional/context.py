"""What a functional unit sees when it executes one tile instruction.

The engine resolves every operand before calling a unit: tiles become numpy views of
the bytes they occupy in their on-chip buffer (so aliasing tiles really share data),
restricted to the instruction's iteration domain; scalars become numpy scalars of the
operation's element type. A unit writes its result through ``dst`` and nothing else,
except where the hardware lowering itself clobbers an operand (documented per unit).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import Factory, define

from sim.base.errors import SimulationError
from sim.isa.dtypes import DType


class ValueOutOfRange(SimulationError):
    """An element value the data drives is out of range for the op (a gather index, a
    shift count, an integer divisor of 0, an operand beyond the exact range of a
    lowering): on inputs nobody gave, the seeded random data may be the cause, which the
    engine says (``sim.engine.gmviews.data_error``)."""


@define
class FnContext:
    op: str  # opcode as the ISA spells it, e.g. "TADD"
    # "instruction #12 TADD (file.py:30)" for error messages, read only in f-strings: the
    # engine passes an object that formats as that text when a message is written
    where: object
    dtype: DType  # element type of dst
    dst: np.ndarray  # writable 2-D view, shape = iteration domain (R x C)
    srcs: tuple = ()  # source tile views (2-D); elementwise ops: same shape as dst
    scalars: tuple = ()  # scalar operands, in operand order
    scalar_first: bool = False  # TDIVS(dst, scalar, src): scalar / tile
    tmp: np.ndarray | None = None  # tmp tile view (full valid region) where the op has one
    attrs: dict = Factory(dict)  # e.g. {"round": "RINT", "sat": True, "cmp": "lt"}
    src_dtypes: tuple = ()  # element types of srcs (TCVT: differs from dtype)
    inplace: bool = False  # dst and the first source tile share their bytes
    dst_apart: bool = False  # dst is contiguous and shares no byte with srcs or tmp
    strict: bool = True  # integer division by zero / out-of-range input -> error
    quirks: frozenset = frozenset()  # target-specific behaviours (models/<target>/semantics)
    extra: dict[str, Any] = Factory(dict)
