"""Which layer first consumes a forward() input: read from the AST of forward(), else from module order.

`self.fc1(x)` names a submodule; `self.blocks[0](x)` and `for block in self.blocks: x = block(x)` name a list
entry; `self._norm(x)` names a helper method, read in turn; a composite submodule is entered with the
parameter the argument binds to; `F.linear(x, self.weight)`, `F.embedding(x, self.weight)` and `x @ self.W`
name a tensor. Layers that keep any shape (activations, dropout, Identity, Flatten) pass the input on:
`h = self.act(x)` makes `h` the input. `B, T, C = x.size()` fixes the rank. Where forward() cannot be read,
the first informative layer in module order stands in. No torch call runs here.
"""

from __future__ import annotations

import ast
import inspect
import logging
from dataclasses import dataclass, replace

import torch
from torch import nn

from atlas.extract.discover import einops_patterns
from atlas.extract.discover.ast_walk import function_node, parameter_of, post_order, scaled

log = logging.getLogger("atlas")

# Layers whose sizes say what their input must be.
INFORMATIVE = (nn.Linear, nn.Bilinear, nn.Embedding, nn.EmbeddingBag, nn.Conv1d, nn.Conv2d, nn.Conv3d,
               nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.LayerNorm, nn.RMSNorm, nn.GroupNorm,
               nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm, nn.RNNBase,
               nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
               nn.TransformerEncoder, nn.TransformerDecoder, nn.Transformer)
# Layers that accept any shape and give the same rank back (Flatten changes the rank, but any input flattens).
PASS_THROUGH = (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout, nn.Identity, nn.Flatten,
                nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Mish, nn.Tanh, nn.Sigmoid, nn.Softmax, nn.LogSoftmax,
                nn.LeakyReLU, nn.ELU, nn.SELU, nn.CELU, nn.Hardswish, nn.Hardsigmoid, nn.Hardtanh, nn.Softplus,
                nn.PReLU, nn.GLU, nn.Softsign, nn.Tanhshrink)
# torch.nn layers made of others, read through when one is the model itself: nn.Transformer's `tgt` reaches its
# decoder, not the encoder its `src` reaches.
_READ_THROUGH = (nn.Transformer, nn.TransformerDecoder)
_KEEPS = {"float", "double", "half", "bfloat16", "long", "int", "to", "contiguous", "clone", "detach", "type_as",
          "requires_grad_"}
_FUNCTIONAL = {"linear": 1, "embedding": 1, "layer_norm": None, "conv1d": 1, "conv2d": 1, "conv3d": 1}
MAX_DEPTH = 12


@dataclass(frozen=True)
class Consumer:
    """The first layer an input reaches: a module (with its path) or a functional call on a weight tensor."""
    path: str                                # module path from the model root ("" is the model itself)
    module: nn.Module | None
    function: str | None = None              # "linear", "embedding", ... for F.<function>(x, weight)
    weight: torch.Tensor | None = None
    rank: int | None = None                  # from `B, T, C = x.size()` on the way
    how: str = "forward() source"            # "forward() source" or "module order"
    argument: str | None = None              # the layer's forward() parameter the input binds to, where known
    viewed: tuple[int, ...] | None = None    # `z.view(z.size(0), 100, 1, 1)` on the way: the sizes after the batch
    rearranged: tuple[str, dict] | None = None   # an einops pattern and its axis sizes on the way (einops_patterns)


def first_consumer(model: nn.Module, param: str) -> Consumer | None:
    """The first layer that consumes forward() parameter `param`, from the source, else from module order."""
    if isinstance(model, INFORMATIVE) and not isinstance(model, _READ_THROUGH):
        return Consumer("", model, how="the model itself", argument=param)
    try:
        found = _in_forward(model, "", param, type(model).forward, 0, None)
    except (OSError, TypeError, SyntaxError) as exc:        # no source (built-ins, REPL, C extensions)
        log.debug("forward() of %s not readable: %s", type(model).__name__, exc)
        found = None
    if found is None and isinstance(model, INFORMATIVE):
        return Consumer("", model, how="the model itself")
    return found or module_order(model)


def module_order(model: nn.Module) -> Consumer | None:
    """The first informative layer in module registration order."""
    for path, module in model.named_modules():
        if isinstance(module, INFORMATIVE):
            return Consumer(path, module, how="module order")
    return None


