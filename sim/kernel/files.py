"""Kernel files: what a ``.pto`` or ``.py`` path given to ``ptosim`` (or ``sim.sweep``) means.

A ``.pto`` file is PTO IR text, parsed into a ``Program``. A ``.py`` file is executed as
Python (its own directory on the import path, so sibling modules import) and must define
``build()`` returning a ``sim.Kernel``; ``--arg NAME=VALUE`` pairs become ``build()``'s
keyword arguments, and a ``.pto`` kernel's scalar arguments take them typed by the
kernel's signature. The user's own code runs inside ``user_code``, which turns anything it
raises (``sys.exit`` included) into one ``UserError`` at its line.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import math
import sys
import traceback
from pathlib import Path

from sim.base.errors import UserError

__all__ = [
    "load_kernel",
    "load_stream",
    "split_stream",
    "stream_specs",
    "kernel_source",
    "user_code",
    "build_params",
    "param_value",
    "scalar_value",
    "printable",
    "local_modules",
    "forget_local_modules",
]


def load_kernel(path: str, params=()):
    """The kernel in ``path``: a Program for ``.pto`` text, a builder Kernel for ``.py``
    built by ``build(**params)`` (``params``: NAME, VALUE pairs, such as ``--arg``'s)."""
    source = kernel_source(path)
    if not callable(source):
        return source
    with user_code(path):
        kernel = source(**build_params(source, path, params))
    if not hasattr(kernel, "program") and not hasattr(kernel, "functions"):
        raise UserError(f"{path}: build() returned {type(kernel).__name__}, expected a sim.Kernel")
    return kernel


def kernel_source(path: str):
    """A ``.pto`` file's Program, or a ``.py`` file's ``build`` function."""
    p = Path(path)
    if printable(path) != path:  # its name would go into every source location and trace
        raise UserError(f"{path}: the file name is not valid UTF-8; rename the file")
    try:
        if p.is_dir():
            raise UserError(f"{path}: is a directory, expected a kernel file (.pto or .py)")
        if not p.is_file():
            raise UserError(f"{path}: no such file")
    except OSError as e:  # a name too long, a loop of links ...
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    if p.suffix == ".pto":
        from sim.frontend import parse_file

        return parse_file(path)
    if p.suffix != ".py":
        raise UserError(f"{path}: expected a PTO IR file (.pto) or a Python kernel file (.py)")
    return _module_function(p, path, "build")


def _module_function(p: Path, path: str, name: str):
    """Function ``name`` of the ``.py`` file ``p``, the module executed as user code."""
    spec = importlib.util.spec_from_file_location(f"ptosim_kernel_{p.stem}", p)
    if spec is None or spec.loader is None:  # a .py path always has a source loader
        raise UserError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    with user_code(path):
        spec.loader.exec_module(module)
    build = getattr(module, name, None)
    if build is not None and not callable(build):
        raise UserError(f"{path}: {name} is a {type(build).__name__}, expected a function")
    if build is None:
        raise UserError(f"{path}: defines no {name}() function returning a sim.Kernel")
    return build


def split_stream(spec: str) -> tuple[str, str]:
    """(FILE, NAME) of a ``--stream`` spec ``FILE[:NAME]`` (NAME "" when none is given)."""
    path, _, name = spec.rpartition(":")
    if not path or not name.isidentifier():  # no NAME: the whole text is the file
        return spec, ""
    return path, name


def stream_specs(specs) -> list[str]:
    """Each ``--stream`` spec with its FILE absolute (a sweep's worker may run elsewhere),
    checked now: a missing file is refused before anything runs."""
    out = []
    for spec in specs:
        path, name = split_stream(spec)
        if not Path(path).is_file():
            raise UserError(f"--stream {spec}: {path}: no such file")
        out.append(str(Path(path).resolve()) + (f":{name}" if name else ""))
    return out


def load_stream(spec: str, params=()):
    """The kernel ``--stream`` names: ``FILE`` (as ``load_kernel``) or ``FILE:NAME``, a
    ``.pto`` file's function ``@NAME`` as its entry, or a ``.py`` file's function ``NAME``
    called in place of ``build()``. A ``.py`` function gets the ``params`` (NAME, VALUE
    pairs, ``--arg``'s) it has parameters for: the kernels of one run share them."""
    path, name = split_stream(spec)
    if not name:
        return load_kernel(path, params)
    source = kernel_source(path)  # the file's checks; a .py file's module runs here
    if not callable(source):
        names = [f.name for f in source.functions]
        if name not in names:
            raise UserError(
                f"--stream {spec}: {path} has no function @{name} (functions: "
                f"{', '.join('@' + n for n in names)})"
            )
        import attrs

        return attrs.evolve(source, entry=name)
    func = _module_function(Path(path), path, name)
    takes = inspect.signature(func).parameters
    mine = [(n, v) for n, v in params if n in takes]
    with user_code(path):
        kernel = func(**build_params(func, path, mine))
    if not hasattr(kernel, "program"):
        raise UserError(f"{path}: {name}() returned {type(kernel).__name__}, expected a sim.Kernel")
    return kernel


def _local(path: str) -> dict[str, Path]:
    """Module name -> file of the modules loaded from the kernel's directory tree (not the
    kernel file itself, nor installed packages or the simulator under that tree)."""
    folder = Path(path).resolve().parent
    own = Path(__file__).resolve().parent.parent  # the sim package
    kernel = Path(path).resolve()
    out = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file:
            continue
        try:
            f = Path(file).resolve()
            rel = f.relative_to(folder)
        except (OSError, ValueError):  # not under the kernel's directory
            continue
        if {"site-packages", "dist-packages"} & set(rel.parts) or f == kernel:
            continue
        if f.is_relative_to(own):
            continue
        out[name] = f
    return out


def local_modules(path: str) -> dict[str, str]:
    """The modules loaded so far from the kernel's own directory tree (its sibling helpers,
    imported by the kernel file or by ``build()``), as path relative to that directory ->
    SHA-256 of the file: what a result of the kernel depends on besides the file itself."""
    import hashlib

    folder = Path(path).resolve().parent
    out = {}
    for f in _local(path).values():
        try:
            out[str(f.relative_to(folder))] = hashlib.sha256(f.read_bytes()).hexdigest()
        except OSError:
            out[str(f.relative_to(folder))] = ""  # gone or unreadable: matches no file
    return dict(sorted(out.items()))


def forget_local_modules(path: str) -> None:
    """Drop the kernel's helper modules from ``sys.modules``, so that the next load of the
    kernel imports them as they are on disk now (a process that runs many kernels, such as
    a sweep's worker, would otherwise keep the first version it imported) — and so does a
    module of the same name another kernel's directory gave (``helper`` of a kernel run
    before from another folder would stand in for this one's)."""
    folder = Path(path).resolve().parent
    here = {p.stem for p in folder.glob("*.py")} | {
        p.parent.name for p in folder.glob("*/__init__.py")
    }
    system = tuple(str(Path(p).resolve()) for p in {sys.prefix, sys.base_prefix})
    own = str(Path(__file__).resolve().parent.parent)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or name.split(".")[0] not in here:
            continue
        f = str(Path(file).resolve())
        if not f.startswith((*system, own)):  # another folder's helper, not a library
            sys.modules.pop(name, None)
    for name in _local(path):
        sys.modules.pop(name, None)


@contextlib.contextmanager
def user_code(path: str):
    """Run the user's own code in ``path`` (its directory on the import path, so sibling
    modules import); an error it raises becomes a UserError at its line, and so does
    ``sys.exit`` (a kernel file must not end the command)."""
    folder = str(Path(path).resolve().parent)
    sys.path.insert(0, folder)
    try:
        yield
    except UserError:
        raise
    except SystemExit as e:
        raise UserError(
            f"{path}: called sys.exit({e.code!r}) while building the kernel; "
            f"build() must return a sim.Kernel"
        ) from None
    except KeyboardInterrupt:
        here = Path(path).resolve()
        frames = [
            f for f in traceback.extract_tb(sys.exc_info()[2]) if Path(f.filename).resolve() == here
        ]
        where = f"{path}:{frames[-1].lineno}" if frames else path
        raise KeyboardInterrupt(f"interrupted while building the kernel (at {where})") from None
    except RecursionError:
        raise UserError(
            f"{path}: RecursionError while building the kernel: recursion "
            f"deeper than Python's limit of {sys.getrecursionlimit()}"
        ) from None
    except Exception as e:
        here = Path(path).resolve()
        frames = [
            f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == here
        ]
        where = f"{path}:{frames[-1].lineno}" if frames else path
        message = " ".join(str(e).split())  # one line, whatever the exception says
        raise UserError(
            f"{where}: {type(e).__name__} while building the kernel: {message}"
        ) from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)


