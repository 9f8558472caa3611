"""What autograd saves for the backward pass while a forward is recorded: the activations training keeps in memory,
by the module call that saved them; weights, and what is computed from weights alone, are not activations.

Part of the recorder (atlas.extract.trace.recorder): it reads the recorder's call stack and values.
"""

from __future__ import annotations

import contextlib
import weakref

import torch

from atlas.load.nested import tensors as _tensors


class SavedTensors:
    """The recorder's saved-tensor hooks and its knowledge of which storages are weights."""

    # -- what autograd saves for the backward pass ---------------------------------------------
    def pack(self, t):
        if isinstance(t, torch.Tensor) and self.stack and not self._weight_ops:
            try:
                storage = t.untyped_storage()
                key = storage._cdata
                if key not in self._weights:
                    nbytes = self.to_size(storage.nbytes())
                    # a floating tensor's elements: what its bytes become in another activation dtype
                    size = t.element_size()
                    elements = 0 if not t.is_floating_point() else nbytes // size if isinstance(nbytes, int) \
                        else nbytes / size
                    self.saved.setdefault(id(self.stack[-1]), []).append((key, nbytes, elements))
            except (RuntimeError, NotImplementedError):    # a tensor without a storage of its own: nothing saved
                pass
        self.paused += 1
        try:
            return detached(t)
        finally:
            self.paused -= 1

    def saving(self):
        """autograd's saved-tensor hooks for this run. They hold the recorder weakly: autograd keeps them in the
        graph of every recorded output, and the recorder keeps those outputs, a cycle through C++ that Python's
        collector cannot see, so a strong hold would keep the whole record alive for good."""
        ref = weakref.ref(self)

        def pack(t):
            rec = ref()
            return rec.pack(t) if rec is not None else detached(t)

        return torch.autograd.graph.saved_tensors_hooks(pack, unpack)

    def _from_weights(self, args, kwargs) -> bool:
        """A call on weights alone (weight_norm's g·v/‖v‖, Mamba's −exp(A_log)): what it saves for the backward
        pass, and what it gives (see _note_weight_like), are weights' intermediates, not activations. In a record
        at concrete sizes no size tells a weight from an activation, and nothing is left out."""
        tensors = _tensors((args, kwargs))
        if not self._symbolic or not tensors:
            return False
        for t in tensors:
            v = self.by_id.get(id(t))
            if id(t) not in self._weight_like and not (v is not None and v.obj is t and v.kind in ("param", "buffer")):
                return False
        return True

    def _note_weight_like(self, out) -> None:
        """What a call on weights alone gives, of a size no input sets, is a weight too: the memory count leaves it
        out, as it leaves out the weights it is made of."""
        for t in _tensors(out):
            if any(isinstance(d, torch.SymInt) for d in t.shape):
                continue        # as large as the input (learned queries expanded to the batch): an activation
            self._weight_like.add(id(t))
            with contextlib.suppress(RuntimeError, NotImplementedError):
                self._weights.add(t.untyped_storage()._cdata)

    def note_weights(self) -> None:
        self._noted = True
        for _, _, _, t in self._owners.values():
            self._note(t)

    def _note(self, t: torch.Tensor) -> None:
        with contextlib.suppress(RuntimeError, NotImplementedError):
            self._weights.add(t.untyped_storage()._cdata)


def unpack(t):
    return t


def detached(t):
    """What autograd keeps of a saved tensor: the same data without its graph. Kept as it is, an output saved for
    its own backward (rsqrt's, exp's) holds the node that holds it, a cycle through C++ that no collector breaks:
    the graph, its fake tensors and their ShapeEnv would outlive the run."""
    return t.detach() if isinstance(t, torch.Tensor) else t
