"""Which attribute keys the simulator understands on each op that is not a tile
instruction, and the keys it knows to have no effect.

MLIR lets every op carry an attribute dictionary, and the grammar accepts one almost
everywhere (pto-ir-in-the-wild.md §2.6, §2.8, §4.2): on the module and on functions
(``pto.target_arch``, ``pto.kernel_kind``, ``pto.entry`` ...), on function arguments,
after a view, buffer, scalar, sync or control-flow op, on the cube <-> vector FIFO ops
(``{id = 0, split = 1}``). A key the simulator does not read must not vanish: a kernel
whose FIFO op carries a key that changes what the hardware does would otherwise run as if
it were not there, and its cycles would be trusted. So every key is one of

* *understood* (``UNDERSTOOD``): the IR carries it and something reads it — the target,
  the entry function, the unit a function runs on, a tensor view's layout, the FIFO ids,
  directions, slot sizes, buffers and split of the pipe ops;
* *known, no effect* (``NO_EFFECT``): a key real code writes whose meaning cannot change
  a cycle or a value here, each with the reason;
* anything else: a warning naming the file, line and column, the op, the key and what is
  understood there, worded as the verifier's warning for a tile instruction's attribute
  (``sim.isa.precision.diagnose_attrs``): ``<op>: attribute <key> = <value> is not
  modelled for <op>: ignored (its timing and values are those without it); understood
  there: <keys>``.

Tile instructions (``pto.tadd ins(...) outs(...) {..}``) are not listed here: which of
their attributes are read depends on the opcode and the target, and the verifier warns
about the others (``OpSpec.attrs_allowed``). The cross-core flags ``pto.sync.set`` /
``pto.sync.wait`` take only ``ffts_mode`` and refuse any other key as an error
(``sim.frontend.lower_sync``).
"""

from __future__ import annotations

__all__ = [
    "UNDERSTOOD",
    "NO_EFFECT",
    "NAMED_OPERANDS",
    "understood_keys",
    "unmodelled_message",
    "unread_operand_message",
]

_FIFO_ID = "id: the FIFO (the first initialised for the direction when absent)"
_SPLIT = "split: 0 whole tile, 1 rows or 2 columns halved between the two vector units"

# op (as written; "module" and "func.func" for their `attributes {...}`, "func argument"
# for an argument's dictionary) -> {key: what reads it}
UNDERSTOOD: dict[str, dict[str, str]] = {
    "module": {
        "pto.target_arch": "the target (sim.frontend.targets)",
        "pto.device-spec": "the target (sim.frontend.targets)",
    },
    "func.func": {
        "pto.entry": "the entry function (Program.kernels)",
        "pto.kernel_kind": "the unit the function runs on, cube or vector (sim.engine.units)",
    },
    "pto.make_tensor_view": {"layout": "the view's layout nd / dn / nz"},
    "pto.reserve_buffer": {
        "name": "the buffer's name (import_reserved_buffer finds it)",
        "size": "its bytes",
        "location": "its buffer (#pto.address_space<...>)",
        "auto": "true: placed by the toolchain",
        "base": "its byte address when not auto",
    },
    "pto.import_reserved_buffer": {"name": "the peer's buffer", "peer_func": "the peer function"},
    "pto.aic_initialize_pipe": {
        "id": "the FIFO id",
        "dir_mask": "1 cube -> vector, 2 vector -> cube, 3 both",
        "slot_size": "bytes per slot (the slots: the consumer buffer's size / slot_size)",
    },
    "pto.tpush_to_aiv": {"id": _FIFO_ID, "split": _SPLIT},
    "pto.tpush_to_aic": {"id": _FIFO_ID, "split": _SPLIT},
    "pto.tpop_from_aic": {"id": _FIFO_ID, "split": _SPLIT},
    "pto.tpop_from_aiv": {"id": _FIFO_ID, "split": _SPLIT},
    "pto.tfree_from_aic": {"id": _FIFO_ID},
    "pto.tfree_from_aiv": {"id": _FIFO_ID},
    "pto.talloc_to_aiv": {"id": _FIFO_ID},
    "pto.talloc_to_aic": {"id": _FIFO_ID},
}
UNDERSTOOD["pto.aiv_initialize_pipe"] = UNDERSTOOD["pto.aic_initialize_pipe"]

# op -> {key: why it changes nothing the simulator computes}
_FREE_SPLIT = (
    "a free releases the whole slot whatever the split (the push and the pop "
    "that move the data carry it)"
)
_ALLOC_SPLIT = (
    "the slot is taken whole (ASSUMPTION of talloc, sim.engine.xunit); the push "
    "that fills it carries the split that moves the data"
)
NO_EFFECT: dict[str, dict[str, str]] = {
    "module": {
        "pto.backend": "the compiler's code-generation back end (vpto / emitc); the "
        "simulator runs the IR itself",
    },
    "func.func": {
        "pto.kernel": "marks a device kernel; the entry rule (pto.entry, else the public "
        "function no other calls) finds the kernel without it",
        "pto.aicore": "marks a function compiled for the AI core, which every simulated "
        "function is",
    },
    "pto.tfree_from_aic": {"split": _FREE_SPLIT},
    "pto.tfree_from_aiv": {"split": _FREE_SPLIT},
    "pto.talloc_to_aiv": {"split": _ALLOC_SPLIT},
    "pto.talloc_to_aic": {"split": _ALLOC_SPLIT},
}


# the named operands ``(key = %v : T)`` of the FIFO set-up ops the engine reads; any
# other name warns as an unknown attribute key does
NAMED_OPERANDS: dict[str, dict[str, str]] = {
    "pto.aic_initialize_pipe": {
        "c2v_consumer_buf": "the cube -> vector slots' buffer (its reserve_buffer's address)",
        "v2c_consumer_buf": "the vector -> cube slots' buffer",
    },
}
NAMED_OPERANDS["pto.aiv_initialize_pipe"] = NAMED_OPERANDS["pto.aic_initialize_pipe"]


def unread_operand_message(op: str, name: str) -> str | None:
    """The warning for a named operand ``name = %v`` of a FIFO set-up op that nothing
    reads, None when it is read (or ``op`` takes no named operands: the engine reads its
    operands by position)."""
    names = NAMED_OPERANDS.get(op)
    if names is None or name in names:
        return None
    return (
        f"{op}: operand {name} is not modelled for {op}: ignored (its timing and values "
        f"are those without it); understood there: {', '.join(names)}"
    )


def understood_keys(op: str) -> tuple:
    """The keys ``op`` reads, in the order of the table."""
    return tuple(UNDERSTOOD.get(op, ()))


def unmodelled_message(op: str, key: str, shown_value: str | None) -> str | None:
    """The warning for key ``key`` of ``op`` (without location), None when the key is
    understood or known to have no effect."""
    if key in UNDERSTOOD.get(op, ()) or key in NO_EFFECT.get(op, ()):
        return None
    keys = understood_keys(op)
    there = ", ".join(keys) if keys else "no attribute"
    what = f"attribute {key}" if shown_value is None else f"attribute {key} = {shown_value}"
    return (
        f"{op}: {what} is not modelled for {op}: ignored (its timing and values are those "
        f"without it); understood there: {there}"
    )