def build_params(build, path: str, params) -> dict:
    """NAME, VALUE pairs as keyword arguments of a ``.py`` kernel's ``build()`` (text
    values, as ``--arg`` gives them, parsed by ``param_value``)."""
    sig = inspect.signature(build)
    named = {
        n: p
        for n, p in sig.parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    any_name = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    out = {}
    for name, value in params:
        if name not in named and not any_name:
            raise UserError(
                f"--arg {name}: {path}: build() has no parameter {name!r} "
                f"(parameters: {', '.join(named) or 'none'})"
            )
        default = named[name].default if name in named else None
        out[name] = param_value(name, value, default) if isinstance(value, str) else value
    missing = [n for n, p in named.items() if p.default is p.empty and n not in out]
    if missing:
        raise UserError(f"{path}: build() needs " + ", ".join(f"--arg {n}=VALUE" for n in missing))
    return out


def param_value(name: str, text: str, default=None):
    """A ``.py`` kernel parameter: an int (``int(text, 0)``, as a ``.pto`` index argument),
    a float, ``true``/``false``, else the text itself (a dtype name, say). A parameter
    whose default is an int, float or bool takes only a value of that kind."""
    value: str | int | float | bool = text
    for parse in (lambda t: int(t, 0), float, {"true": True, "false": False}.__getitem__):
        try:
            value = parse(text.strip().lower() if parse is not float else text)
            break
        except (ValueError, KeyError):
            pass
    kind = type(default)
    if kind is str:
        return text
    if kind is float and type(value) is int:
        return float(value)
    if kind in (int, float, bool) and type(value) is not kind:
        raise UserError(
            f"--arg {name}={text}: expected {kind.__name__} like the default "
            f"{default!r} of build()'s parameter {name}"
        )
    return value


def scalar_value(name: str, text: str, type_: str):
    t = type_.lower()
    try:
        if t == "i1":
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return low in ("true", "1")
        if t == "index" or t.lstrip("su").startswith("i") or t.startswith("u"):
            value = int(text, 0)
            lo, hi = _int_range(t)
            if not lo <= value <= hi:
                raise UserError(
                    f"--arg {name}={text}: out of range for {type_}: expected {lo} <= value <= {hi}"
                )
            return value
        number = float(text)
        if not math.isfinite(number) and text.strip().lower() not in ("inf", "-inf", "+inf", "nan"):
            raise ValueError(text)  # 1e999: overflows a float
        if math.isfinite(number) and _rounds_to_infinity(number, t):
            # as integers out of range, refused: an infinity is not what was written
            raise UserError(
                f"--arg {name}={text}: out of range for {type_}: its largest finite value "
                f"is {_largest(t):.8g} (pass inf for an infinity)"
            )
        return number
    except ValueError:
        raise UserError(f"--arg {name}={text}: expected a value of type {type_}") from None


def _float_type(t: str):
    import ml_dtypes
    import numpy as np

    return {"f16": np.float16, "f32": np.float32, "bf16": ml_dtypes.bfloat16}.get(t)


def _rounds_to_infinity(number: float, t: str) -> bool:
    """Whether the finite ``number`` becomes an infinity as a scalar of float type ``t``."""
    import numpy as np

    kind = _float_type(t)
    if kind is None:
        return False
    with np.errstate(over="ignore"):
        return math.isinf(float(np.asarray(number, dtype=kind)))


def _largest(t: str) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(_float_type(t)).max)


def _int_range(t: str) -> tuple[int, int]:
    """The values an integer scalar of MLIR type ``t`` holds: ``index`` and ``i64`` are
    64-bit; a signless ``iN`` takes either reading of its N bits, ``uN`` only unsigned."""
    bits = 64 if t == "index" else int("".join(c for c in t if c.isdigit()) or 64)
    if t.startswith("u") or t.startswith("ui"):
        return 0, 2**bits - 1
    if t.startswith("si"):
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if t == "index":
        return -(2**63), 2**63 - 1
    return -(2 ** (bits - 1)), 2**bits - 1


def printable(text: str) -> str:
    """``text`` with undecodable file-name bytes (surrogate escapes) shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
