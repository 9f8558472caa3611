"""What a forward costs, read off the same recorded calls the equations come from.

FLOPs: every contraction (linear, matmul, bmm, addmm, mv, dot, convolution, attention, einsum) costs 2 · ∏(output
dims) · (contracted dim), a transposed convolution 2 · ∏(input dims) · (C_out/groups) · ∏(kernel): a multiply
and an add per term, so these are FLOPs, not MACs. Elementwise operations, norms and softmax are not counted;
their names are listed. Where attention is causal (`is_causal`), the count with the T(T+1)/2 query-key pairs a
causal kernel computes stands beside the dense one.

Activation memory: the bytes autograd saves for the backward pass, recorded as the forward runs (a
saved-tensors hook), each storage counted once, weights excluded; dropout masks, which evaluation mode does
not draw, at one byte per element, as training draws them.
"""

from __future__ import annotations

import sympy
import torch

from atlas.extract.trace.structures import Call, OpEvent, Ref

LAYOUT = {"view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "expand", "expand_as", "contiguous",
          "clone", "detach", "to", "float", "double", "half", "bfloat16", "long", "int", "bool", "type_as",
          "__getitem__", "__setitem__", "split", "chunk", "unbind", "cat", "concat", "stack", "flatten", "narrow",
          "repeat", "repeat_interleave", "arange", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
          "empty", "empty_like", "tensor", "t", "T", "mT", "new_ones", "new_zeros", "new_full", "new_empty",
          "item", "dropout", "embedding", "index_select", "gather", "masked_fill", "where", "tril", "triu", "pad",
          "unfold", "roll", "flip", "select", "slice", "as_strided", "scatter", "sort", "argsort", "topk",
          "size", "stride", "dim", "numel", "sym_size", "sym_stride", "sym_numel"}   # queries TorchScript's code makes


def _numel(shape) -> object:
    out = sympy.Integer(1)
    for s in shape:
        out = out * s
    return out


def _shape(x):
    return x.value.shape if isinstance(x, Ref) and x.value.shape is not None else None


def _pairs(n):
    """The query-key pairs of a causal attention over n positions, n(n+1)/2, exact where n is a Python int (a pinned
    size: n * (n + 1) / 2 would be a float, and so would every causal count after it)."""
    return sympy.Integer(n) * (n + 1) / 2 if isinstance(n, int) else n * (n + 1) / 2


def _arg(ev: OpEvent, i: int, key: str):
    if i < len(ev.args):
        return ev.args[i]
    return ev.kwargs.get(key)


def _out(ev: OpEvent):
    out = ev.out
    while isinstance(out, (tuple, list)) and out:
        out = out[0]
    return _shape(out)


def op_name(ev: OpEvent) -> str:
    """A recorded call's name as the counts know it: "Tensor.matmul" is "matmul", and an aten operator that code
    run by TorchScript's interpreter called ("addmm.default") is its packet's name ("addmm")."""
    name = ev.name.removeprefix("Tensor.")
    return name.split(".", 1)[0] if isinstance(ev.func, torch._ops.OpOverload) else name


def op_flops(ev: OpEvent):
    """(dense FLOPs, causal FLOPs or None) of one recorded call; None where it is not a contraction."""
    name = op_name(ev)
    out = _out(ev)
    if name in ("linear",):
        w = _shape(_arg(ev, 1, "weight"))
        return (2 * _numel(out) * w[-1], None) if out is not None and w is not None else None
    # the left operand, whose last dim is the one summed over, by position or by its name in torch's signature
    left = {"matmul": (0, "input"), "__matmul__": (0, "self"), "__rmatmul__": (1, "other"), "mm": (0, "input"),
            "bmm": (0, "input"), "_grouped_mm": (0, "mat_a"), "addmm": (1, "mat1"), "baddbmm": (1, "batch1"),
            "addbmm": (1, "batch1"), "mv": (0, "input"), "dot": (0, "input"), "vdot": (0, "input")}.get(name)
    if left is not None:                              # _grouped_mm: mixture-of-experts, each token through its experts
        a = _shape(_arg(ev, *left))
        return (2 * _numel(out) * a[-1], None) if out is not None and a is not None else None
    if name in ("conv1d", "conv2d", "conv3d"):         # weight (C_out, C_in / groups, kernel...)
        w = _shape(_arg(ev, 1, "weight"))
        return (2 * _numel(out) * _numel(w[1:]), None) if out is not None and w is not None else None
    if name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        # weight (C_in, C_out / groups, kernel...): each input element meets C_out / groups × kernel weights
        x, w = _shape(_arg(ev, 0, "input")), _shape(_arg(ev, 1, "weight"))
        return (2 * _numel(x) * _numel(w[1:]), None) if x is not None and w is not None else None
    if name == "scaled_dot_product_attention":
        q, k, v = (_shape(_arg(ev, i, key)) for i, key in ((0, "query"), (1, "key"), (2, "value")))
        if q is None or k is None or v is None:
            return None
        heads, s_q, d = q[-3], q[-2], q[-1]
        batch = _numel(q[:-3])
        s_k, d_v = k[-2], v[-1]
        dense = 2 * batch * heads * s_q * s_k * (d + d_v)
        causal = None
        if bool(_arg(ev, 5, "is_causal")) and sympy.simplify(s_q - s_k) == 0:
            causal = 2 * batch * heads * _pairs(s_q) * (d + d_v)
        return dense, causal
    if name == "einsum":
        return _einsum(ev)
    if name == "multi_head_attention_forward":
        return _multi_head_attention(ev, out)
    if name in _RNNS:
        return _recurrent(ev)
    if name in _CELLS:
        return _cell(ev)
    return None


