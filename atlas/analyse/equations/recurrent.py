"""nn.RNN, nn.LSTM and nn.GRU: the cell's equations at one time step, and a scan that runs them over time.

The page prints the cell (i_t, f_t, g_t, o_t, c_t, h_t for an LSTM) for layer l; the check runs the very
same cell nodes at every step, for every layer and direction, with that layer's weights.
"""

from __future__ import annotations

import torch

from atlas.analyse.equations import ops_math as m
from atlas.analyse.equations import ops_tensor as t
from atlas.analyse.equations.leaves import Leaf, LeafBuilder, Unsupported
from atlas.analyse.equations.nodes import Evaluator, Node, Num, Sym
from atlas.analyse.equations.notation import THIN, Fenced, Glyph, Ident, Number, Ref, Script, applied, row, sub
from atlas.i18n import msg

GATES = {"LSTM": "ifgo", "GRU": "rzn", "RNN": "h"}


class Scan(Node):
    """Run the cell over time, layer after layer, in each direction; returns (output, final state)."""

    def notation(self, p):
        given = [a for a in (self.args[0], self.args[1], self.args[3]) if a is not None]
        return applied(p.print(self.args[2]), *(p.print(a) for a in given))

    def item_notation(self, p, i: int):
        """The outputs in the cell's terms: every h_t of the last layer, then the final state."""
        last = row(Ident("t"), Glyph("="), Ident("T"))
        if i == 0:
            return Script(Fenced("(", ")", Ref("h_t"), "big"), sub=row(Ident("t"), Glyph("="), Number(1)),
                          sup=Ident("T"))
        final = lambda key: sub(row(Ref(key), Glyph("big|")), last)    # noqa: E731
        if self.meta["kind"] == "LSTM":
            return Fenced("(", ")", row(final("h_t"), Glyph(","), THIN, final("c_t")), "big")
        return final("h_t")

    def run(self, ev, x, h0, mod, c0=None):
        """x, and the state the call gives (h0, and an LSTM's c0: [layers × directions, B, H]) or None."""
        kind, cell = self.meta["kind"], self.meta["cell"]
        unbatched = x.dim() == 2                # one sequence [T, in]: torch runs it as a batch of one
        batch_first = mod.batch_first and not unbatched
        if unbatched:
            x = x.unsqueeze(1)
            h0, c0 = (None if s is None else s.unsqueeze(1) for s in (h0, c0))
        if batch_first:
            x = x.transpose(0, 1)
        T, B = x.shape[0], x.shape[1]
        dirs = 2 if mod.bidirectional else 1
        H = mod.hidden_size
        inp = x
        finals_h, finals_c = [], []
        for layer in range(mod.num_layers):
            outs = []
            for d in range(dirs):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                env = dict(ev.env)
                for key, (name, i) in self.meta["params"].items():
                    w = getattr(mod, name + suffix)
                    part = w[i * H:(i + 1) * H]
                    env[key] = part.transpose(-2, -1) if part.dim() > 1 else part
                sub = Evaluator(env, ev.sizes, ev.dtype)
                h = x.new_zeros(B, H) if h0 is None else h0[layer * dirs + d]
                c = x.new_zeros(B, H) if c0 is None else c0[layer * dirs + d]
                steps = range(T - 1, -1, -1) if d else range(T)
                seq = [None] * T
                for s in steps:
                    sub.env["x_t"], sub.env["h_prev"], sub.env["c_prev"] = inp[s], h, c
                    for key, node in cell:
                        sub.env[key] = sub.value(node)
                    h = sub.env["h_t"]
                    c = sub.env.get("c_t", c)
                    seq[s] = h
                outs.append(torch.stack(seq))
                finals_h.append(h)
                finals_c.append(c)
            inp = torch.cat(outs, dim=-1)
        out = inp.transpose(0, 1) if batch_first else inp
        hn, cn = torch.stack(finals_h), torch.stack(finals_c)
        if unbatched:
            out, hn, cn = out.squeeze(1), hn.squeeze(1), cn.squeeze(1)
        return (out, (hn, cn)) if kind == "LSTM" else (out, hn)


def _at_t(letter: str):
    """A cell's value at time step t: h_t."""
    return Script(Ident(letter), sub=Ident("t"), tight="_")


