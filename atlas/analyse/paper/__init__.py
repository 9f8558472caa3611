"""The paper view: a component's verified op program rewritten into the notation a paper prints.

Rules rewrite the op tree bottom-up, each an identity of the mathematics: casts and layout views that change no
value drop out (`identities`, `tokens`, `grid`), and recognized idioms take the place of the operations that compute
them (`norms`, `activations`, `rope`, `fused`, `attention`, `mlp`, `moe`, `blocks`); namers then give the symbols
their roles (W_Q, γ_attn, Δ_mlp). An idiom is recognized by the structure of the ops and the values
they compute with, never by a class or a model's name; each keeps its parameters and the line of code they come
from. Every idiom's node has an evaluator written from its mathematics, and the rewritten program is checked against
forward() like the op program: a rewrite that does not reproduce forward() is no paper view. What no rule knows
stays as the op steps.
"""
