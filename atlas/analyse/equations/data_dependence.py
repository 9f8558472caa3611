"""Steps that hold only for the recorded data: a Python loop whose count, or a list index, the data decides.

A symbolic record gives each data-dependent number (the length of `nonzero()`, an `.item()`) an unbacked
symbol with an assumed value, so the code runs on. Where the code then needs such a number as a Python
int (`for e in torch.unique(choice).tolist()`, `self.experts[e]`), the record notes a guard on the call
it happened in: the recorded events are one path, unrolled for the assumed value, and equations read
off them would hold only for data taking that same path. Such a component's equations are not derived; in
its parent's page, it is a linked step run as the real module, never expanded in place.

A number the component receives in its inputs' shapes (a block of u0 routed tokens) is fixed by those
inputs, where the check makes them at the assumed size: no guard on it refuses the equations.
"""

from __future__ import annotations

from atlas.analyse.equations.leaves import Unsupported
from atlas.analyse.equations.recorded import unbacked
from atlas.extract.trace.structures import Call
from atlas.i18n import msg


def data_dependent(call: Call, given: set):
    """The first guard by which the call's own code used a data-dependent number it did not receive as a size
    (`given`: the symbols of the component's input shapes) as a count or an index; None if there is none."""
    for guard in call.guards:
        if unbacked(guard.expr) - given:
            return guard
    return None


def refuse_data_dependent(call: Call, given: set) -> None:
    """Unsupported where the call's steps would be unrolled along a data-dependent path."""
    guard = data_dependent(call, given)
    if guard is not None:
        symbol = ", ".join(sorted(str(s) for s in unbacked(guard.expr) - given))
        raise Unsupported(msg("data-dependent loop: the count or index at %(place)s comes from the data "
                              "(%(symbol)s, assumed %(value)s when recorded), so the recorded steps hold only "
                              "for data that takes the same path", place=guard.site, symbol=symbol, value=guard.value))
