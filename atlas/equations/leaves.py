"""Equations for torch.nn leaf modules, keyed by type and filled from the instance's attributes.

A builder gets the module, the program being built, the module's path (relative
to the component being documented), the input expressions and, where the leaf
sits inside a parent's steps, the attribute naming it (to subscript its
parameters: W_qkv). It returns the output expression and the steps it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import sympy
from torch import nn

from atlas.equations import ops
from atlas.equations.program import Binding, Program, Stmt
from atlas.equations.symbols import subscripted
from atlas.i18n import msg


class Unsupported(Exception):
    """A construct the atlas cannot turn into equations; the message says which."""

    @property
    def reason(self):
        """The message as given: a translatable Text, for the page in each language."""
        return self.args[0] if self.args else str(self)


@dataclass
class Leaf:
    out: object                                         # the output expression (a Tuple for several)
    stmts: list[Stmt] = field(default_factory=list)     # steps before the output, in order
    inline: bool = True                                 # a parent may show it as one expression
    summary: str = ""


@dataclass
class _B:
    """What a builder needs: symbols for parameters and constants, and steps."""

    module: nn.Module
    prog: Program
    path: str
    attr: str | None

    def param(self, name: str, base: str, transpose: bool = False):
        if getattr(self.module, name, None) is None:
            return None
        tex = subscripted(base, self.attr) if self.attr else base
        return self.prog.symbol(f"{self.path}.{name}", tex, Binding("param", self.path, name, transpose))

    def const(self, key: str, tex: str, value) -> tuple[sympy.Symbol, Stmt]:
        sym = self.prog.symbol(f"{self.path}.{key}", tex, Binding("const", value=value), scalar=True)
        return sym, Stmt(sym, sympy.Float(value) if isinstance(value, float) else sympy.Integer(value))

    def step(self, key: str, tex: str, expr, lhs: str | None = None) -> tuple[sympy.Symbol, Stmt]:
        sym = self.prog.symbol(f"{self.path}.{key}", tex)
        return sym, Stmt(sym, expr, lhs=lhs)


def _affine(b: _B, core, weight_base="\\gamma", bias_base="\\beta"):
    gamma, beta = b.param("weight", weight_base), b.param("bias", bias_base)
    out = core if gamma is None else ops.Mul(gamma, core)
    return out if beta is None else ops.Add(out, beta)


def linear(b: _B, x):
    W, bias = b.param("weight", "W", transpose=True), b.param("bias", "b")
    out = ops.MatMul(x, W)
    return Leaf(out if bias is None else ops.Add(out, bias),
                summary=msg("An affine map from %(inputs)s to %(outputs)s features.",
                            inputs=b.module.in_features, outputs=b.module.out_features))


def layer_norm(b: _B, x):
    m = b.module
    if len(m.normalized_shape) != 1:
        raise Unsupported(msg("LayerNorm over %(n)s axes", n=len(m.normalized_shape)))
    d = sympy.Integer(m.normalized_shape[0])
    eps, eps_stmt = b.const("eps", r"\varepsilon", float(m.eps))
    mu, s1 = b.step("mu", r"\mu", ops.Mean(x, -1, d), lhs=r"\mu_d(x)")
    var, s2 = b.step("var", r"\sigma^2", ops.Mean(ops.Pow(ops.Sub(x, mu), 2), -1, d), lhs=r"\sigma_d^2(x)")
    core = ops.Div(ops.Sub(x, mu), ops.Sqrt(ops.Add(var, eps)))
    summary = msg("Center and scale each position's features, then apply learned gain and bias.") \
        if m.elementwise_affine and m.bias is not None else (
            msg("Center and scale each position's features, then apply a learned gain.") if m.elementwise_affine
            else msg("Center and scale each position's features, with no learned gain or bias."))
    return Leaf(_affine(b, core), [s1, s2, eps_stmt], inline=False, summary=summary)


def rms_norm(b: _B, x):
    m = b.module
    if len(m.normalized_shape) != 1:
        raise Unsupported(msg("RMSNorm over %(n)s axes", n=len(m.normalized_shape)))
    d = sympy.Integer(m.normalized_shape[0])
    if m.eps is None:
        raise Unsupported(msg("RMSNorm with eps=None uses the dtype's machine epsilon"))
    eps, eps_stmt = b.const("eps", r"\varepsilon", float(m.eps))
    ms, s1 = b.step("ms", r"\mathrm{ms}", ops.Mean(ops.Pow(x, 2), -1, d), lhs=r"\mathrm{ms}_d(x)")
    core = ops.Div(x, ops.Sqrt(ops.Add(ms, eps)))
    return Leaf(_affine(b, core), [s1, eps_stmt], inline=False,
                summary=msg("Scale each position's features by their root mean square, then apply a learned gain."))


def embedding(b: _B, x):
    if b.module.max_norm is not None:
        raise Unsupported(msg("Embedding with max_norm renormalizes rows in place"))
    E = b.param("weight", "E")
    return Leaf(ops.Rows(E, x), summary=msg("Look up one of %(rows)s learned rows per index.",
                                                           rows=b.module.num_embeddings))


def gelu(b: _B, x):
    if b.module.approximate == "tanh":
        inner = ops.Mul(sympy.Float(math.sqrt(2 / math.pi)),
                        ops.Add(x, ops.Mul(sympy.Float(0.044715), ops.Pow(x, 3))))
        out = ops.Mul(ops.Div(x, 2), ops.Add(sympy.Integer(1), ops.Tanh(inner)))
        return Leaf(out, summary=msg("The GELU activation, in its tanh approximation."))
    return Leaf(ops.Mul(x, ops.Phi(x)), summary=msg("The exact GELU activation: each value times the standard normal CDF at it."))


def dropout(b: _B, x):
    return Leaf(ops.Dropout(x, sympy.Float(b.module.p)),
                summary=msg("Zero each value with probability %(p)s while training; the identity in evaluation.",
                            p=str(b.module.p)))


def relu(b: _B, x):
    return Leaf(ops.Max(x, sympy.Integer(0)), summary=msg("Keep positive values, zero the rest."))


def silu(b: _B, x):
    return Leaf(ops.Mul(x, ops.Sigmoid(x)), summary=msg("The SiLU activation: each value times its logistic sigmoid."))


def tanh(b: _B, x):
    return Leaf(ops.Tanh(x), summary=msg("The hyperbolic tangent, elementwise."))


def sigmoid(b: _B, x):
    return Leaf(ops.Sigmoid(x), summary=msg("The logistic sigmoid, elementwise."))


def softmax(b: _B, x):
    dim = b.module.dim
    if dim is None:
        raise Unsupported(msg("Softmax with dim=None"))
    return Leaf(ops.Softmax(x, dim), summary=msg("Exponentiate and normalize along axis %(axis)s.", axis=str(dim)))


def identity(b: _B, x):
    return Leaf(x, summary=msg("Returns its input unchanged."))


def conv(b: _B, x):
    m = b.module
    if m.padding_mode != "zeros":
        raise Unsupported(msg("convolution with padding_mode=%(mode)s", mode=repr(m.padding_mode)))
    nd = len(m.kernel_size)
    W, bias = b.param("weight", "W"), b.param("bias", "b")
    pad = ops.Label(m.padding) if isinstance(m.padding, str) else sympy.Tuple(*m.padding)
    out = ops.Conv(x, W, bias if bias is not None else sympy.S.Zero, nd, sympy.Tuple(*m.stride), pad,
                   sympy.Tuple(*m.dilation), m.groups)
    return Leaf(out, summary=msg("A %(nd)s-d convolution from %(inputs)s to %(outputs)s channels, kernel "
                                 "%(kernel)s, stride %(stride)s.", nd=nd, inputs=m.in_channels, outputs=m.out_channels,
                                 kernel=" × ".join(map(str, m.kernel_size)), stride=", ".join(map(str, m.stride))))


def _affine_tex(p, core: str, gamma, beta) -> str:
    """γ ⊙ core + β, leaving out a gain or bias the module does not have."""
    if gamma != sympy.S.One:
        core = p._print(gamma) + r"\odot " + core
    return core + ("" if beta == sympy.S.Zero else "+" + p._print(beta))


def _per_channel(y, gamma, beta):
    """Scale and shift axis 1 (the channels) by a gain and a bias, where the module has them."""
    shape = [1, y.shape[1]] + [1] * (y.dim() - 2)
    if not isinstance(gamma, (int, float)):
        y = y * gamma.reshape(shape)
    if not isinstance(beta, (int, float)):
        y = y + beta.reshape(shape)
    return y


class BatchNormOp(ops.Op):
    """Per-channel normalization (axis 1) with running statistics in evaluation mode."""

    precedence = ops.ADD

    def tex(self, p, x, mean, var, eps, gamma, beta):
        core = r"\frac{" + p._print(x) + "-" + p._print(mean) + r"}{\sqrt{" + p._print(var) + "+" + p._print(eps) + "}}"
        return _affine_tex(p, core, gamma, beta)

    def run(self, x, mean, var, eps, gamma, beta):
        shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
        return _per_channel((x - mean.reshape(shape)) / (var.reshape(shape) + eps) ** 0.5, gamma, beta)


def batch_norm(b: _B, x):
    m = b.module
    if not m.track_running_stats:
        raise Unsupported(msg("BatchNorm without running statistics depends on the batch"))
    mean = b.prog.symbol(f"{b.path}.running_mean", r"\hat\mu", Binding("param", b.path, "running_mean"))
    var = b.prog.symbol(f"{b.path}.running_var", r"\hat\sigma^2", Binding("param", b.path, "running_var"))
    eps, eps_stmt = b.const("eps", r"\varepsilon", float(m.eps))
    gamma, beta = b.param("weight", r"\gamma"), b.param("bias", r"\beta")
    out = BatchNormOp(x, mean, var, eps, gamma if gamma is not None else sympy.S.One,
                      beta if beta is not None else sympy.S.Zero)
    return Leaf(out, [eps_stmt], inline=False,
                summary=msg("Normalize each of %(n)s channels with running statistics, then scale and shift.",
                            n=m.num_features))


class GroupNormOp(ops.Op):
    precedence = ops.ADD

    def tex(self, p, x, groups, eps, gamma, beta):
        core = r"\frac{" + p._print(x) + r"-\mu_g}{\sqrt{\sigma_g^2+" + p._print(eps) + "}}"
        return _affine_tex(p, core, gamma, beta)

    def run(self, x, groups, eps, gamma, beta):
        g = x.reshape(x.shape[0], int(groups), -1)
        mu = g.mean(-1, keepdim=True)
        var = ((g - mu) ** 2).mean(-1, keepdim=True)
        return _per_channel(((g - mu) / (var + eps) ** 0.5).reshape(x.shape), gamma, beta)


def group_norm(b: _B, x):
    m = b.module
    eps, eps_stmt = b.const("eps", r"\varepsilon", float(m.eps))
    gamma, beta = b.param("weight", r"\gamma"), b.param("bias", r"\beta")
    out = GroupNormOp(x, m.num_groups, eps, gamma if gamma is not None else sympy.S.One,
                      beta if beta is not None else sympy.S.Zero)
    return Leaf(out, [eps_stmt], inline=False,
                summary=msg("Normalize each of %(n)s channel groups over its channels and positions.", n=m.num_groups))


class MHAOp(ops.Op):
    """nn.MultiheadAttention without masks: both outputs, written out."""

    precedence = ops.ATOM

    def tex(self, p, q, k, v, w_in, b_in, w_out, b_out, heads, batch_first):
        return r"\operatorname{concat}_h\!\Big(\operatorname{softmax}\!\Big(\frac{Q_h K_h^{\mathsf T}}{\sqrt{d_h}}\Big)V_h\Big)\,W_O+b_O"

    def run(self, q, k, v, w_in, b_in, w_out, b_out, heads, batch_first):
        heads = int(heads)
        if not bool(batch_first):
            q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        E = q.shape[-1]
        wq, wk, wv = w_in.split(E)
        bq, bk, bv = (b_in.split(E) if not isinstance(b_in, (int, float)) else (0, 0, 0))
        B, T, S = q.shape[0], q.shape[1], k.shape[1]
        hs = E // heads
        Q = (q @ wq.T + bq).reshape(B, T, heads, hs).transpose(1, 2)
        K = (k @ wk.T + bk).reshape(B, S, heads, hs).transpose(1, 2)
        V = (v @ wv.T + bv).reshape(B, S, heads, hs).transpose(1, 2)
        s = Q @ K.transpose(-2, -1) / math.sqrt(hs)
        e = (s - s.amax(-1, keepdim=True)).exp()
        A = e / e.sum(-1, keepdim=True)
        o = (A @ V).transpose(1, 2).reshape(B, T, E) @ w_out.T
        if not isinstance(b_out, (int, float)):
            o = o + b_out
        if not bool(batch_first):
            o = o.transpose(0, 1)
        return o, A.mean(1)


def multihead_attention(b: _B, query, key=None, value=None):
    m = b.module
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise Unsupported(msg("MultiheadAttention with separate key/value sizes, bias_k or add_zero_attn"))
    key = query if key is None else key
    value = key if value is None else value
    w_in = b.prog.symbol(f"{b.path}.in_proj_weight", r"W_{\mathrm{in}}", Binding("param", b.path, "in_proj_weight"))
    b_in = b.param("in_proj_bias", r"b_{\mathrm{in}}")
    w_out = b.prog.symbol(f"{b.path}.out_proj.weight", "W_O", Binding("param", f"{b.path}.out_proj".strip("."), "weight"))
    b_out = (b.prog.symbol(f"{b.path}.out_proj.bias", "b_O", Binding("param", f"{b.path}.out_proj".strip("."), "bias"))
             if m.out_proj.bias is not None else sympy.S.Zero)
    out = MHAOp(query, key, value, w_in, b_in if b_in is not None else sympy.S.Zero, w_out, b_out,
                m.num_heads, sympy.true if m.batch_first else sympy.false)
    return Leaf(sympy.Tuple(ops.Item(out, 0), ops.Item(out, 1)), inline=False,
                summary=msg("Multi-head attention with %(heads)s heads of %(features)s features.",
                            heads=m.num_heads, features=m.head_dim))


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
    nn.MultiheadAttention: multihead_attention,
}


def builder_for(module: nn.Module):
    """The builder registered for the module's type or its nearest registered base class."""
    for cls in type(module).__mro__:
        if cls in REGISTRY:
            # a subclass with its own forward() computes something else: derive it from its code
            return REGISTRY[cls] if type(module).forward is cls.forward else None
    return None


