"""The ShapeEnv a symbolic run uses, and what it says: a data-dependent value taken as an assumed value rather
than failing, ops whose meta kernels are not symbolic run through their decompositions, and the line of the model's
code where each guard on a size was taken."""

from __future__ import annotations

import contextlib
import linecache
import logging
import os
import sys
from pathlib import Path

import sympy
import torch
from torch._decomp import decomposition_table
from torch._guards import SLoc
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._sympy.functions import CeilDiv, FloorDiv, Mod, PythonMod

from atlas.resources import is_model_code

DECOMPOSE = {torch.ops.aten.constant_pad_nd.default}


_NOT_SYMBOLIC = ("SymIntArrayRef expected to contain only concrete integers",
                 "Cannot call numel() on tensor with symbolic sizes")      # recurrent kernels: run their decompositions


_QUIET = ("torch._subclasses.fake_tensor", "torch.fx.experimental.symbolic_shapes",
          "torch.fx.experimental.sym_node")       # "failed to eval ...": a failure this module reports itself


_TORCH_NN = str(Path(torch.nn.__file__).parent) + os.sep


def _site(branches: set | None = None) -> str:
    """file:line of the innermost frame of the model's code: not torch's, not the atlas's, not the standard
    library's; where no model code is on the stack (the model is a torch.nn layer), the innermost torch.nn frame
    (a frame walk: cheap enough per guard). A site on an `if`, `elif` or `while` line is added to `branches`."""
    frame, layer = sys._getframe(1), None
    while frame is not None:
        if is_model_code(frame.f_code.co_filename):
            site = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            if branches is not None and line.startswith(("if ", "elif ", "while ")):
                branches.add(site)
            return site
        if layer is None and frame.f_code.co_filename.startswith(_TORCH_NN):
            layer = frame                   # a torch.nn layer that is the model, or is called by no model code
        frame = frame.f_back
    return f"{Path(layer.f_code.co_filename).name}:{layer.f_lineno}" if layer is not None else "?"


class AssumingShapeEnv(ShapeEnv):
    """A ShapeEnv that gives each data-dependent scalar an assumed value, so branches on it can be taken."""

    VALUES = {"int": 2, "bool": False, "float": 0.5}

    def __init__(self, assume: bool, **kwargs) -> None:
        super().__init__(**kwargs)
        self.assume = assume
        self.assumed: list[str] = []
        self.on_guard = None            # called with (expression, value, file:line) where an assumption decided a guard
        self.branches: set = set()      # file:line of guards taken on a line of the model's code that branches

    # Guards and symbols name the model's line, not the torch frame that took them. ShapeEnv's own search for that
    # frame imports torch's compiler stack (inductor, export, networkx: 400 modules, 40 MB) to list the files it
    # skips, on every symbol it creates; a frame walk to the model's code finds the same line.
    def _get_sloc(self, framework_loc=None) -> SLoc:
        return SLoc(framework_loc, _site(self.branches))

    def _get_stack_summary(self, is_debug: bool = False, framework_loc=None) -> tuple[SLoc, str]:
        return self._get_sloc(framework_loc), ""

    def _get_user_frame(self):
        frame = sys._getframe(1)
        while frame is not None and not is_model_code(frame.f_code.co_filename):
            frame = frame.f_back
        return frame

    def _log_real_tensor_propagation(self, orig_expr, unsound_result) -> None:
        """A guard on a data-dependent value, decided by the value assumed for it."""
        super()._log_real_tensor_propagation(orig_expr, unsound_result)
        if self.on_guard is not None:
            self.on_guard(orig_expr, unsound_result, _site())

    def assumed_values(self) -> dict[str, object]:
        """Each unbacked symbol's assumed value, by the name the record's sizes use (u0 -> 2)."""
        out = {}
        for sym, value in self.real_tensor_prop_unbacked_vals.items():
            out[str(sym)] = int(value) if value.is_Integer else (bool(value) if value.is_Boolean else float(value))
            if isinstance(sym, sympy.Eq) and sym.rhs == 1 and sym.lhs.is_Symbol and value.is_Boolean:
                out[str(sym.lhs)] = int(bool(value))    # a data-dependent bool is u0 == 1 over an int u0
        return out

    def _assume(self, value, kind: str):
        if self.assume:
            self.set_real_tensor_prop_unbacked_vals(value.node.expr, self.VALUES[kind])
            self.assumed.append(f"{value.node.expr} = {self.VALUES[kind]} ({_site()})")
        return value

    def create_unbacked_symint(self, *args, **kwargs):
        return self._assume(super().create_unbacked_symint(*args, **kwargs), "int")

    def create_unbacked_symbool(self, *args, **kwargs):
        return self._assume(super().create_unbacked_symbool(*args, **kwargs), "bool")

    def create_unbacked_symfloat(self, *args, **kwargs):
        return self._assume(super().create_unbacked_symfloat(*args, **kwargs), "float")


