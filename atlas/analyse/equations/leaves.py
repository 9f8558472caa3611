"""Equations for torch.nn leaf modules, keyed by type and filled from the instance's attributes.

A builder gets a `LeafBuilder` (the module, the program being built, the module's path relative to
the component being documented, and the attribute naming it, to subscript its parameters: W_qkv) and
the input nodes. It returns the output node and the steps it needs. Modules without a builder are
derived from what their forward() runs, like any other code.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass, field

from torch import nn

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_nn as n
from atlas.analyse.equations import ops_reduce as red
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.nodes import ADD, Node, Num, SizeOf, Sym
from atlas.analyse.equations.notation import Accent, Fenced, Frac, Glyph, Ident, Number, Script, rm, row, sub
from atlas.analyse.equations.notation import Sqrt as Root
from atlas.analyse.equations.program import Program, Step
from atlas.i18n import msg, msgn
from atlas.load.forward_calls import bind


class Unsupported(Exception):
    """A construct the atlas cannot turn into equations; the message says which."""

    @property
    def reason(self):
        """The message as given: a translatable Text, for the page in each language."""
        return self.args[0] if self.args else str(self)


@dataclass
class Leaf:
    out: object                                         # the output node (a tuple for several)
    steps: list = field(default_factory=list)           # steps before the output, in order
    inline: bool = True                                 # a parent may show it as one expression
    summary: str = ""


@dataclass
class LeafBuilder:
    """What a builder needs: symbols for parameters and constants, and steps."""

    module: nn.Module
    prog: Program
    path: str                       # relative to the documented component
    attr: str | None                # the attribute naming the module in its parent
    named: dict = field(default_factory=dict)   # the call's arguments by forward()'s names (named_arguments)

    def param(self, name: str, base: str, transpose: bool = False):
        if getattr(self.module, name, None) is None:
            return None
        key = f"p.{self.path}.{name}" if self.path else f"p.{name}"
        if transpose:
            key += ".T"
        shape = tuple(getattr(self.module, name).shape)
        shape = shape[:-2] + shape[-2:][::-1] if transpose else shape
        self.prog.add(key, "param", ("param", self.path, name, transpose), base=base, role=_role(self.path, self.attr),
                      shape=shape)
        return Sym(key)

    def const(self, name: str, value) -> Sym:
        """A constant stated once on the page (ε = 10⁻⁵): one symbol per distinct value."""
        key = f"c.{name}.{value!r}"
        self.prog.add(key, "const", ("const", value), base=name, scalar=True)
        if key not in self.prog.constants:
            self.prog.constants.append(key)
        return Sym(key)

    def step(self, hint: str, node: Node, name: str | None = None, of=None) -> tuple[Sym, Step]:
        """A step of the leaf's own page; `name` fixes its notation, {x} standing for the input `of`'s name."""
        key = f"v.{self.path}.{hint}" if self.path else f"v.{hint}"
        self.prog.add(key, "value", hint=hint, fixed=name, fixed_input=of.key if isinstance(of, Sym) else None)
        return Sym(key), Step(key, node)


def _over_features(letter, power=None):
    """The name of a statistic over the features of its input x: μ_d(x), σ_d²(x), ms_d(x)."""
    stat = Script(letter, sub=Ident("d"), sup=power, tight="_^")
    return lambda x: row(stat, Fenced("(", ")", x))


def _role(path: str, attr: str | None) -> str | None:
    """What names a child's parameters: its attribute, or for a list entry the list and the index (blocks 0)."""
    if attr is None or not attr.isdigit():
        return attr
    parent = path.rsplit(".", 2)
    return f"{parent[-2]} {attr}" if len(parent) >= 2 else attr


def _affine(b: LeafBuilder, core, weight_base=Ident("γ"), bias_base=Ident("β")):
    gamma, beta = b.param("weight", weight_base), b.param("bias", bias_base)
    out = core if gamma is None else m.Mul(gamma, core)
    return out if beta is None else m.Add(out, beta)


def linear(b: LeafBuilder, x):
    W, bias = b.param("weight", "W", transpose=True), b.param("bias", "b")
    out = t.MatMul(x, W)
    return Leaf(out if bias is None else m.Add(out, bias),
                summary=msg("An affine map from %(inputs)s to %(outputs)s features.",
                            inputs=b.module.in_features, outputs=b.module.out_features))