_CELLS = ("lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")


def _cell(ev: OpEvent):
    """One step of an RNN cell (nn.LSTMCell, nn.GRUCell, nn.RNNCell): its input-hidden and hidden-hidden weights
    (the third and fourth arguments) each multiply one vector per sequence: 2 · B · their sizes. Input (B, in), or
    one sequence (in)."""
    x = _shape(_arg(ev, 0, "input"))
    weights = [_shape(_arg(ev, i, key)) for i, key in ((2, "w_ih"), (3, "w_hh"))]
    if x is None or any(w is None or len(w) != 2 for w in weights):
        return None
    return 2 * _numel(x[:-1]) * sympy.Add(*(_numel(w) for w in weights)), None


_RNNS = ("lstm", "gru", "rnn_tanh", "rnn_relu")


def _recurrent(ev: OpEvent):
    """torch's fused RNN kernels (nn.LSTM, nn.GRU, nn.RNN): every weight matrix (input-hidden, hidden-hidden and
    LSTM's projection, each layer and direction) multiplies one vector per position and sequence: 2 · (T·B) · its
    size. Inputs (T, B, in), (B, T, in) or one sequence (T, in); the weights are the third argument."""
    x, params = _shape(_arg(ev, 0, "input")), _arg(ev, 2, "params")
    if x is None or not isinstance(params, (list, tuple)) or len(x) < 2:
        return None
    shapes = [_shape(p) for p in params]
    if any(s is None for s in shapes):
        return None
    return 2 * _numel(x[:-1]) * sympy.Add(*(_numel(s) for s in shapes if len(s) == 2)), None


def _multi_head_attention(ev: OpEvent, out):
    """torch.nn.MultiheadAttention's functional form, one call for the whole layer: the q, k, v projections, q kᵀ
    and the weights times v over the heads, the output projection. Queries (L, N, E) or (L, E), keys (S, N, kdim),
    values (S, N, vdim); the output projection to as many features as its weight has rows; bias_k and add_zero_attn
    each add a key after the projections."""
    q, k, v = (_shape(_arg(ev, i, key)) for i, key in ((0, "query"), (1, "key"), (2, "value")))
    e = _arg(ev, 3, "embed_dim_to_check")
    if q is None or k is None or v is None or not isinstance(e, int) or \
            _arg(ev, 21, "static_k") is not None or _arg(ev, 22, "static_v") is not None:
        return None
    n = q[1] if len(q) == 3 else 1
    L, S = q[0], k[0]
    keys = S + (1 if _arg(ev, 7, "bias_k") is not None else 0) + (1 if _arg(ev, 9, "add_zero_attn") else 0)
    out_w = _shape(_arg(ev, 11, "out_proj_weight"))
    out_dim = out_w[0] if out_w is not None and len(out_w) == 2 else e      # open_clip's pool projects 512 -> 32
    projections = 2 * n * (L * e * e + S * k[-1] * e + S * v[-1] * e + L * e * out_dim)
    dense = projections + 4 * n * L * keys * e
    causal = None
    if bool(_arg(ev, 24, "is_causal")) and sympy.simplify(L - keys) == 0:
        causal = projections + 4 * n * _pairs(L) * e
    return dense, causal


def _einsum(ev: OpEvent):
    """2 · the product of every index's size, for a contraction (one output, at least one summed index)."""
    spec = ev.args[0] if isinstance(ev.args[0], str) else None
    operands = ev.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = operands[0]
    if spec is None or "->" not in spec:
        return None
    ins, out = spec.replace(" ", "").split("->")
    sizes, batch = {}, 0
    for letters, op in zip(ins.split(","), operands):
        shape = _shape(op)
        names = _indices(letters, len(shape)) if shape is not None else None
        if names is None or len(shape) != len(names):
            return None
        batch = max(batch, len(names) - len(letters.replace("...", "")))
        for name, size in zip(names, shape):
            if sizes.get(name, 1) == 1:     # a dim broadcast under "...": the size that is not 1
                sizes[name] = size
    kept = _indices(out, len(out.replace("...", "")) + batch)
    if kept is None or not set(sizes) - set(kept):
        return None
    return 2 * _numel(sizes.values()), None