# remainders and roundings: a size condition one of them decides holds for some sizes and not for others next to them
ROUNDINGS = (Mod, PythonMod, sympy.Mod, FloorDiv, CeilDiv, sympy.floor, sympy.ceiling)


# Checks of a tensor's data whose only use is to choose torch's fused fast path, with their answer that keeps to
# the plain one: nn.TransformerEncoder asks whether a padding mask is left-aligned before it would turn its input
# into a nested tensor, which it does only without gradients, and the record runs with them.
_FAST_PATH_CHECKS = {torch.ops.aten._nested_tensor_from_mask_left_aligned.default: False}


class Decompose(TorchDispatchMode):
    """Runs ops whose meta kernels are not symbolic through their Python decompositions."""

    def __init__(self) -> None:
        super().__init__()
        self.used: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _FAST_PATH_CHECKS:       # no fake tensor has the data to answer: the answer that runs the math
            self._note(func)
            return _FAST_PATH_CHECKS[func]
        if func in DECOMPOSE:
            self._note(func)
            return decomposition_table[func](*args, **kwargs)
        try:
            return func(*args, **kwargs)
        except RuntimeError as exc:
            if any(text in str(exc) for text in _NOT_SYMBOLIC) and func in decomposition_table:
                self._note(func)
                return decomposition_table[func](*args, **kwargs)
            raise

    def _note(self, func) -> None:
        name = str(func.overloadpacket)
        if name not in self.used:
            self.used.append(name)


@contextlib.contextmanager
def lines_read_for_stacks():
    """Leaves linecache as it was. The fake mode keeps the stack that made it, and a fake input logs the stack that
    made it (to a structured-trace handler that is off), each line looked up: linecache would keep every file on
    those stacks for good (fake_tensor.py's 3,500 lines among them, 0.6 MB), to be read by nothing."""
    before = set(linecache.cache)
    try:
        yield
    finally:
        for name in set(linecache.cache) - before:
            linecache.cache.pop(name, None)


def release(shape_env: ShapeEnv) -> None:
    """Lets go of a ShapeEnv whose run is over. Its methods' lru caches sit on the class, keyed by the instance: they
    keep every ShapeEnv of the process, and with it every symbol, guard and cached fake-tensor dispatch."""
    for cls in type(shape_env).__mro__:
        for value in vars(cls).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


@contextlib.contextmanager
def quiet():
    """Fake-tensor and ShapeEnv loggers print tracebacks of failures this module reports itself. A logger already
    that quiet (the CLI makes two so for its whole run) is left alone: each setLevel clears the cached levels of
    every logger of the process."""
    saved = [(logger, logger.level) for logger in map(logging.getLogger, _QUIET) if logger.level < logging.CRITICAL]
    for logger, _ in saved:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in saved:
            logger.setLevel(level)


def guard_site(env, sym) -> str:
    """Where the first guard pinning `sym` to a number was taken in the model's code: "file.py:line"."""
    for g in env.guards:
        if sym in g.expr.free_symbols and isinstance(g.expr, sympy.Eq):
            return (g.sloc.maybe_user_loc or str(g.sloc)).strip().strip("()")
    return ""