def layer_norm(b: LeafBuilder, x):
    mod = b.module
    if len(mod.normalized_shape) != 1:
        raise Unsupported(msg("LayerNorm over %(n)s axes", n=len(mod.normalized_shape)))
    d = SizeOf(mod.normalized_shape[0])
    eps = b.const("eps", float(mod.eps))
    mu, s1 = b.step("mu", red.Mean(x, d, dim=-1, keepdim=True), _over_features(Ident("μ")), x)
    var, s2 = b.step("sigma2", red.Mean(m.Pow(m.Sub(x, mu), Num(2)), d, dim=-1, keepdim=True),
                      _over_features(Ident("σ"), Number(2)), x)
    core = m.Div(m.Sub(x, mu), m.Sqrt(m.Add(var, eps)))
    summary = msg("Center and scale each position's features, then apply learned gain and bias.") \
        if mod.elementwise_affine and mod.bias is not None else (
            msg("Center and scale each position's features, then apply a learned gain.") if mod.elementwise_affine
            else msg("Center and scale each position's features, with no learned gain or bias."))
    return Leaf(_affine(b, core), [s1, s2], inline=False, summary=summary)


def rms_norm(b: LeafBuilder, x):
    mod = b.module
    if len(mod.normalized_shape) != 1:
        raise Unsupported(msg("RMSNorm over %(n)s axes", n=len(mod.normalized_shape)))
    d = SizeOf(mod.normalized_shape[0])
    eps = m.MachineEpsilon(x) if mod.eps is None else b.const("eps", float(mod.eps))
    ms, s1 = b.step("ms", red.Mean(m.Pow(x, Num(2)), d, dim=-1, keepdim=True), _over_features(rm("ms")), x)
    core = m.Div(x, m.Sqrt(m.Add(ms, eps)))
    return Leaf(_affine(b, core), [s1], inline=False,
                summary=msg("Scale each position's features by their root mean square, then apply a learned gain."))


def embedding(b: LeafBuilder, x):
    if b.module.max_norm is not None:
        raise Unsupported(msg("Embedding with max_norm renormalizes rows in place"))
    E = b.param("weight", "E")
    return Leaf(t.Rows(E, x), summary=msg("Look up one of %(rows)s learned rows per index.",
                                         rows=b.module.num_embeddings))


def gelu(b: LeafBuilder, x):
    if b.module.approximate == "tanh":
        inner = m.Mul(Num(math.sqrt(2 / math.pi)), m.Add(x, m.Mul(Num(0.044715), m.Pow(x, Num(3)))))
        out = m.Mul(m.Div(x, Num(2)), m.Add(Num(1), m.Tanh(inner)))
        return Leaf(out, summary=msg("The GELU activation, in its tanh approximation."))
    return Leaf(m.Mul(x, m.Phi(x)),
                summary=msg("The exact GELU activation: each value times the standard normal CDF at it."))


def dropout(b: LeafBuilder, x):
    return Leaf(n.Dropout(x, Num(b.module.p)),
                summary=msg("Zero each value with probability %(p)s while training; the identity in evaluation.",
                            p=str(b.module.p)))


def relu(b: LeafBuilder, x):
    return Leaf(m.Max(x, Num(0)), summary=msg("Keep positive values, zero the rest."))


def silu(b: LeafBuilder, x):
    return Leaf(m.Mul(x, m.Sigmoid(x)), summary=msg("The SiLU activation: each value times its logistic sigmoid."))


def tanh(b: LeafBuilder, x):
    return Leaf(m.Tanh(x), summary=msg("The hyperbolic tangent, elementwise."))


def sigmoid(b: LeafBuilder, x):
    return Leaf(m.Sigmoid(x), summary=msg("The logistic sigmoid, elementwise."))


def softmax(b: LeafBuilder, x, shape=None):
    dim = b.module.dim
    if dim is None:
        raise Unsupported(msg("Softmax with dim=None"))
    size = SizeOf(shape[dim]) if shape else SizeOf(0)
    return Leaf(red.Softmax(x, size, dim=dim),
                summary=msg("Exponentiate and normalize along axis %(axis)s.", axis=str(dim)))