def _of_layer(letter: str, gates: str):
    """A gate's weight or bias in layer l: W_{ii}^{(l)}."""
    return Script(Ident(letter), sub=Ident(gates), sup=row(Glyph("("), Ident("l"), Glyph(")")))


def recurrent(b: LeafBuilder, x, h0=None, c0=None, *rest):
    """The call's tensors as forward() is given them, an LSTM's state (h0, c0) as two: x, h0, c0."""
    mod = b.module
    kind = type(mod).__name__ if type(mod).__name__ in GATES else None
    if kind is None or getattr(mod, "proj_size", 0):
        raise Unsupported(msg("recurrent module %(cls_name)s with a projection", cls_name=type(mod).__name__))
    nonlinearity = getattr(mod, "nonlinearity", "tanh")
    prog = b.prog
    t_1 = row(Ident("t"), Glyph("−"), Number(1))
    loop_values = (("x_t", _at_t("x")), ("h_prev", Script(Ident("h"), sub=t_1)),
                   ("c_prev", Script(Ident("c"), sub=t_1)))
    for key, name in loop_values:
        prog.add(key, "loopvar", None, base=name)
    params = {}

    def gate_slice(tensor, kind_, gate_i, gate):
        """Gate `gate`'s rows of weight_{kind_}_l0 or bias_{kind_}_l0, as its own symbol (W_ii, b_hf)."""
        name = f"{tensor}_{kind_}"
        key = f"p.{b.path}.{name}.{gate}" if b.path else f"p.{name}.{gate}"
        rows = (gate_i * mod.hidden_size, (gate_i + 1) * mod.hidden_size)
        prog.add(key, "param", ("param", b.path, f"{name}_l0", tensor == "weight", rows),
                 base=_of_layer("W" if tensor == "weight" else "b", kind_[0] + gate))
        params[key] = (name, gate_i)
        return Sym(key)

    def affine(src, kind_, i, gate):
        out = t.MatMul(Sym(src), gate_slice("weight", kind_, i, gate))
        return m.Add(out, gate_slice("bias", kind_, i, gate)) if mod.bias else out

    def pre(i, gate):
        return m.Add(affine("x_t", "ih", i, gate), affine("h_prev", "hh", i, gate))

    cell = []

    def step(key, letter, node):
        prog.add(key, "loopvar", None, base=_at_t(letter))
        cell.append((key, node))
        return Sym(key)

    if kind == "LSTM":
        i_ = step("i_t", "i", m.Sigmoid(pre(0, "i")))
        f_ = step("f_t", "f", m.Sigmoid(pre(1, "f")))
        g_ = step("g_t", "g", m.Tanh(pre(2, "g")))
        o_ = step("o_t", "o", m.Sigmoid(pre(3, "o")))
        c_ = step("c_t", "c", m.Add(m.Mul(f_, Sym("c_prev")), m.Mul(i_, g_)))
        step("h_t", "h", m.Mul(o_, m.Tanh(c_)))
    elif kind == "GRU":
        r_ = step("r_t", "r", m.Sigmoid(pre(0, "r")))
        z_ = step("z_t", "z", m.Sigmoid(pre(1, "z")))
        n_ = step("n_t", "n", m.Tanh(m.Add(affine("x_t", "ih", 2, "n"), m.Mul(r_, affine("h_prev", "hh", 2, "n")))))
        step("h_t", "h", m.Add(m.Mul(m.Sub(Num(1), z_), n_), m.Mul(z_, Sym("h_prev"))))
    else:
        act = m.Tanh if nonlinearity == "tanh" else (lambda v: m.Max(v, Num(0)))
        step("h_t", "h", act(pre(0, "h")))
    key = f"m.{b.path}" if b.path else "m."
    prog.add(key, "module", ("module", b.path), base=type(mod).__name__)
    node = Scan(x, h0, Sym(key), c0 if kind == "LSTM" else None, kind=kind, cell=cell, params=params)
    summary = msg("A %(kind)s of %(layers)s layers with %(hidden)s hidden features, run over the positions in "
                  "order%(both)s, from %(start)s.", kind=kind, layers=mod.num_layers, hidden=mod.hidden_size,
                  both=msg(", in both directions") if mod.bidirectional else "",
                  start=msg("a zero state") if h0 is None else msg("the state the call gives"))
    return Leaf((t.Item(node, i=0), t.Item(node, i=1)), inline=False, summary=summary)
