"""The timing model: from one concrete PTO instruction to its cost on its pipe.

``lower(shape, target)`` turns an instruction with known operand geometry into a
``Plan``: the sequence of CCE-level items the A2/A3 backend emits (vector instructions
with their repeat counts and masks, config writes, intra-op barriers, DMA transfers, cube
MACs) and the two costs the engine needs — *cold*, when the instruction opens a new
vector stream and pays the start-up latency, and *warm*, when it streams behind its
predecessor (timing-model.md §2.3, Variant S). The SimPy engine picks one of the two at
run time; nothing here knows about SimPy.
"""

from sim.timing.lower import lower
from sim.timing.plan import Item, Plan, Shape

__all__ = ["Item", "Plan", "Shape", "lower"]