def build(module: nn.Module, prog: Program, path: str, ins: list, attr: str | None = None) -> Leaf:
    fn = builder_for(module)
    if fn is None:
        raise Unsupported(msg("no equations for %(cls_name)s", cls_name=type(module).__name__))
    return fn(_B(module, prog, path, attr), *ins)


def _transformer_encoder_layer(b: _B, src):
    """nn.TransformerEncoderLayer without masks, in evaluation mode, post- or pre-norm."""
    m = b.module
    prog = b.prog
    act = m.activation
    act_name = {"relu": "ReLU", "gelu": "GELU"}.get(getattr(act, "__name__", ""), type(act).__name__)

    def child(attr):
        name = type(getattr(m, attr)).__name__
        return prog.symbol(f"{b.path}.{attr}@", rf"\operatorname{{{name}}}_{{\mathrm{{{attr.replace('_', chr(92) + ',')}}}}}",
                           Binding("module", f"{b.path}.{attr}".strip(".")))

    sa, n1, n2, l1, l2 = (child(a) for a in ("self_attn", "norm1", "norm2", "linear1", "linear2"))
    act_fn = ActivationOp if not isinstance(act, nn.Module) else None
    stmts = []

    def step(key, tex, expr):
        sym, stmt = b.step(key, tex, expr)
        stmts.append(stmt)
        return sym

    def attention(x):
        return ops.Item(ops.Call(sa, x, x, x), 0)

    def feed_forward(x):
        hidden = ops.Call(l1, x)
        acted = act_fn(hidden, ops.Label(act_name)) if act_fn else ops.Call(child("activation"), hidden)
        return ops.Call(l2, acted)

    if m.norm_first:
        a = step("a", "a", attention(ops.Call(n1, src)))
        x1 = step("x1", "x'", ops.Add(src, a))
        f = step("f", "f", feed_forward(ops.Call(n2, x1)))
        out = ops.Add(x1, f)
    else:
        a = step("a", "a", attention(src))
        x1 = step("x1", "x'", ops.Call(n1, ops.Add(src, a)))
        f = step("f", "f", feed_forward(x1))
        out = ops.Call(n2, ops.Add(x1, f))
    kw = {"heads": m.self_attn.num_heads, "activation": act_name}
    summary = (msg("A pre-norm transformer encoder layer: self-attention with %(heads)s heads, then a %(activation)s "
                   "feed-forward network, each with a residual connection.", **kw) if m.norm_first else
               msg("A post-norm transformer encoder layer: self-attention with %(heads)s heads, then a %(activation)s "
                   "feed-forward network, each with a residual connection.", **kw))
    return Leaf(out, stmts, inline=False, summary=summary)


class ActivationOp(ops.Op):
    """The activation a TransformerEncoderLayer holds as a function, not a module."""

    precedence = ops.ATOM

    def tex(self, p, x, name):
        return r"\operatorname{" + str(name) + r"}\!\left(" + p._print(x) + r"\right)"

    def run(self, x, name):
        import torch
        return torch.relu(x) if str(name) == "ReLU" else 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


REGISTRY[nn.TransformerEncoderLayer] = _transformer_encoder_layer
