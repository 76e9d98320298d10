"""Writing a kernel: the Python builder and kernel files.

``Kernel`` (``builder``) records a kernel the way the C++ intrinsics read, one method per
opcode; its chip half (``chip``: block and sub-block indices, FIFOs, sections) is a mixin
it extends, and both share the values of ``values`` (RecordEvent tokens, GM tensors, the
caller's source line). ``files`` loads what a ``.pto`` or ``.py`` path given to ``ptosim``
means. All of it builds the program IR of ``sim.isa``: nothing here runs a kernel.
"""

from sim.kernel.builder import Kernel
from sim.kernel.values import Event, GlobalTensor

__all__ = ["Kernel", "Event", "GlobalTensor"]
