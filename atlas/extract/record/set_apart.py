"""List entries and instances that are other components than the ones they look like: alike entries whose
kinds computed differently in the record, and instances the model calls with other inputs. Each gets a kind of its
own, and a sentence its page says."""

from __future__ import annotations

from torch import nn

from atlas.document import ModelDoc
from atlas.extract.trace import call_shapes as trace_shapes
from atlas.extract.trace import entry_kinds
from atlas.extract.trace import structures as trace_structures
from atlas.i18n import msg


def apart(model: nn.Module, trace, repeats: list[list[str]], doc: ModelDoc) -> dict[str, tuple]:
    """{module path: (kind, why)} for the entries of each group of alike list entries whose kinds
    (atlas.extract.trace.entry_kinds) computed differently in the run: kinds that computed the same share a label, and
    stay one component. And for the instances of a component called otherwise than its first instance
    (called_otherwise). `why` is what the component's page says of it."""
    out = called_otherwise(model, trace, doc)
    for paths in repeats:
        keys = entry_kinds.kinds([model.get_submodule(p) for p in paths])
        done: dict = {}             # each kind's first entry the forward called (its first, where none was)
        for path, key in zip(paths, keys):
            if done.get(key) is None:
                done[key] = trace_shapes.first_call_of(trace, model, path)
        if len(done) < 2:
            continue
        if any(call is None or call.skipped for call in done.values()):
            continue
        labels: dict = {}
        label = {key: labels.setdefault(entry_kinds.computation(call), str(len(labels))) for key, call in done.items()}
        if len(labels) > 1:
            why = {lab: _settings_text([key for key in label if label[key] == lab],
                                       [key for key in label if label[key] != lab]) for lab in labels.values()}
            out.update((path, (label[key], why[label[key]])) for path, key in zip(paths, keys))
    return out


def _settings_text(keys: list[tuple], others: list[tuple]):
    """Why entries are set apart: the settings all entries of that kind share and no entry of another has."""
    common = set.intersection(*(set(key) for key in keys)) - set().union(*(set(key) for key in others))
    shown = ", ".join(f"`{name}` = {value}" for name, value in sorted(common))
    return msg("set apart from the alike entries of its list: its settings differ (%(settings)s), and so does what "
               "it computes", settings=shown) if shown else msg("set apart from the alike entries of its list: "
                                                                   "what it computes differs")


def called_otherwise(model: nn.Module, trace, doc: ModelDoc) -> dict[str, tuple]:
    """{module path: label} for the instances of each component, where some were called otherwise than others
    were: with one tensor passed to other parameters, or with inputs of other sizes. Funnel's first layer gets one
    tensor as query, key and value, the later ones a pooled query beside the keys, the third block's at a quarter
    of the positions. The equations and shapes read from the first call would use the query where the later
    layers' code uses the key, at the first one's sizes: each way of calling it is a component of its own. Sizes a
    count in the data decides (the tokens routed to each expert) are one way."""
    out, evaluated = {}, {}
    for comp in doc.components:
        if comp.instances < 2:
            continue
        calls = [trace_shapes.first_call_of(trace, model, p) if p not in trace.extra else None   # not its own call
                 for p in comp.module_paths]
        patterns = [(entry_kinds.shared(c.args, c.kwargs), _input_sizes(c, trace.hints, evaluated)) if c is not None
                    else None for c in calls]
        seen = [p for p in patterns if p is not None]
        if len(set(seen)) < 2:
            continue
        labels = {pattern: (f"shared {i}", msg(
            "set apart from the other instances: the model calls it with other inputs (one tensor passed to other "
            "arguments, or other sizes)")) for i, pattern in enumerate(dict.fromkeys(seen))}
        out.update((path, labels[pattern if pattern is not None else seen[0]])
                   for path, pattern in zip(comp.module_paths, patterns))
    return out


def _input_sizes(call, hints: dict, evaluated: dict) -> tuple:
    """A call's tensor inputs' sizes at the sizes the record was made at (a size written T in one call and 17 in
    a later one, once the code needed T's value, is one size); every data-decided count (u0, u1) alike.
    `evaluated` keeps each size's value: the layers of a deep model see the same few sizes."""
    def at(size):
        if size not in evaluated:
            symbols = getattr(size, "free_symbols", set())
            evaluated[size] = ("u" if any(str(s) not in hints for s in symbols) else
                               int(size.subs({s: hints[str(s)] for s in symbols})) if symbols else int(size))
        return evaluated[size]
    return tuple(tuple(at(s) for s in r.value.shape)
                 for r in trace_structures.refs((call.args, call.kwargs)) if r.value.shape is not None)


def repeat_groups(doc: ModelDoc) -> list[list[str]]:
    """Module paths of identical entries of one list: all but the first may skip their run."""
    groups = []
    for comp in doc.components:
        if comp.repeat < 2 or len(comp.module_paths) != comp.repeat:
            continue
        parents = {p.rpartition(".")[0] for p in comp.module_paths}
        if len(parents) == 1 and all(p.rpartition(".")[2].isdigit() for p in comp.module_paths):
            groups.append(list(comp.module_paths))
    return groups