def identity(b: LeafBuilder, x):
    return Leaf(x, summary=msg("Returns its input unchanged."))


def conv(b: LeafBuilder, x):
    mod = b.module
    if mod.padding_mode != "zeros":
        raise Unsupported(msg("convolution with padding_mode=%(mode)s", mode=repr(mod.padding_mode)))
    nd = len(mod.kernel_size)
    W, bias = b.param("weight", "W"), b.param("bias", "b")
    out = n.Conv(x, W, bias, nd=nd, stride=tuple(mod.stride), padding=mod.padding if isinstance(mod.padding, str)
                 else tuple(mod.padding), dilation=tuple(mod.dilation), groups=mod.groups)
    sizes = dict(nd=nd, inputs=mod.in_channels, outputs=mod.out_channels,
                 kernel=" × ".join(map(str, mod.kernel_size)), stride=_per_axis(mod.stride))
    settings = _conv_settings(mod)
    if settings:
        return Leaf(out, summary=msg("A %(nd)s-d convolution from %(inputs)s to %(outputs)s channels, kernel "
                                     "%(kernel)s, stride %(stride)s, with %(settings)s.", settings=settings, **sizes))
    return Leaf(out, summary=msg("A %(nd)s-d convolution from %(inputs)s to %(outputs)s channels, kernel "
                                 "%(kernel)s, stride %(stride)s.", **sizes))


def _conv_settings(mod) -> tuple:
    """What else a convolution computes with, where it is not the default: its padding, dilation and groups."""
    said = []
    if isinstance(mod.padding, str):
        said.append(msg("padding %(padding)s", padding=repr(mod.padding)))
    elif any(mod.padding):
        said.append(msg("padding %(padding)s", padding=_per_axis(mod.padding)))
    if any(d != 1 for d in mod.dilation):
        said.append(msg("dilation %(dilation)s", dilation=_per_axis(mod.dilation)))
    if mod.groups != 1:
        said.append(msgn("%(n)s group", "%(n)s groups", mod.groups))
    return tuple(said)


def _per_axis(values) -> str:
    """A convolution's setting: one number when every axis has it, else each axis's, as a kernel's size reads."""
    values = tuple(values)
    return str(values[0]) if len(set(values)) == 1 else " × ".join(map(str, values))


class BatchNormOp(Node):
    """Per-channel normalization (axis 1) with running statistics in evaluation mode."""

    prec = ADD
    normalizes = True           # divides by the square root of each channel's running variance

    def notation(self, p):
        x, mean, var, eps, gamma, beta = self.args
        core = Frac(row(p.print(x), Glyph("−"), p.print(mean)), Root(row(p.print(var), Glyph("+"), p.print(eps))))
        if gamma is not None:
            core = row(p.print(gamma), Glyph("⊙"), core)
        return core if beta is None else row(core, Glyph("+"), p.print(beta))

    def run(self, ev, x, mean, var, eps, gamma, beta):
        shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
        y = (x - mean.reshape(shape)) / (var.reshape(shape) + eps) ** 0.5
        if gamma is not None:
            y = y * gamma.reshape(shape)
        return y if beta is None else y + beta.reshape(shape)


def batch_norm(b: LeafBuilder, x):
    mod = b.module
    if not mod.track_running_stats:
        raise Unsupported(msg("BatchNorm without running statistics depends on the batch"))
    mean = b.param("running_mean", Accent("hat", Ident("μ"), tight=True))
    var = b.param("running_var", Script(Accent("hat", Ident("σ"), tight=True), sup=Number(2), tight="^"))
    eps = b.const("eps", float(mod.eps))
    gamma, beta = b.param("weight", Ident("γ")), b.param("bias", Ident("β"))
    return Leaf(BatchNormOp(x, mean, var, eps, gamma, beta), inline=False,
                summary=msg("Normalize each of %(n)s channels with running statistics, then scale and shift.",
                            n=mod.num_features))


