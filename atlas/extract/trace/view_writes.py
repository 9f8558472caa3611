"""In-place writes into views: what a write into a view changes in the tensors it views.

Part of the recorder (atlas.extract.trace.recorder): it adds events to the call that made the write.
"""

from __future__ import annotations

import torch

from atlas.extract.trace.structures import OpEvent, Ref
from atlas.extract.trace.structures import refs as _refs


class ViewWrites:
    """The recorder's events for the tensors an in-place write into a view changes."""

    def _through_view(self, view: torch.Tensor, enc_out, site) -> None:
        """An in-place write into a view changed what it views too, up to the tensor that owns the storage. Each
        view on the way, made from the one above it, is given its new value in turn: one made by indexing
        (`out[..., :4].copy_(a)`) as `above[index] = its new value`; one reshaping every element of the one above
        (BigBird's `attention_probs.view(b, h, n, k, n, k)[:, :, 1].scatter_(...)`) as its new value reshaped
        back, the same elements in the same order. Views made otherwise (a transpose) are left."""
        refs = _refs(enc_out)
        before = self.stack[-1].events[-1].args[0] if self.stack[-1].events else None
        if len(refs) != 1 or not isinstance(before, Ref) or id(view._base) not in self.by_id:
            return
        chain, value = [], before.value             # from the view written into, up to the owner
        while value.obj is not view._base:
            made = _made_as_view(value)
            kind = made.name.removeprefix("Tensor.") if made is not None else None
            if kind != "__getitem__" and kind not in _RESHAPING_VIEWS or len(chain) == _MAX_VIEW_CHAIN or \
                    any(isinstance(a, torch.dtype) for a in made.args[1:]):     # x.view(dtype): other elements
                return
            above = made.args[0].value
            latest = self.by_id.get(id(above.obj))
            if kind != "__getitem__" and latest is not above and not (   # written since, other than through it
                    latest is not None and latest.made_by is not None and latest.made_by.name == "Tensor.reshape"
                    and latest.made_by.args[0].value.obj is value.obj):
                return
            chain.append((made, above))
            value = above
        new = refs[0]
        for made, above in chain:
            if made.name == "Tensor.__getitem__":
                latest = self.by_id.get(id(above.obj), above)
                func, name, args = torch.Tensor.__setitem__, "Tensor.__setitem__", (Ref(latest), made.args[1], new)
            else:
                func, name, args = torch.Tensor.reshape, "Tensor.reshape", (new, self.encode(tuple(above.obj.shape)))
            out = Ref(self.new_value(above.obj, "op"))
            event = OpEvent(func, name, args, {}, out, site, name == "Tensor.__setitem__")
            out.value.made_by = event
            self.stack[-1].events.append(event)
            new = out


# views of every element of a tensor, in its order: written into, the tensor is the view's new value reshaped back
_RESHAPING_VIEWS = frozenset({"view", "reshape", "view_as", "reshape_as", "flatten", "unflatten", "unsqueeze",
                              "squeeze"})


_MAX_VIEW_CHAIN = 8        # views of views followed back to the tensor they view, at most


def _made_as_view(value):
    """The call that made `value`'s tensor as a view of another, past the writes into the tensor since."""
    made = value.made_by
    while made is not None and made.args and isinstance(made.args[0], Ref) and made.args[0].value.obj is value.obj \
            and made.args[0].value is not value and (made.inplace or made.name == "Tensor.__setitem__"):
        value = made.args[0].value
        made = value.made_by
    return made if made is not None and made.args and isinstance(made.args[0], Ref) else None
