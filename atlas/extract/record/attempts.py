"""The symbolic runs a recording tries: which example inputs, at which sizes, in which dtype.

`Attempts` holds what every attempt needs (the model, the choices of inputs and where they came from, the sizes
--dim fixes or bounds, the dim vocabulary, the groups of repeated list entries a run may skip) and makes the
attempts the plan (atlas.extract.record.plan) lists. An `Attempt` is what one of them gives: the run, the choice it
was made with, and the notes it leaves for the page and for stderr.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace

import torch
from torch import nn

from atlas.document import ModelDoc
from atlas.document import input_specs as inputs_mod
from atlas.errors import AtlasError
from atlas.extract.record.set_apart import repeat_groups
from atlas.extract.trace import runs
from atlas.extract.trace.size_values import Required, stops_at
from atlas.i18n import Text, msg, render
from atlas.load.hooks import hooks_of

HINTS = (2, 6, 5, 7, 9)             # the symbolic run's sizes for declared inputs: distinct, never 0 or 1


@dataclass
class Choice:
    """One set of example inputs to try, and why."""

    texts: tuple[str, ...]
    hints: dict
    sources: tuple = ()             # (input text, the sentence saying where it came from)


@dataclass
class Attempt:
    """The first choice whose symbolic run worked, or the last one tried."""

    trace: object = None
    choice: Choice | None = None
    specs: list = field(default_factory=list)
    symbols: list = field(default_factory=list)
    notes: list = field(default_factory=list)       # Text: retries, and the sizes the code asked for
    first_error: str | None = None
    disc: object = None             # the discovery its choice came from (atlas.extract.discover.discovery)

    @property
    def ok(self) -> bool:
        return self.trace is not None and self.trace.error is None and self.trace.root is not None


class Attempts:
    def __init__(self, model: nn.Module, doc: ModelDoc, declared, fixed: dict | None, bounds: dict | None) -> None:
        self.model, self.doc = model, doc
        self.fixed, self.bounds = dict(fixed or {}), dict(bounds or {})
        self.hooks = hooks_of(model)
        self.vocab = inputs_mod.vocabulary(self.hooks.dims, self.hooks.fixed_dims)
        self.repeats = repeat_groups(doc)
        self.choices: list[Choice] = []
        self.disc = None
        self.reason: Text | None = None             # why there is no choice: no input discovery could size
        texts = tuple(declared or self.hooks.inputs or ())
        if texts:
            self.choices = [Choice(texts, {})]
            self.bounds = {**_smallest_sizes(model, texts), **self.bounds}
            return
        from atlas.extract.discover.discovery import discover
        self.disc = discover(model)
        if self.disc.unresolved:
            name, why = self.disc.unresolved[0]
            self.reason = msg("no example input for %(name)s: %(why)s", name="`" + name + "`", why=why)
        else:
            self.choices = choices_of(self.disc)

    def attempt(self, choices: list[Choice], disc) -> Attempt:
        """The first choice whose symbolic run works; where none does, the first that works again at the sizes its
        code stopped it for not having (after every choice: a rank-2 input whose features meet a Linear as its
        batch "needs" B = 8, where the next choice, [B, T, 8], is the input)."""
        t = Attempt(disc=disc)
        refused, errors = [], {}
        for choice in choices:
            specs, symbols = self.resolved(choice.texts, self.fixed)
            trace = self.symbolic(specs, self.hints(symbols, choice.hints, self.bounds), disc, t.notes)
            errors[choice.texts] = trace.error
            if trace.error is not None and trace.refused:
                refused.append((choice, trace))
            if _kept(t, trace, choice, specs, symbols):
                return t
        for choice, trace in refused:
            again = self.at_required_sizes(choice, trace)
            if again is not None:
                trace, choice, specs, symbols, notes = again
                t.notes.extend(notes)
                if _kept(t, trace, choice, specs, symbols):
                    return t
        again, stopped = self.at_stated_size(choices, errors)
        if again is not None:
            trace, choice, specs, symbols, *notes = again
            t.notes.extend(notes)
            _kept(t, trace, choice, specs, symbols)
        elif stopped is not None:       # at the stated size the code went on to another line: the error to act on
            t.first_error = stopped
        return t

    def at_stated_size(self, choices: list[Choice], errors: dict):
        """The first choice with an image (H and W) that runs again at the image size the model states, where no
        size of the choices ran: a DiT unpatchifies with `height = width = int(seq ** 0.5)`, so only a square image
        runs, and its config's sample_size is one; at that size, the sizes the code asks for besides (open_clip's
        text at its context length). ((trace, choice, specs, symbols, *notes) or None, the error of a
        run at that size that stopped at another line than at the choice's own sizes, or None)."""
        from atlas.errors import site_of
        from atlas.extract.discover.conventions import stated_image
        size, said = stated_image(self.model)
        if size is None or "H" in self.fixed or "W" in self.fixed:
            return None, None
        stopped = None
        for choice in choices:
            if not {"H", "W"} <= {d for x in choice.texts for d in inputs_mod.parse_input(x).dims}:
                continue
            pinned = {**self.fixed, "H": size[0], "W": size[1]}
            specs, symbols = self.resolved(choice.texts, pinned)
            trace = runs.symbolic(self.model, specs, self.hints(symbols, choice.hints, self.bounds), self.repeats)
            if trace.error is None and trace.root is not None:
                note = msg("H = %(h)s, W = %(w)s, the image size %(said)s states: at other sizes the code stops "
                           "(%(error)s)", h=size[0], w=size[1], said=said, error=errors.get(choice.texts) or "")
                texts = tuple(input_text(s) for s in specs)
                return (trace, replace(choice, texts=texts), specs, symbols, note), None
            if trace.error is not None and trace.refused:     # at that size, another size the code asks for
                again = self.at_required_sizes(replace(choice, texts=tuple(input_text(s) for s in specs)), trace)
                if again is not None:
                    note = msg("H = %(h)s, W = %(w)s, the image size %(said)s states: at other sizes the code stops "
                               "(%(error)s)", h=size[0], w=size[1], said=said, error=errors.get(choice.texts) or "")
                    return (*again[:4], note, *again[4]), None
            if stopped is None and trace.error and site_of(trace.error) != site_of(errors.get(choice.texts) or ""):
                stopped = trace.error
        return None, stopped

    def symbolic(self, specs, hints: dict, disc, notes: list):
        """One symbolic run; where it fails for a dtype reason, again in the dtypes the model declares (then
        bfloat16)."""
        trace = runs.symbolic(self.model, specs, hints, self.repeats)
        if trace.error is None:
            return trace
        from atlas.extract.record.escalation import dtype_error
        if dtype_error(trace.error):
            for name in (disc.retry_dtypes if disc else ("bfloat16",)):
                with _in_dtype(self.model, getattr(torch, name)):
                    retry = runs.symbolic(self.model, specs, hints, self.repeats)
                if retry.error is None:
                    notes.append(msg("recorded in %(dtype)s: in the model's own dtype the forward failed "
                                     "(%(error)s)", dtype=name, error=trace.error))
                    retry.dtype = name
                    return retry
        return trace

    def at_required_sizes(self, choice: Choice, trace, tries: int = 6):
        """The run again at the sizes the code stopped it for not having: `assert h == self.image_size` failed at
        H = 40 (a ViT's fixed 224 x 224), at the line the run stopped on. W's assert comes once H passes: up to
        `tries` runs. A size the code needs a multiple of a number (MaxViT's windows) is the run's size there, and
        a maximum or minimum it raised past (SD3's `pos_embed_max_size`) a bound on the symbol: both stay symbols,
        and are pinned only where the run fails so. A multiple asked again further on (MaxViT's next stage, whose
        map is half the size) takes the place of the one before. (trace, choice with the sizes put in, specs,
        symbols, notes), or None where no run gets past."""
        sizes: dict[str, Required] = {}
        stopped = trace
        for _ in range(tries):
            new = [r for r in stopped.refused if r.name not in self.fixed and stops_at(r, stopped.error)
                   and (r.name not in sizes or _further(sizes[r.name], r))]
            if not new:
                break
            for r in new:
                sizes[r.name] = r._replace(hint=sizes[r.name].hint) if r.name in sizes else r
            stopped, found = self._at(choice, sizes, pin=False)
            if found is not None:
                return found
        if any(r.kind != "equal" for r in sizes.values()):     # kept symbols the code did not run with: pinned
            return self._at(choice, sizes, pin=True)[1]
        return None

    def _at(self, choice: Choice, sizes: dict, pin: bool):
        """(the run at the sizes asked for, and where it worked the answer of at_required_sizes, else None)."""
        pinned = {**self.fixed, **{n: r.size for n, r in sizes.items() if pin or r.kind == "equal"}}
        hints = dict(choice.hints)
        for n, r in sizes.items():         # distinct sizes, each a multiple as asked: MaxViT's H = 64, W = 96
            if r.kind == "multiple":
                hints[n] = r.size
                while r.step and hints[n] in [h for k, h in hints.items() if k != n]:
                    hints[n] += r.step
        bounds = dict(self.bounds)
        for n, r in sizes.items():
            low, high = bounds.get(n, (None, None))
            bounds[n] = (r.size if r.kind == "least" else low, r.size if r.kind == "most" else high)
        specs, symbols = self.resolved(choice.texts, pinned)
        stopped = runs.symbolic(self.model, specs, self.hints(symbols, hints, bounds), self.repeats)
        if stopped.error is not None or stopped.root is None:
            return stopped, None
        if not pin:
            self.bounds.update({n: b for n, b in bounds.items() if n in sizes and sizes[n].kind in ("most", "least")})
        texts = tuple(input_text(s) for s in specs)
        return stopped, (stopped, replace(choice, texts=texts, hints=hints), specs, symbols,
                         required_notes(sizes, {n for n in pinned if n in sizes}))

    def with_optional_inputs(self, tried: Attempt) -> Attempt:
        """Optional forward() parameters added, those the error or its line names first, then the usual ones
        (atlas.extract.record.escalation); `tried` where none makes a run work."""
        from atlas.extract.record.escalation import escalate

        def attempt(again):
            more = self.attempt(choices_of(again), again)
            return more.ok, more.first_error, more
        found = escalate(self.model, tried.disc, tried.first_error, attempt)
        return found[0] if found is not None else tried     # the discovery's own sentence says why it was added

    def resolved(self, texts, sizes: dict):
        """(input specs, their symbols) for a choice's texts, the symbols of `sizes` given those sizes."""
        return inputs_mod.resolve([fixed(inputs_mod.parse_input(x), sizes) for x in texts], self.vocab)

    def limits(self, disc, symbols, hints: dict | None = None) -> dict:
        """(low, high) per symbol for probes at concrete sizes: what discovery found the code needs (a conv stack's
        smallest input, twice a window), --dim's bounds, and the sizes the symbolic run was made at (an image of
        6 x 5 pixels leaves a backbone's last feature map 1 x 1, and every size after it reads 1)."""
        out = {}
        for s in symbols:
            b = disc.bound(s) if disc is not None else None
            low, high = self.bounds.get(s, (None, None))
            lows = [x for x in (low, b and b.minimum, b and b.hint, (hints or {}).get(s)) if x is not None]
            highs = [x for x in (high, b and b.maximum) if x is not None]
            out[s] = (max(lows, default=None), min(highs, default=None))
            if low is not None and highs and low > min(highs):     # the user's bound past the code's: no size holds
                said = render(b.because) if b is not None and b.maximum == min(highs) and b.because else None
                raise AtlasError(f"--dim {s}>={low} asks for more than the model takes: "
                                 + (f"{s} {said}" if said else f"{s} is at most {min(highs)}"))
        return out

    @staticmethod
    def hints(symbols, given: dict, bounds: dict) -> dict:
        """A distinct size per symbol for a symbolic run, never 0 or 1, within the bounds."""
        hints = {}
        for i, s in enumerate(symbols):
            h = given.get(s) or HINTS[min(i, len(HINTS) - 1)]
            low, high = bounds.get(s, (None, None))
            if low is not None:
                h = max(h, low)
            if high is not None:
                h = min(h, high)
            while h in hints.values() or h < 2:
                h += 1
            if high is not None and h > high:       # distinct below the bound, not past it (H, W <= 33: 33, 32)
                h = high
                while h in hints.values() and h > max(2, low or 2):
                    h -= 1
            hints[s] = h
        return hints


def _further(before: Required, again: Required) -> bool:
    """A multiple the code asks of a symbol again, of a larger size than the one the last run was given."""
    return before.kind == again.kind == "multiple" and again.size > before.size


def required_notes(sizes: dict, pinned: set) -> list:
    """What the code asked for and the line that said so, one note per kind: sizes it compared with a number,
    the nearest multiple it needs, the limits it raised past."""
    equal = {n: r for n, r in sizes.items() if r.kind == "equal"}
    notes = [msg("%(sizes)s: the code stops at other sizes (%(sites)s)",
                 sizes=", ".join(f"{n} = {r.size}" for n, r in equal.items()),
                 sites=", ".join(dict.fromkeys(r.site for r in equal.values())))] if equal else []
    for n, r in sizes.items():
        if r.kind == "multiple":
            notes.append(msg("%(symbol)s = %(size)s: the code requires %(expr)s to be a multiple of %(modulus)s "
                             "(%(site)s), which it is from %(first)s to %(last)s, the nearest sizes above the run's "
                             "%(hint)s", symbol=n, size=r.size, hint=r.hint, expr=r.expr, modulus=r.modulus,
                             site=r.site, first=r.first, last=r.last))
        elif r.kind == "most":
            notes.append(msg("%(symbol)s ≤ %(size)s: the code refuses larger sizes (%(site)s), and the run's %(hint)s "
                             "was one", symbol=n, size=r.size, hint=r.hint, site=r.site))
        elif r.kind == "least":
            notes.append(msg("%(symbol)s ≥ %(size)s: the code refuses smaller sizes (%(site)s), and the run's "
                             "%(hint)s was one", symbol=n, size=r.size, hint=r.hint, site=r.site))
    kept = [n for n, r in sizes.items() if r.kind != "equal" and n in pinned]
    if kept:
        notes.append(msg("recorded at %(sizes)s only: the code did not run with %(symbols)s left a symbol",
                         sizes=", ".join(f"{n} = {sizes[n].size}" for n in kept), symbols=kept))
    return notes


def choices_of(disc) -> list[Choice]:
    return [Choice(tuple(t), disc.hints(t), tuple((x, f.because) for x, f in zip(t, disc.inputs)))
            for t in disc.choices()]


def _kept(t: Attempt, trace, choice: Choice, specs, symbols) -> bool:
    """Keeps a run in `t`; whether it worked."""
    t.trace, t.choice, t.specs, t.symbols = trace, choice, specs, symbols
    t.first_error = t.first_error or (trace.error if not t.ok else None)
    return t.ok


def _smallest_sizes(model: nn.Module, texts) -> dict:
    """For inputs given (--input, atlas_inputs): the smallest sizes the code takes, as discovery finds them (a conv
    stack's receptive field), for the symbols the inputs name: a strided conv stack given [B, 1, T] would otherwise
    run at the default T = 17, too short for it. Only the lower limits; the given shapes stand."""
    from atlas.extract.discover.discovery import discover
    named = {d for t in texts for d in inputs_mod.parse_input(t).dims if isinstance(d, str)}
    try:
        disc = discover(model)
    except Exception:               # discovery is a help here, never a reason to fail
        return {}
    return {b.symbol: (b.hint or b.minimum, None) for b in disc.bounds
            if b.symbol in named and (b.hint or b.minimum)}


def input_text(spec: inputs_mod.InputSpec) -> str:
    return inputs_mod.input_text(spec.name, spec.dtype, spec.dims)


def fixed(spec: inputs_mod.InputSpec, sizes: dict) -> inputs_mod.InputSpec:
    """--dim T=64: the symbol is that size, not a symbol."""
    if not sizes:
        return spec
    return inputs_mod.InputSpec(spec.name, spec.dtype, tuple(sizes.get(d, d) if isinstance(d, str) else d
                                                              for d in spec.dims))


@contextlib.contextmanager
def _in_dtype(model: nn.Module, dtype: torch.dtype):
    """The model's floating tensors in `dtype` for one run (cheap on the meta device), then as they were."""
    saved = [(t, t.data) for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point()]
    for t, data in saved:
        t.data = data.to(dtype)
    try:
        yield
    finally:
        for t, data in saved:
            t.data = data
