"""One namer per page: every symbol gets a name no other symbol on the page has (SSA form).

Inputs are version 0. A value the code assigns gets the variable's name; a re-assignment of the same
name gets a prime (x, x', x''); the same name in another section gets that section's role as a subscript
(h_{mlp}). In a block that is one of N, the value it carries from block to block is u_n in and u_{n+1}
out. Identity comes from the symbol's key, never from its name. Names are formulas (atlas.document.math_tree).
"""

from __future__ import annotations

import re

from atlas.analyse.equations.nodes import Sym
from atlas.analyse.equations.notation import Glyph, Group, Ident, Number, Row, Script, op, row
from atlas.analyse.equations.ops_nn import Loop
from atlas.analyse.equations.program import Program
from atlas.analyse.equations.symbols import (
    HINTS,
    PRIME,
    has_superscript,
    name_of,
    parts,
    primed,
    stream_of,
    subscripted,
    unprimed,
)
from atlas.document.math_tree import Accent, Node

GAMMA, BETA = Ident("γ"), Ident("β")


def _param_name(sym, siblings: dict) -> Node:
    base = sym.base or "w"
    if isinstance(base, Node):
        name = base             # a notation given where the parameter was made (γ, W_Q, W_{ii}^{(l)})
    elif re.fullmatch(r"[A-Z](_[A-Za-z0-9])?", base):
        # a capital with a subscript, as it is (W_Q); B_mat would read as B with the subscript m, then "at"
        name = Ident(base) if len(base) == 1 else Script(Ident(base[0]), sub=Ident(base[2]), tight="_")
    elif base in ("gain", "gamma", "g", "scale") and sym.shape is not None and len(sym.shape) == 1:
        name = GAMMA
    elif base == "weight":
        name = Ident("W") if sym.shape is not None and len(sym.shape) >= 2 else GAMMA
    elif base == "bias":
        owner = sym.binding[1] if sym.binding else ""
        name = BETA if siblings.get(owner) == GAMMA else Ident("b")
    else:
        name = name_of(base)
    return subscripted(name, sym.role) if sym.role else name


def name(prog: Program, draft=None, carried: str | None = None, reserved: tuple[str, ...] = ()) -> None:
    """Give every symbol of the program its page name (Symbol.name) and stream. `reserved`: the page's size symbols
    (B, T): a value the code calls B (Mamba's input matrix) is B' beside the batch B."""
    used: dict = {Ident(sym): f"dim.{sym}" for sym in reserved}     # name -> key

    def claim(key: str, name_: Node) -> Node:
        n, candidate = 0, name_
        stem = Group(name_) if has_superscript(name_) else name_
        while candidate in used and used[candidate] != key:
            n += 1
            candidate = primed(stem, n) if n <= 3 else Script(Group(name_), sub=Number(n))
        used[candidate] = key
        prog.symbols[key].name = candidate
        return candidate

    syms = prog.symbols
    if any(n.meta.get("causal") is True for st in prog.steps for n in st.node.walk()):     # Attention, MHAOp
        prog.add("c.causal", "notation", base=Ident("M"))
    # inputs: the parameter's name, or the variable a tuple's element is unpacked into
    for key, sym in syms.items():
        if sym.kind != "input":
            continue
        if sym.given is not None:
            claim(key, sym.given)
            continue
        var = sym.base
        if "[" in var and draft is not None:
            value = draft.inputs.get(key)
            own = _forward_name(draft, value)
            var = own or var.replace("[", "_").replace("]", "")
        sym.stream = stream_of(var)
        claim(key, name_of(var, avoid=reserved))
    # parameters: W, b, γ, β, with the owner's attribute as a subscript
    gains = {s.binding[1]: GAMMA for s in syms.values()
             if s.kind == "param" and s.base == "weight" and s.shape is not None and len(s.shape) == 1}
    param_names = {key: s.given if s.given is not None else _param_name(s, gains)
                   for key, s in syms.items() if s.kind == "param"}
    clashes = _clashes(param_names)
    for key, name_ in param_names.items():
        sym = syms[key]
        if key in clashes and sym.binding and sym.binding[1] and sym.given is None:
            name_ = subscripted(_without_role(name_) if sym.role else name_, sym.binding[1])
        claim(key, name_)
    # child modules: their class, with the attribute where two children share a class
    mod_names = {key: s.given if s.given is not None else op(s.base or "f")
                 for key, s in syms.items() if s.kind in ("module", "modules")}
    clashes = _clashes(mod_names)
    for key, name_ in mod_names.items():
        sym = syms[key]
        claim(key, subscripted(name_, sym.role) if key in clashes and sym.role else name_)
    # constants stated once: ε, ε_2, ...
    consts = [k for k, s in syms.items() if s.kind == "const"]
    for i, key in enumerate(consts):
        base = name_of(syms[key].base or "c")
        claim(key, base if i == 0 or base not in used else Script(base, sub=Number(i + 1)))
    for key, s in syms.items():
        if s.kind in ("loopvar", "notation"):
            claim(key, s.base)
    for key, s in syms.items():
        if s.kind == "value" and s.fixed:
            claim(key, s.fixed(syms[s.fixed_input].name if s.fixed_input in syms else Ident("x")))
    # values, in the order the steps define them
    for step in prog.steps:
        sym = syms[step.key]
        if sym.fixed or sym.kind != "value":
            continue
        name_ = sym.given if sym.given is not None else _value_name(sym, draft, syms, reserved)
        sym.stem = unprimed(name_)
        if isinstance(step.node, Loop):
            name_ = Script(Group(sym.stem), sub=Number(step.node.meta["count"]))
        earlier = used.get(name_)
        if earlier in syms and sym.section and syms[earlier].section != sym.section:
            name_ = subscripted(name_, _role(sym.section, draft))
        claim(step.key, name_)
        sym.stream = stream_of(sym.base or "") if sym.base else None
    if carried is not None:
        _index_block(prog, carried, used)


