"""Compressed finite differences (Curtis, Powell and Reid): columns whose
nonzero rows never meet are perturbed together, so an elementwise function needs
one group of evaluations instead of one per element.

The sparsity pattern comes from the gradients under test (every mode's, joined),
and it is not trusted: a row that changes where the pattern says no column of
the group reaches it means some gradient claims a zero that is not there, and
that group's columns are differenced one at a time instead.
"""
import functools

import numpy as np

from gradcheck.numerics import layout
from gradcheck.numerics.richardson import OFFSETS, kinks_at, one_sided_bounds
from gradcheck.numerics.richardson import extrapolated as richardson

# Compress only when it saves at least this factor of evaluations.
MIN_SAVING = 4
_MAX_GROUPS = 64


class Sparsity:
    """Where an (out, n) Jacobian can be nonzero: the bool `mask`, how many
    entries it has, and (searched once, when first asked for) their `rows` and
    `columns`, row-major: at 10^7 entries each search costs tens of ms."""

    def __init__(self, mask):
        self.mask, self.shape = mask, mask.shape
        self.count = int(np.count_nonzero(mask))

    @functools.cached_property
    def entries(self):
        # From the flat positions: np.nonzero of a 2-d mask is ten times slower.
        flat = np.flatnonzero(self.mask)
        return np.divmod(flat, self.shape[1]) if self.shape[1] else (flat, flat)

    @property
    def rows(self):
        return self.entries[0]

    @property
    def columns(self):
        return self.entries[1]

    def entries_in_rows(self, start, stop):
        """(rows - start, columns) of the entries in rows start..stop-1."""
        inside = (self.rows >= start) & (self.rows < stop)
        return self.rows[inside] - start, self.columns[inside]


def groups_of(support):
    """Column groups with disjoint row supports, or None when compression would
    not pay (dense columns, or too many groups). `support`: a Sparsity."""
    out_size, n = support.shape
    if not _compression_pays(support, n):
        return None
    order = np.argsort(support.columns, kind="stable")  # column-major, rows ascending
    return _disjoint_groups(support.columns[order], support.rows[order], n, out_size)


def row_groups(support):
    """Row groups with disjoint column supports (the rows one VJP can share, see
    compressed_rows.py), or None when that would not pay. Every row is in one."""
    n_rows, n = support.shape
    if not _compression_pays(support, n_rows):
        return None
    grouping = _disjoint_groups(support.rows, support.columns, n_rows, n)  # row-major already
    return None if grouping is None else grouping[0]


def _compression_pays(support, n_grouped):
    return n_grouped >= MIN_SAVING and support.count and support.count * MIN_SAVING <= support.mask.size


def _disjoint_groups(keys, partners, n_keys, n_partners):
    """Groups of keys (columns, or rows) of which no two share a partner (a row,
    or a column), built greedily: each key joins the first group it fits.
    `keys` are sorted, one per entry, with `partners` the entries' other index.
    Returns (each group's keys, each group's partners as a bool mask), or None
    when more than _MAX_GROUPS groups would be needed. Keys without partners
    join the first group."""
    limit = min(_MAX_GROUPS, n_keys // MIN_SAVING)
    sharing = np.bincount(partners, minlength=n_partners)
    if sharing.max() > limit:
        return None  # that many keys share one partner: each needs a group of its own
    if sharing.max() <= 1:  # no two keys meet (a diagonal): one group
        return [np.arange(n_keys)], [sharing > 0]
    present, first = np.unique(keys, return_index=True)
    used, members = [], []
    for key, mine in zip(present, np.split(partners, first[1:])):
        for group, taken in enumerate(used):
            if not taken[mine].any():
                taken[mine] = True
                members[group].append(key)
                break
        else:
            if len(used) >= limit:
                return None
            taken = np.zeros(n_partners, dtype=bool)
            taken[mine] = True
            used.append(taken)
            members.append([key])
    alone = np.ones(n_keys, dtype=bool)
    alone[present] = False
    groups = [np.array(m, dtype=np.int64) for m in members]
    groups[0] = np.sort(np.concatenate([groups[0], np.flatnonzero(alone)]))
    return groups, used


def fill(evaluate, i, x, x_real, h, f0, support, grouping, retry_estimate, precision):
    """(values, kinks, the kinks' bounds or None: see richardson.one_sided_bounds),
    (out, n) like the Jacobian blocks, from one evaluation per group, and the
    columns to difference one at a time instead: those of groups whose outputs
    contradict the pattern, and those whose error estimate is poor. Work is
    done on the pattern's nonzero entries only."""
    members, covered = grouping
    n = x_real.size
    directions = np.zeros((len(members), n))
    group_of = np.empty(n, dtype=int)
    for g, columns in enumerate(members):
        directions[g, columns] = h[columns]
        group_of[columns] = g
    real = (x_real[None, None].astype(np.float64) + OFFSETS[:, None, None] * directions[None])
    batch = layout.from_real_view(real.astype(x_real.dtype).reshape(-1, n), x.dtype, x.shape)
    results = evaluate(i, batch)
    y = np.concatenate([layout.real_view_batch(r).astype(np.float64) for r in results], axis=1)
    y = y.reshape(4, len(members), -1)
    # Per unit of t, where x(t) = x + t h 1_group.
    extrapolated, spread = richardson(y, OFFSETS[:, None, None])
    estimate = np.abs(spread)
    taken = np.broadcast_to(OFFSETS[:, None], (4, len(members)))
    kink = kinks_at(y, taken, f0, precision)
    moved = np.abs(y[0] - y[1]) > 8 * np.finfo(np.float64).eps * (np.abs(y[0]) + np.abs(y[1]))
    contradicted = (moved & ~np.stack(covered)).any(axis=1) | ~np.isfinite(extrapolated).all(axis=1)
    # Each nonzero (row, column) reads its group's difference, scaled back by its step.
    rows, columns = support.rows, support.columns
    groups = group_of[columns]
    value = extrapolated[groups, rows] / h[columns]
    error = estimate[groups, rows] / h[columns]
    values = np.zeros(support.shape)
    kinked = np.zeros(support.shape, dtype=bool)
    values[rows, columns] = value
    kinked[rows, columns] = kink[groups, rows]
    bounds = None  # made only if some entry is on a kink: only those read it
    on_kinks = kinked[rows, columns]
    if on_kinks.any():
        bounds = np.empty((2,) + support.shape)
        sides = np.empty((2,) + kink.shape)
        sides[:, kink] = one_sided_bounds(y, taken, f0, kink)
        r, c, g = rows[on_kinks], columns[on_kinks], groups[on_kinks]
        bounds[:, r, c] = sides[:, g, r] / h[c]  # h > 0: the order holds
    poor = columns[~(error <= retry_estimate * np.maximum(np.abs(value), 1.0))]
    redo = np.union1d(np.flatnonzero(contradicted[group_of]), poor)
    return values, kinked, bounds, redo
