"""The sizes the probes run at: a size per symbol per probe, and the probes that check their fits."""

from __future__ import annotations

from atlas.document import input_specs as inputs_mod

# Each symbol takes one value per probe; the k-th symbol uses the k-th sequence.
# Even T values keep T/2 whole; three probes tell a*S + b from a*S1*S2.
# Each symbol's size at each probe. A formula is solved on the first probes and must hold on every one: the
# fourth is there to refute a fit the first three allow by coincidence (Longformer's length padded to its window,
# ceil(T/8)*8, at (B, T) = (2, 6), (3, 10), (5, 14) is 8, 16, 16, which -8*B + 4*T fits too; at (7, 19) it is 24).
# No column is an affine function of another (their steps differ), so no symbol's formula fits another's dims:
# H at 6, 10, 14, 19 beside W at 4, 8, 12, 17 would make W - 2 fit every H dim of a CNN, and both shifted to one
# smallest size would make them equal.
PROBE_VALUES = ((2, 3, 5, 7), (6, 10, 14, 19), (4, 9, 11, 16), (9, 15, 21, 26), (7, 11, 13, 23))


def probe_sizes(symbols, limits: dict | None = None) -> list[dict[str, int]]:
    """The sizes of every probe: one dict per probe, a size per symbol. `limits`: (low, high) per symbol, the
    smallest size the code takes (a conv stack's receptive field, twice an attention window) and the largest (a
    position table); a symbol's probes move up to start at its low, or down to end at its high."""
    if len(symbols) > len(PROBE_VALUES):
        raise inputs_mod.AtlasError(f"at most {len(PROBE_VALUES)} symbolic dims are supported, got {list(symbols)}")
    columns = {}
    for i, sym in enumerate(symbols):
        values = PROBE_VALUES[i]
        low, high = (limits or {}).get(sym, (None, None))
        if low is not None and low >= 64:   # steps that grow with the smallest size: a stride of 32 after it shows
            values = tuple(values[0] + (v - values[0]) * (low // 8) for v in values)
        shift = max(0, (low or 0) - values[0])
        if high is not None and values[-1] + shift > high:
            shift = high - values[-1]
        columns[sym] = [max(2, v + shift) for v in values]
    return [{sym: columns[sym][k] for sym in symbols} for k in range(len(PROBE_VALUES[0]))]


def check_sizes(probes: list[dict[str, int]], limits: dict | None = None) -> list[dict[str, int]]:
    """Probes that check the fits of the others, at sizes none of them had: in the probes all symbols grow
    together and stay close, so a height's dim fits the width as well (floor(W/5) - 6 where it is floor(H/5) - 6),
    a length's the batch, and stride 8 fits where stride 5 is (ceiling(T/8) + 3 = floor(T/5) - 1 from T = 60 to 73).
    Each symbol goes, in turn, well past its probes (twice as far again, within its limit) while the others step
    just above their smallest."""
    columns = {sym: sorted({p[sym] for p in probes}) for sym in probes[0]}

    def far(sym: str) -> int:
        column, high = columns[sym], (limits or {}).get(sym, (None, None))[1]
        value = 3 * column[-1] - 2 * column[0] + 1
        return value if high is None or value <= high else column[-2] + 1

    def next_to(sym: str, step: int) -> int:
        column, value = columns[sym], columns[sym][0] + step
        while value in column and value < column[-1]:
            value += 1
        return value
    names = list(columns)
    parity = [[s for i, s in enumerate(names) if i % 2 == k] for k in (0, 1)]
    # and every symbol two and three above its smallest probe: with the smallest and the one above it, four sizes
    # in a row, so a rounding to a multiple of 4 is told from one to 2 (ceiling(T/2) + 1 is 2*ceiling(T/4) at
    # T = 17, 18, 21, 25, 30 and 57, not at 19 or 20)
    return [{s: far(s) if s in group else next_to(s, 1) for s in names} for group in parity if group] + \
        [{s: next_to(s, step) for s in names} for step in (2, 3)]