def _without_role(name_: Node) -> Node:
    """A parameter's name without the subscript its owner's role gave it."""
    if isinstance(name_, Script) and name_.sub is not None:
        base = name_.base
        return base.body if isinstance(base, Group) else base
    return name_


def _forward_name(draft, value) -> str | None:
    if value is None:
        return None
    for frame, var, _line, _param in value.names:
        if frame in draft.naming:
            return var
    return None


def _value_name(sym, draft, syms, reserved: tuple[str, ...] = ()) -> Node:
    base = sym.base
    if base is not None and not base.lstrip("_")[:1].isalpha():
        base = None             # a container entry's index (the output of Sequential's `0`) is no name: 0 = W x
    if base is None:
        if sym.output:
            return Ident("y")
        if sym.hint in HINTS:
            return HINTS[sym.hint]
        return Ident("z")
    stem, accent, primes = parts(base)
    if draft is not None and sym.section in draft.section_params and stem in draft.section_params[sym.section]:
        vid = draft.section_params[sym.section][stem]
        node = draft.env.get(vid)
        key = node.key if isinstance(node, Sym) else getattr(draft, "key_of", {}).get(id(node))
        if key in syms and syms[key].name is not None and (accent or primes):
            return name_of(base, stem=syms[key].name)
    return name_of(base, avoid=reserved)


def _role(section: str, draft) -> str:
    attr = getattr(draft, "section_attr", {}).get(section) if draft is not None else None
    return attr or section.split()[0].lower()


def _clashes(names: dict) -> set:
    seen: dict = {}
    for key, name_ in names.items():
        seen.setdefault(name_, []).append(key)
    return {k for keys in seen.values() if len(keys) > 1 for k in keys}


def _index_block(prog: Program, carried: str, used: dict) -> None:
    """One of N blocks: the carried value is u_n on the way in and u_{n+1} on the way out."""
    syms = prog.symbols
    base = syms[carried].name
    if base is None or not _plain(base):
        return
    n = Ident("n")
    renames = {carried: Script(base, sub=n, tight="_")}
    for step in prog.steps:
        name_ = syms[step.key].name
        if name_ is not None and (_primed_from(name_, base) or _accented(name_, base)):
            renames[step.key] = Script(name_, sub=n, tight="_")
    outs = [s for s in prog.steps if syms[s.key].output]
    if len(outs) == 1:
        renames[outs[0].key] = Script(base, sub=row(n, Glyph("+"), Number(1)))
    if any(t in used and used[t] not in renames for t in renames.values()):
        return
    for key, name_ in renames.items():
        used.pop(syms[key].name, None)
        syms[key].name = name_
        used[name_] = key


def _items(name_: Node) -> tuple:
    return name_.items if isinstance(name_, Row) else (name_,)


def _plain(name_: Node) -> bool:
    """A letter, with primes: no script, group, accent or word a subscript would have to go around."""
    return all(isinstance(i, Ident) or i == PRIME for i in _items(name_))


def _primed_from(name_: Node, base: Node) -> bool:
    """`base` with one prime or more after it."""
    items, head = _items(name_), _items(base)
    rest = items[len(head):]
    return items[:len(head)] == head and bool(rest) and all(i == PRIME for i in rest)


def _accented(name_: Node, base: Node) -> bool:
    """`base`, primed or not, under a bar, a hat or a tilde."""
    if not isinstance(name_, Accent) or name_.mark not in ("bar", "hat", "tilde"):
        return False
    return name_.body == base or _primed_from(name_.body, base)
