"""One namer per page: every symbol gets a name no other symbol on the page has (SSA form).

Inputs are version 0. A value the code assigns gets the variable's name; a re-assignment of the same
name gets a prime (x, x', x''); the same name in another section gets that section's role as a subscript
(h_{mlp}). In a block that is one of N, the value it carries from block to block is u_n in and u_{n+1}
out. Identity comes from the symbol's key, never from its LaTeX.
"""

from __future__ import annotations

import re

from atlas.analyse.equations.nodes import Sym
from atlas.analyse.equations.ops_nn import Loop
from atlas.analyse.equations.program import Program
from atlas.analyse.equations.symbols import HINTS, parts, stream_of, subscripted, tex_name


def _param_tex(sym, siblings: dict) -> str:
    base = sym.base or "w"
    if base.startswith("\\") or "{" in base or re.fullmatch(r"[A-Z](_[A-Za-z0-9])?", base):
        tex = base              # TeX as it is (W_Q); B_mat would read as B with the subscript m, then "at"
    elif base in ("gain", "gamma", "g", "scale") and sym.shape is not None and len(sym.shape) == 1:
        tex = r"\gamma"
    elif base == "weight":
        tex = "W" if sym.shape is not None and len(sym.shape) >= 2 else r"\gamma"
    elif base == "bias":
        owner = sym.binding[1] if sym.binding else ""
        tex = r"\beta" if siblings.get(owner) == r"\gamma" else "b"
    else:
        tex = tex_name(base)
    return subscripted(tex, sym.role) if sym.role else tex


def name(prog: Program, draft=None, carried: str | None = None, reserved: tuple[str, ...] = ()) -> None:
    """Give every symbol of the program its page name (Symbol.tex) and stream. `reserved`: the page's size symbols
    (B, T): a value the code calls B (Mamba's input matrix) is B' beside the batch B."""
    used: dict[str, str] = {sym: f"dim.{sym}" for sym in reserved}     # tex -> key

    def claim(key: str, tex: str) -> str:
        n, candidate = 0, tex
        stem = "{" + tex + "}" if "^" in tex else tex
        while candidate in used and used[candidate] != key:
            n += 1
            candidate = stem + "'" * n if n <= 3 else "{" + tex + "}_{" + str(n) + "}"
        used[candidate] = key
        prog.symbols[key].tex = candidate
        return candidate

    syms = prog.symbols
    if any(n.meta.get("causal") is True for st in prog.steps for n in st.node.walk()):     # Attention, MHAOp
        prog.add("c.causal", "notation", base="M")
    # inputs: the parameter's name, or the variable a tuple's element is unpacked into
    for key, sym in syms.items():
        if sym.kind != "input":
            continue
        var = sym.base
        if "[" in var and draft is not None:
            value = draft.inputs.get(key)
            own = _forward_name(draft, value)
            var = own or var.replace("[", "_").replace("]", "")
        sym.stream = stream_of(var)
        claim(key, tex_name(var, avoid=reserved))
    # parameters: W, b, γ, β, with the owner's attribute as a subscript
    gains = {s.binding[1]: r"\gamma" for s in syms.values()
             if s.kind == "param" and s.base == "weight" and s.shape is not None and len(s.shape) == 1}
    param_tex = {key: _param_tex(s, gains) for key, s in syms.items() if s.kind == "param"}
    clashes = _clashes(param_tex)
    for key, tex in param_tex.items():
        sym = syms[key]
        if key in clashes and sym.binding and sym.binding[1]:
            tex = subscripted(tex.split("_{")[0] if sym.role else tex, sym.binding[1])
        claim(key, tex)
    # child modules: their class, with the attribute where two children share a class
    mod_tex = {key: r"\operatorname{" + (s.base or "f") + "}" for key, s in syms.items()
               if s.kind in ("module", "modules")}
    clashes = _clashes(mod_tex)
    for key, tex in mod_tex.items():
        sym = syms[key]
        claim(key, subscripted(tex, sym.role) if key in clashes and sym.role else tex)
    # constants stated once: ε, ε_2, ...
    consts = [k for k, s in syms.items() if s.kind == "const"]
    for i, key in enumerate(consts):
        base = tex_name(syms[key].base or "c")
        claim(key, base if i == 0 or base not in used else f"{base}_{{{i + 1}}}")
    for key, s in syms.items():
        if s.kind in ("loopvar", "notation"):
            claim(key, s.base)
    for key, s in syms.items():
        if s.kind == "value" and s.fixed:
            claim(key, s.fixed.replace("{x}", syms[s.fixed_input].tex if s.fixed_input in syms else "x"))
    # values, in the order the steps define them
    owner_of = {}
    for step in prog.steps:
        sym = syms[step.key]
        if sym.fixed or sym.kind != "value":
            continue
        tex = _value_tex(sym, draft, syms, reserved)
        sym.stem = tex.rstrip("'")
        if isinstance(step.node, Loop):
            tex = "{" + sym.stem + "}_{" + str(step.node.meta["count"]) + "}"
        earlier = used.get(tex)
        if earlier in syms and sym.section and syms[earlier].section != sym.section:
            tex = subscripted(tex, _role(sym.section, draft))
        owner_of[step.key] = claim(step.key, tex)
        sym.stream = stream_of(sym.base or "") if sym.base else None
    if carried is not None:
        _index_block(prog, carried, used)