def _enter(module: nn.Module, path: str, arg_index: int | None, keyword: str | None, depth: int,
           rank: int | None) -> Consumer | None:
    """The consumer inside `module`, reached with its positional argument `arg_index` or keyword `keyword`."""
    if isinstance(module, INFORMATIVE):
        return Consumer(path, module, rank=rank, argument=parameter_of(module, arg_index, keyword))
    if isinstance(module, nn.Sequential):
        rearranged = None
        for key, child in module._modules.items():
            if child is None or isinstance(child, PASS_THROUGH):
                continue
            if einops_patterns.layer_of(child) is not None and rearranged is None:
                rearranged = einops_patterns.layer_of(child)
                continue
            found = _enter(child, f"{path}.{key}" if path else key, 0, None, depth + 1, rank)
            return replace(found, rearranged=rearranged) if found is not None and rearranged else found
        return None
    if isinstance(module, PASS_THROUGH) or depth > MAX_DEPTH:
        return None
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return None
    name = keyword if keyword is not None else (params[arg_index].name if arg_index is not None
                                                and arg_index < len(params) else None)
    if name is None:
        return None
    try:
        return _in_forward(module, path, name, type(module).forward, depth + 1, rank)
    except (OSError, TypeError, SyntaxError):
        return None


def _in_forward(module: nn.Module, path: str, param: str, fn, depth: int, rank: int | None) -> Consumer | None:
    node = function_node(fn)
    reader = _Reader(module, path, param, depth, rank, getattr(fn, "__globals__", {}))
    return reader.body(node.body)