def _indices(letters: str, rank: int) -> list[str] | None:
    """An operand's index names, "..." spelled out as the dims it stands for, named from the right so that
    broadcast dims line up ("...qhd" of a rank-5 tensor: …2, …1, q, h, d)."""
    if "..." not in letters:
        return list(letters)
    head, tail = letters.split("...")
    n = rank - len(head) - len(tail)
    return None if n < 0 else [*head, *(f"…{n - i}" for i in range(n)), *tail]


MEASURES = {"bytes": lambda nbytes, elements: nbytes,                 # as the model's dtype holds them
            "elements": lambda nbytes, elements: elements,           # floating elements: bytes in any dtype
            "fixed": lambda nbytes, elements: nbytes if elements == 0 else 0}   # integers, masks: their own bytes


def activation_bytes(call: Call, saved: dict, first_call_for, memo: dict | None = None,
                     measure: str = "bytes") -> object:
    """Bytes saved for the backward pass by one call and everything under it, each storage once; or, by `measure`,
    the floating elements of them ("elements") or the bytes of the rest, integers and masks ("fixed").

    A repeated entry that was not run counts its first entry's bytes (its own copies of the same shapes): each
    first entry's total is summed once and multiplied by how many entries repeat it, so a deep stack's repeated
    layers are walked once, not once each. `memo` (id of a first call, measure -> its total) may be shared."""
    of = MEASURES[measure]
    seen: dict = {}
    repeats: dict = {}                                   # id(first call) -> [first call, entries not run]
    memo = {} if memo is None else memo

    def walk(c: Call):
        if c.skipped:
            first = first_call_for(c.path)
            if first is not None and first is not c:
                repeats.setdefault(id(first), [first, 0])[1] += 1
            return
        for key, nbytes, elements in saved.get(id(c), ()):
            seen.setdefault(key, of(nbytes, elements))
        for ev in c.events:
            if isinstance(ev, Call):
                walk(ev)

    walk(call)
    terms = list(seen.values())
    for key, (first, count) in repeats.items():
        if (key, measure) not in memo:
            memo[key, measure] = sympy.Add(*_subtree(first, saved, first_call_for, of).values())
        terms.append(count * memo[key, measure])
    return sympy.expand(sympy.Add(sympy.Integer(0), *terms))


def _subtree(call: Call, saved: dict, first_call_for, of) -> dict:
    out: dict = {}
    for key, nbytes, elements in saved.get(id(call), ()):
        out.setdefault(key, of(nbytes, elements))
    for ev in call.events:
        if isinstance(ev, Call) and not ev.skipped:
            out.update(_subtree(ev, saved, first_call_for, of))
    return out


class Costs:
    """Per call: FLOPs (dense, causal), the op names not counted; per call and below, with repeated calls
    that were not run counted as their first instance."""

    def __init__(self, first_call_for) -> None:
        self.first_call_for = first_call_for        # module path of a skipped entry -> the first entry's call
        self._memo: dict[int, tuple] = {}

    def of(self, call: Call) -> tuple:
        """(flops, causal flops or None, uncounted op names) of one call and everything under it."""
        if id(call) in self._memo:
            return self._memo[id(call)]
        if call.skipped:
            first = self.first_call_for(call.path)
            result = self.of(first) if first is not None and first is not call else (sympy.Integer(0), None, set())
            self._memo[id(call)] = result
            return result
        # the terms are summed once at the end: adding them one by one would rebuild the sum at every step, a cost
        # that grows with the depth of a stack of repeated layers
        dense, causal, any_causal, uncounted = [], [], False, set()
        for ev in call.events:
            if isinstance(ev, Call):
                d, c, u = self.of(ev)
                uncounted |= u
            else:
                counted = op_flops(ev)
                if counted is None:
                    name = op_name(ev)
                    if name not in LAYOUT and not name.startswith("_"):
                        uncounted.add(name.strip("_").removeprefix("r") if name.startswith("__r") else name.strip("_"))
                    continue
                d, c = counted
            dense.append(d)
            causal.append(c if c is not None else d)
            any_causal = any_causal or c is not None
        result = (sympy.expand(sympy.Add(*dense)), sympy.expand(sympy.Add(*causal)) if any_causal else None,
                  uncounted)
        self._memo[id(call)] = result
        return result