def _forward_name(draft, value) -> str | None:
    if value is None:
        return None
    for frame, var, _line, _param in value.names:
        if frame in draft.naming:
            return var
    return None


def _value_tex(sym, draft, syms, reserved: tuple[str, ...] = ()) -> str:
    base = sym.base
    if base is not None and not base.lstrip("_")[:1].isalpha():
        base = None             # a container entry's index (the output of Sequential's `0`) is no name: 0 = W x
    if base is None:
        if sym.output:
            return "y"
        if sym.hint in HINTS:
            return HINTS[sym.hint]
        return "z"
    stem, accent, primes = parts(base)
    if draft is not None and sym.section in draft.section_params and stem in draft.section_params[sym.section]:
        vid = draft.section_params[sym.section][stem]
        node = draft.env.get(vid)
        key = node.key if isinstance(node, Sym) else getattr(draft, "key_of", {}).get(id(node))
        if key in syms and syms[key].tex and (accent or primes):
            return tex_name(base, stem_tex=syms[key].tex)
    return tex_name(base, avoid=reserved)


def _role(section: str, draft) -> str:
    attr = getattr(draft, "section_attr", {}).get(section) if draft is not None else None
    return attr or section.split()[0].lower()


def _clashes(texts: dict) -> set:
    seen: dict[str, list] = {}
    for key, tex in texts.items():
        seen.setdefault(tex, []).append(key)
    return {k for keys in seen.values() if len(keys) > 1 for k in keys}


def _index_block(prog: Program, carried: str, used: dict) -> None:
    """One of N blocks: the carried value is u_n on the way in and u_{n+1} on the way out."""
    syms = prog.symbols
    base = syms[carried].tex
    if base is None or "_" in base or "{" in base:
        return
    renames = {carried: base + "_n"}
    accented = re.compile(r"^\\(bar|hat|tilde)\{" + re.escape(base) + r"'*\}$")
    for step in prog.steps:
        s = syms[step.key]
        tex = s.tex or ""
        if (tex.startswith(base) and set(tex[len(base):]) <= {"'"} and tex != base) or accented.match(tex):
            renames[step.key] = tex + "_n"
    outs = [s for s in prog.steps if syms[s.key].output]
    if len(outs) == 1:
        renames[outs[0].key] = base + "_{n+1}"
    new = {k: v for k, v in renames.items()}
    if any(t in used and used[t] not in new for t in new.values()):
        return
    for key, tex in new.items():
        used.pop(syms[key].tex, None)
        syms[key].tex = tex
        used[tex] = key