class _Reader:
    """Reads one forward() (or helper) body in source order, following the aliases of one input."""

    def __init__(self, module: nn.Module, path: str, param: str, depth: int, rank: int | None,
                 names: dict | None = None) -> None:
        self.module, self.path, self.depth, self.rank = module, path, depth, rank
        self.names = names or {}                  # the function's globals: sizes named at module level (nz = 100)
        self.aliases = {param}
        self.loop_vars: dict[str, tuple[nn.Module, str]] = {}
        self.viewed: tuple[int, ...] | None = None
        self.branches = 0                         # how deep in if/while bodies the statement read is
        self.locals: dict[str, int] = {}          # ints the body names (`p = self.patch_size`)
        self.rearranged: tuple[str, dict] | None = None

    def body(self, stmts: list[ast.stmt]) -> Consumer | None:
        for stmt in stmts:
            found = self.statement(stmt)
            if found is not None:
                return found
        return None

    def statement(self, stmt: ast.stmt) -> Consumer | None:
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._bind_loop(stmt)
            found = self.calls(stmt.iter)
            return found or self.body(stmt.body)
        if isinstance(stmt, (ast.If, ast.While)):
            found = self.calls(stmt.test)
            self.branches += 1              # a name rebound in a branch may hold the input still on the other side
            try:
                return found or self.body(stmt.body) or self.body(stmt.orelse)
            finally:
                self.branches -= 1
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            return self.body(stmt.body)
        if isinstance(stmt, ast.Try):
            return self.body(stmt.body)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        if isinstance(stmt, ast.Assign):
            self._shape_unpack(stmt)
            self._view(stmt.value)
            self._locals(stmt)
            if self._rearranged(stmt):
                return None
        found = self.calls(stmt)
        if found is not None and found.viewed is None and self.viewed is not None:
            found = replace(found, viewed=self.viewed)
        if found is not None and found.rearranged is None and self.rearranged is not None:
            found = replace(found, rearranged=self.rearranged)
        if found is None and isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if self._is_alias(stmt.value):
                self.aliases |= names
            elif not self.branches and self._replaces(stmt.value):
                self.aliases -= names
        return found

    # -- aliases ----------------------------------------------------------------
    def _is_alias(self, expr: ast.expr) -> bool:
        """An expression that is the input itself, or a layout-preserving view of it."""
        if isinstance(expr, ast.Name):
            return expr.id in self.aliases
        if isinstance(expr, ast.Subscript):     # `tgt[:, t]`: a step of it, fed to a decoder in a Python loop
            adds_axis = any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(expr.slice))
            return not adds_axis and self._is_alias(expr.value)     # `t[:, None]` is another shape
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr in _KEEPS:
                return self._is_alias(expr.func.value)
            target = self._callee(expr)
            if isinstance(target, tuple) and isinstance(target[0], PASS_THROUGH):
                return any(self._is_alias(a) for a in expr.args[:1])
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in self.loop_vars:
            return isinstance(self.loop_vars[expr.func.id][0], PASS_THROUGH) and \
                any(self._is_alias(a) for a in expr.args[:1])
        return False

    def _replaces(self, expr: ast.expr) -> bool:
        """Whether a name bound to `expr` no longer holds the input: `x = tok + pos` reads no alias of it, and
        `x = self.token_emb(x)` is a layer's output (x-transformers' wrapper rebinds `x` so, and its output head
        `self.to_logits(x)` is not where the token ids go). A helper method's result (`labels = self.drop(labels)`)
        may be the input still."""
        if not any(isinstance(n, ast.Name) and n.id in self.aliases for n in ast.walk(expr)):
            return True
        if isinstance(expr, ast.Call):
            target = self._callee(expr)
            return isinstance(target, tuple) and isinstance(target[0], nn.Module) \
                and not isinstance(target[0], PASS_THROUGH)
        return False

    def _shape_unpack(self, stmt: ast.Assign) -> None:
        """`B, T, C = x.size()` / `x.shape`: the input has as many dims as there are names."""
        value = stmt.value
        if isinstance(value, ast.Call) and not value.args and isinstance(value.func, ast.Attribute) \
                and value.func.attr == "size":
            value = value.func.value
        elif isinstance(value, ast.Attribute) and value.attr == "shape":
            value = value.value
        else:
            return
        if self._is_alias(value) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List)):
            elts = stmt.targets[0].elts
            if not any(isinstance(e, ast.Starred) for e in elts):
                self.rank = len(elts)

    def _view(self, value: ast.expr) -> None:
        """`z = z.view(z.size(0), nz, 1, 1)` (or `.reshape`, or -1 for the batch): a latent vector laid out as a map
        for the layer after it. The sizes after the batch, where the code gives every one as a number."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                and value.func.attr in ("view", "reshape") and self._is_alias(value.func.value)):
            return
        args = value.args[0].elts if len(value.args) == 1 and isinstance(value.args[0], (ast.Tuple, ast.List)) \
            else value.args
        sizes = [self._number(a) for a in args[1:]]
        if len(args) >= 2 and all(isinstance(n, int) and n > 0 for n in sizes):
            self.viewed = tuple(sizes)

    def _locals(self, stmt: ast.Assign) -> None:
        """`p = self.patch_size`, `b, p = x.shape[0], self.patch_size`: ints the code names, for later reads."""
        target, value = stmt.targets[0], stmt.value
        pairs = (zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                 and len(target.elts) == len(value.elts) else [(target, value)])
        for t, v in pairs:
            if isinstance(t, ast.Name) and self._number(v) is not None:
                self.locals[t.id] = self._number(v)

    def _rearranged(self, stmt: ast.Assign) -> bool:
        """`x = rearrange(img, 'b c (h p1) (w p2) -> ...', p1=p, p2=p)`: x is the input, rearranged so."""
        value = stmt.value
        if not (isinstance(value, ast.Call) and len(value.args) >= 2 and self._is_alias(value.args[0])
                and isinstance(value.args[1], ast.Constant) and isinstance(value.args[1].value, str)):
            return False
        name = value.func.id if isinstance(value.func, ast.Name) else getattr(value.func, "attr", None)
        axes = {kw.arg: self._number(kw.value) for kw in value.keywords if kw.arg}
        if name != "rearrange" or "->" not in value.args[1].value or None in axes.values():
            return False
        self.rearranged = (value.args[1].value, axes)
        self.aliases |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        return True

    def _number(self, expr: ast.expr):
        """An int the code states: a literal, a module-level name, an attribute of self, or a product of them."""
        if isinstance(expr, ast.Constant) and type(expr.value) is int:
            return expr.value
        if isinstance(expr, ast.Name):
            value = self.locals.get(expr.id, self.names.get(expr.id))
            return value if type(value) is int else None
        if isinstance(expr, ast.Attribute):
            value = self._resolve(expr)
            return value if type(value) is int else None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Mult, ast.Add, ast.FloorDiv)):
            a, b = self._number(expr.left), self._number(expr.right)
            if a is None or b is None or (isinstance(expr.op, ast.FloorDiv) and b == 0):
                return None
            return a * b if isinstance(expr.op, ast.Mult) else a + b if isinstance(expr.op, ast.Add) else a // b
        return None

    def _bind_loop(self, stmt: ast.For) -> None:
        """`for layer in self.layers`, `for i, layer in enumerate(...)`, and a dict of modules' `.values()` and
        `.items()` (torchvision's IntermediateLayerGetter runs its backbone so): the loop variable is the first."""
        it, target = stmt.iter, stmt.target
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate" and it.args \
                and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            it, target = it.args[0], target.elts[1]
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr in ("values", "items") \
                and not it.args:
            if it.func.attr == "items":
                if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
                    return
                target = target.elts[1]
            it = it.func.value
        found = self._resolve(it, with_path=True)
        container, path = found if isinstance(found, tuple) else (None, None)
        if isinstance(target, ast.Name) and isinstance(container, (nn.ModuleList, nn.Sequential, nn.ModuleDict)) \
                and len(container):
            key = next(iter(container._modules))
            self.loop_vars[target.id] = (container._modules[key], f"{path}.{key}" if path else key)

    # -- calls ------------------------------------------------------------------
    def calls(self, node: ast.AST) -> Consumer | None:
        """Calls in evaluation order (arguments before the call that takes them)."""
        for call in post_order(node):
            found = self.call(call)
            if found is not None:
                return found
        return None

    def call(self, call: ast.Call | ast.BinOp) -> Consumer | None:
        if isinstance(call, ast.BinOp):         # x @ self.W: a product with a weight matrix, as F.linear's
            weight = self._resolve(call.right) if self._is_alias(scaled(call.left)) else None
            if isinstance(weight, torch.Tensor) and weight.dim() == 2:
                return Consumer(self.path, None, function="matmul", weight=weight, rank=self.rank)
            return None
        position, keyword = None, None
        for i, a in enumerate(call.args):
            if self._is_alias(a):
                position = i
                break
        if position is None:
            for kw in call.keywords:
                if kw.arg is not None and self._is_alias(kw.value):
                    keyword = kw.arg
                    break
        if position is None and keyword is None:
            return None
        target = self._callee(call)
        if isinstance(target, tuple):                      # a module reached through a path
            module, sub = target
            if isinstance(module, PASS_THROUGH):
                return None
            return _enter(module, sub, position, keyword, self.depth, self.rank)
        if isinstance(target, str) and target in _FUNCTIONAL and position == 0 and len(call.args) > 1:
            weight = self._resolve(call.args[1])
            if isinstance(weight, torch.Tensor):
                return Consumer(self.path, None, function=target, weight=weight, rank=self.rank)
        if callable(target) and inspect.ismethod(target) and self.depth < MAX_DEPTH:
            params = list(inspect.signature(target).parameters)
            name = keyword if keyword is not None else (params[position] if position < len(params) else None)
            if name is not None:
                try:
                    return _in_forward(self.module, self.path, name, target.__func__, self.depth + 1, self.rank)
                except (OSError, TypeError, SyntaxError):
                    return None
        return None

    def _callee(self, call: ast.Call):
        """(module, path) for a submodule, a functional name for F.<fn>, a bound method, else None."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.loop_vars:
            return self.loop_vars[func.id]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in ("F", "functional", "nn_functional"):
            return func.attr
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
                and func.value.attr == "functional":
            return func.attr
        target = self._resolve(func, with_path=True)
        if isinstance(target, tuple) and isinstance(target[0], nn.Module):
            return target
        if isinstance(target, tuple):
            return target[0]
        return target

    def _resolve(self, expr: ast.expr, with_path: bool = False):
        """`self.a.b[0]` -> the object (and its module path when asked)."""
        if isinstance(expr, ast.Name) and expr.id == "self":
            return (self.module, self.path) if with_path else self.module
        if isinstance(expr, ast.Attribute):
            base = self._resolve(expr.value, with_path=True)
            if base is None:
                return None
            obj, path = base
            if isinstance(obj, nn.Module) and expr.attr in obj._modules:
                value, path = obj._modules[expr.attr], f"{path}.{expr.attr}" if path else expr.attr
            else:
                try:
                    value = getattr(obj, expr.attr)
                except Exception:              # properties that need state; the source is only read
                    return None
            return (value, path) if with_path else value
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            base = self._resolve(expr.value, with_path=True)
            if base is None or not isinstance(base[0], (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
                return None
            obj, path = base
            keys = list(obj._modules)
            key = expr.slice.value
            key = keys[key] if isinstance(key, int) and -len(keys) <= key < len(keys) else str(key)
            if key not in obj._modules:
                return None
            value = obj._modules[key]
            return (value, f"{path}.{key}" if path else key) if with_path else value
        return None