class GroupNormOp(Node):
    prec = ADD
    normalizes = True           # divides by the square root of each group's variance

    def notation(self, p):
        x, eps, gamma, beta = self.args
        mean, var = sub(Ident("μ"), Ident("g"), tight=True), Script(Ident("σ"), Ident("g"), Number(2), tight="_^")
        core = Frac(row(p.print(x), Glyph("−"), mean), Root(row(var, Glyph("+"), p.print(eps))))
        if gamma is not None:
            core = row(p.print(gamma), Glyph("⊙"), core)
        return core if beta is None else row(core, Glyph("+"), p.print(beta))

    def run(self, ev, x, eps, gamma, beta):
        g = x.reshape(x.shape[0], self.meta["groups"], -1)
        mu = g.mean(-1, keepdim=True)
        var = ((g - mu) ** 2).mean(-1, keepdim=True)
        y = ((g - mu) / (var + eps) ** 0.5).reshape(x.shape)
        shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
        if gamma is not None:
            y = y * gamma.reshape(shape)
        return y if beta is None else y + beta.reshape(shape)


def group_norm(b: LeafBuilder, x):
    mod = b.module
    eps = b.const("eps", float(mod.eps))
    gamma, beta = b.param("weight", Ident("γ")), b.param("bias", Ident("β"))
    return Leaf(GroupNormOp(x, eps, gamma, beta, groups=mod.num_groups), inline=False,
                summary=msg("Normalize each of %(n)s channel groups over its channels and positions.",
                            n=mod.num_groups))


REGISTRY = {
    nn.Linear: linear,
    nn.LayerNorm: layer_norm,
    nn.RMSNorm: rms_norm,
    nn.Embedding: embedding,
    nn.GELU: gelu,
    nn.Dropout: dropout,
    nn.ReLU: relu,
    nn.SiLU: silu,
    nn.Tanh: tanh,
    nn.Sigmoid: sigmoid,
    nn.Softmax: softmax,
    nn.Identity: identity,
    nn.Conv1d: conv,
    nn.Conv2d: conv,
    nn.BatchNorm1d: batch_norm,
    nn.BatchNorm2d: batch_norm,
    nn.GroupNorm: group_norm,
}
# Builders in modules of their own, (module, function), imported for the first module of their class: a model with
# no such layer does without their code.
ELSEWHERE = {
    nn.MultiheadAttention: ("atlas.analyse.equations.composites", "multihead_attention"),
    nn.TransformerEncoderLayer: ("atlas.analyse.equations.composites", "transformer_encoder_layer"),
    nn.RNN: ("atlas.analyse.equations.recurrent", "recurrent"),
    nn.LSTM: ("atlas.analyse.equations.recurrent", "recurrent"),
    nn.GRU: ("atlas.analyse.equations.recurrent", "recurrent"),
}


def builder_for(module: nn.Module):
    """The builder registered for the module's type or its nearest registered base class."""
    for cls in type(module).__mro__:
        if cls in REGISTRY or cls in ELSEWHERE:
            # a subclass with its own forward() computes something else: derive it from its code
            if type(module).forward is not cls.forward:
                return None
            if cls not in REGISTRY:
                where, name = ELSEWHERE[cls]
                REGISTRY[cls] = getattr(importlib.import_module(where), name)
            return REGISTRY[cls]
    return None


def named_arguments(module: nn.Module, args, kwargs, node_of) -> dict:
    """A recorded call's arguments by the names forward() gives them: a tensor as its node (node_of, None where it
    has none), any other value as recorded. A builder tells a mask from another tensor argument by its name, and
    reads flags (is_causal) that are no tensors. Empty where the call does not bind to the signature."""
    from atlas.extract.trace.structures import Ref
    try:
        bound = bind(module, args, kwargs, spread=False)
    except (TypeError, ValueError):
        return {}
    return {name: node_of(v) if isinstance(v, Ref) else v for name, v in bound.items()}


def build(module: nn.Module, prog: Program, path: str, ins: list, attr: str | None = None, shapes=None,
          named: dict | None = None) -> Leaf:
    fn = builder_for(module)
    if fn is None:
        raise Unsupported(msg("no equations for %(cls_name)s", cls_name=type(module).__name__))
    b = LeafBuilder(module, prog, path, attr, named or {})
    if fn is softmax:
        return fn(b, *ins, shape=shapes[0] if shapes else None)
    return fn(b, *ins)
