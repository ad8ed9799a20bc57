"""Grid peers for the rectangle-synopsis benchmarks (not part of the package).

Implements, in vectorised numpy, the grid mechanisms of Qardaji, Yang & Li
(ICDE 2013) that ``bench_rectangles.py`` compares ``RectangleSynopsis`` with:

* :class:`UniformGrid` (UG, §III of the paper) for any number of axes c,
* :class:`AdaptiveGrid` (AG, §IV: two-level grid + constrained inference),
* :class:`FlatHistogram`: one noisy count per cell of a given equal-width grid.

All axes are integer domains given as inclusive ``(lo, hi)`` pairs with up to
2^64 values.  Cell boundaries are computed with exact integer arithmetic
(``floor(j*D/m)``), so a value near 2^64 - 1 never lands in the wrong cell.
Queries are answered assuming points are uniform within a cell (the paper's
"uniformity assumption"), vectorised over (q, c) arrays of inclusive bounds.

These are *benchmark peers*: noise comes from ``numpy.random.Generator``
(continuous Laplace), seeded for reproducibility; they are not hardened
releases.

References
----------
W. Qardaji, W. Yang, N. Li, "Differentially private grids for geospatial
data", ICDE 2013 (arXiv:1209.1322): Guideline 1 (UG grid size
m = sqrt(N eps / c), c = 10), §IV (AG: m1 = max(10, ceil(m/4)), alpha = 0.5,
m2 = ceil(sqrt(N' (1 - alpha) eps / c2)), c2 = c / 2, constrained inference).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = [
    "EqualWidthAxis",
    "to_offsets",
    "GridEstimate",
    "FlatHistogram",
    "UniformGrid",
    "AdaptiveGrid",
    "ug_cells_per_axis",
    "ag_level1_cells_per_axis",
]

_U64 = np.uint64
_TWO64 = 1 << 64


def to_offsets(x, lo: int) -> np.ndarray:
    """Exact uint64 offsets ``x - lo`` for integer ``x`` (int64 or uint64).

    Arithmetic is modulo 2^64, which is exact because ``0 <= x - lo < 2^64``
    for every value inside the domain.  Values are not range-checked here.
    """
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"values must be an integer array, got dtype {x.dtype}")
    return x.astype(np.uint64) - _U64(int(lo) % _TWO64)


class EqualWidthAxis:
    """``m`` equal-width cells over the integer axis ``[lo, hi]``.

    Cell ``j`` holds the offsets ``[floor(j D / m), floor((j+1) D / m) - 1]``
    with ``D = hi - lo + 1``; computed with Python integers so that D = 2^64
    is exact.  ``m`` is clipped to ``D`` so every cell holds >= 1 value.
    """

    def __init__(self, lo: int, hi: int, m: int):
        lo, hi, m = int(lo), int(hi), int(m)
        if hi < lo:
            raise ValueError(f"domain: hi ({hi}) < lo ({lo})")
        self.lo, self.hi = lo, hi
        self.size = hi - lo + 1
        if self.size > _TWO64:
            raise ValueError("domain: more than 2^64 values on one axis")
        self.m = max(1, min(m, self.size))
        bounds = [j * self.size // self.m for j in range(self.m + 1)]
        self.starts = np.array(bounds[:-1], dtype=np.uint64)
        # last offset of each cell; bounds[-1] = D may be 2^64, so subtract in Python
        self.ends = np.array([b - 1 for b in bounds[1:]], dtype=np.uint64)
        self.widths = np.array([bounds[j + 1] - bounds[j] for j in range(self.m)],
                               dtype=np.float64)

    def cell(self, off: np.ndarray) -> np.ndarray:
        """Cell index of uint64 offsets (exact, by binary search on starts)."""
        return np.searchsorted(self.starts, off, side="right").astype(np.int64) - 1

    def pieces(self, qlo: np.ndarray, qhi: np.ndarray):
        """Per-query first/last cell and the fractions of them covered.

        Returns ``(a, b, fa, fb)``: cells ``a..b`` are touched, cell ``a`` is
        covered to fraction ``fa``, cell ``b`` to ``fb`` (when ``a == b`` only
        ``fa`` is meaningful), cells strictly between are fully covered.
        """
        a, b = self.cell(qlo), self.cell(qhi)
        same = a == b
        end_a = np.where(same, qhi, self.ends[a])
        fa = ((end_a - qlo).astype(np.float64) + 1.0) / self.widths[a]
        fb = ((qhi - self.starts[b]).astype(np.float64) + 1.0) / self.widths[b]
        return a, b, fa, fb


def _box_sum(prefix: np.ndarray, base: np.ndarray, strides: np.ndarray,
             a: list, b: list, fa: list, fb: list) -> np.ndarray:
    """Sum over a grid of ``w_1(i_1)...w_c(i_c) * count[i]`` for piecewise weights.

    Per axis k the weight is ``fa`` on cell ``a``, 1 on ``a+1..b-1`` and ``fb``
    on ``b`` (only ``fa`` when a == b).  The product splits into 3^c boxes of
    constant weight; each box sum is read from an inclusive-exclusive prefix
    array (``prefix`` flat, with a zero border; item t's grid starts at
    ``base[t]`` and has ``strides[t, k]``).
    """
    c = len(a)
    q = base.shape[0]
    # (start, stop_exclusive, weight) of the three pieces of each axis
    axis_pieces = []
    for k in range(c):
        ak, bk = a[k], b[k]
        same = ak == bk
        p0 = (ak, ak + 1, fa[k])
        p1 = (ak + 1, np.maximum(bk, ak + 1), np.ones(q))
        p2 = (bk, bk + 1, np.where(same, 0.0, fb[k]))
        axis_pieces.append((p0, p1, p2))
    total = np.zeros(q)
    for combo in itertools.product(*axis_pieces):
        w = np.ones(q)
        for piece in combo:
            w = w * piece[2]
        s = np.zeros(q)
        for corner in itertools.product((0, 1), repeat=c):
            idx = base.copy()
            sign = 1
            for k, hi_side in enumerate(corner):
                pos = combo[k][1] if hi_side else combo[k][0]
                if not hi_side:
                    sign = -sign
                idx = idx + pos * strides[:, k]
            s += sign * prefix[idx]
        total += w * s
    return total


def _prefix(counts: np.ndarray) -> np.ndarray:
    """c-D inclusive prefix sums with a leading zero border on every axis."""
    p = np.zeros(tuple(s + 1 for s in counts.shape))
    p[tuple(slice(1, None) for _ in counts.shape)] = counts
    for k in range(counts.ndim):
        np.cumsum(p, axis=k, out=p)
    return p


def _check_points(points, axes):
    pts = np.asarray(points)
    if pts.ndim != 2 or pts.shape[1] != len(axes):
        raise ValueError(f"points must have shape (n, {len(axes)}), got {pts.shape}")
    offs = []
    for k, ax in enumerate(axes):
        col = pts[:, k]
        if col.size and (int(col.min()) < ax.lo or int(col.max()) > ax.hi):
            raise ValueError(f"points: axis {k} outside the domain [{ax.lo}, {ax.hi}]")
        offs.append(to_offsets(col, ax.lo))
    return offs


def _query_offsets(lo, hi, axes):
    lo, hi = np.atleast_2d(np.asarray(lo)), np.atleast_2d(np.asarray(hi))
    c = len(axes)
    if lo.shape != hi.shape or lo.shape[1] != c:
        raise ValueError(f"lo and hi must both have shape (q, {c})")
    qlo, qhi = [], []
    for k, ax in enumerate(axes):
        if np.any(lo[:, k] > hi[:, k]):
            raise ValueError("lo must be <= hi on every axis")
        if lo.size and (int(lo[:, k].min()) < ax.lo or int(hi[:, k].max()) > ax.hi):
            raise ValueError(f"query bounds on axis {k} outside [{ax.lo}, {ax.hi}]")
        qlo.append(to_offsets(lo[:, k], ax.lo))
        qhi.append(to_offsets(hi[:, k], ax.lo))
    return qlo, qhi


class GridEstimate:
    """A released equal-width grid of (noisy) counts answering rectangles.

    Parameters
    ----------
    axes : list of EqualWidthAxis
    counts : ndarray of shape (m_1, ..., m_c)
        Released counts (noisy, possibly post-processed).
    """

    def __init__(self, axes, counts):
        self.axes = list(axes)
        self.counts = np.asarray(counts, dtype=np.float64)
        self._prefix = _prefix(self.counts).ravel()
        shape = np.array(self.counts.shape) + 1
        self._strides = np.array([int(np.prod(shape[k + 1:])) for k in range(len(shape))],
                                 dtype=np.int64)

    @property
    def num_cells(self) -> int:
        return int(self.counts.size)

    def answer(self, lo, hi) -> np.ndarray:
        """Estimated counts of the inclusive rectangles ``[lo, hi]`` (q, c) arrays.

        Uniformity within each partially covered cell.  O(q 6^c).
        """
        qlo, qhi = _query_offsets(lo, hi, self.axes)
        q = qlo[0].shape[0]
        a, b, fa, fb = [], [], [], []
        for k, ax in enumerate(self.axes):
            r = ax.pieces(qlo[k], qhi[k])
            a.append(r[0]); b.append(r[1]); fa.append(r[2]); fb.append(r[3])
        strides = np.broadcast_to(self._strides, (q, len(self.axes)))
        return _box_sum(self._prefix, np.zeros(q, dtype=np.int64), strides, a, b, fa, fb)


def _histogram(offs, axes) -> np.ndarray:
    cells = [ax.cell(o) for ax, o in zip(axes, offs)]
    shape = tuple(ax.m for ax in axes)
    flat = np.ravel_multi_index(cells, shape) if cells[0].size else np.zeros(0, np.int64)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.float64)


def _noisy_total(n: int, eps_n: float, rng) -> float:
    """N' = N + Lap(1/eps_n), the paper's grid-size input, from a budget share."""
    return n + rng.laplace(scale=1.0 / eps_n)


class FlatHistogram(GridEstimate):
    """Noisy histogram on a fixed equal-width grid: count + Lap(1/eps) per cell.

    Each point is in exactly one cell, so the L1 sensitivity is 1 (add/remove
    one point) and the release is eps-DP.

    Parameters
    ----------
    points : (n, c) integer array
    domain : sequence of c inclusive (lo, hi) pairs
    epsilon : float
    cells_per_axis : int or sequence of c ints
    seed : int or numpy Generator, for benchmarks only
    """

    def __init__(self, points, domain, epsilon, cells_per_axis, seed=None):
        rng = np.random.default_rng(seed)
        c = len(domain)
        if np.isscalar(cells_per_axis):
            cells_per_axis = [int(cells_per_axis)] * c
        axes = [EqualWidthAxis(lo, hi, m) for (lo, hi), m in zip(domain, cells_per_axis)]
        hist = _histogram(_check_points(points, axes), axes)
        super().__init__(axes, hist + rng.laplace(scale=1.0 / epsilon, size=hist.shape))
        self.epsilon = float(epsilon)


def ug_cells_per_axis(n_est: float, epsilon: float, c_axes: int, c_const: float = 10.0,
                      exponent: float | None = None) -> int:
    """UG grid size per axis.

    2-D is the paper's Guideline 1: m = ceil(sqrt(N eps / c_const)).  For c
    axes we generalise the paper's error balance: a query's noise error grows
    like sqrt(m^c)/eps and its non-uniformity error like N/m (the points in
    the ~m^(c-1) boundary cells), which balance at m ~ (N eps / c_const)^(2/(c+2));
    for c = 2 this is exactly Guideline 1.  ``exponent`` overrides 2/(c+2)
    (e.g. 1/c: total cells = N eps / c_const).
    """
    x = max(n_est, 0.0) * epsilon / c_const
    e = 2.0 / (c_axes + 2) if exponent is None else float(exponent)
    return max(1, math.ceil(x ** e))


def ag_level1_cells_per_axis(n_est: float, epsilon: float, c_axes: int,
                             c_const: float = 10.0) -> int:
    """AG first-level size: m1 = max(10, ceil(m_UG / 4)) in 2-D (paper §IV).

    For c != 2 the floor of 10 per axis (100 cells) becomes ceil(100^(1/c))
    per axis, keeping the paper's minimum of ~100 first-level cells.
    """
    floor_m = 10 if c_axes == 2 else math.ceil(100 ** (1.0 / c_axes))
    return max(floor_m, math.ceil(ug_cells_per_axis(n_est, epsilon, c_axes, c_const) / 4))


class UniformGrid(FlatHistogram):
    """UG of Qardaji, Yang & Li (ICDE 2013, §III, Guideline 1).

    Grid of m^c equal-width cells, m from :func:`ug_cells_per_axis` on a noisy
    N; each cell count gets Lap(1/eps_cells).

    Parameters
    ----------
    points, domain, epsilon, seed : as :class:`FlatHistogram`
    c_const : float
        The paper's constant c = 10.
    n_share : float
        Budget share spent on N' = N + Lap(1/(n_share eps)) to choose m.  The
        paper's experiments use the true N (grid size then leaks |D| -- not
        eps-DP); ``n_share = 0`` reproduces that, the default 0.05 keeps the
        whole release eps-DP at a small cost.
    """

    def __init__(self, points, domain, epsilon, *, c_const=10.0, n_share=0.05, exponent=None,
                 seed=None):
        rng = np.random.default_rng(seed)
        pts = np.asarray(points)
        c = len(domain)
        eps_n = n_share * epsilon
        n_est = _noisy_total(pts.shape[0], eps_n, rng) if n_share > 0 else pts.shape[0]
        self.m = ug_cells_per_axis(n_est, epsilon * (1 - n_share), c, c_const, exponent)
        super().__init__(pts, domain, epsilon * (1 - n_share), self.m, seed=rng)
        self.epsilon = float(epsilon)


def _split_bound(j: np.ndarray, w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Exact floor(j * w / m) in uint64 for 0 <= j <= m, w < 2^64, m < 2^32."""
    j, w, m = j.astype(np.uint64), w.astype(np.uint64), m.astype(np.uint64)
    return j * (w // m) + (j * (w % m)) // m


def _split_index(off: np.ndarray, w: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Sub-cell j of offset ``off`` in ``[0, w)`` cut into m equal-width parts.

    Float estimate, then exact correction against :func:`_split_bound`.
    """
    j = np.floor(off.astype(np.float64) / w.astype(np.float64) * m.astype(np.float64))
    j = np.clip(j, 0, m.astype(np.float64) - 1).astype(np.int64)
    for _ in range(2):
        too_high = _split_bound(j, w, m) > off
        j = np.where(too_high, j - 1, j)
        too_low = (j + 1 < m) & (_split_bound(j + 1, w, m) <= off)
        j = np.where(too_low, j + 1, j)
    return j


class AdaptiveGrid:
    """AG of Qardaji, Yang & Li (ICDE 2013, §IV).

    Level 1: m1^c equal-width cells, m1 from :func:`ag_level1_cells_per_axis`,
    noisy counts v with budget alpha*eps.  Each level-1 cell with noisy count
    N' is cut into m2^c cells, m2 = ceil((N' (1-alpha) eps / c2)^(2/(c+2)))
    (= ceil(sqrt(N'(1-alpha)eps/c2)) in 2-D), c2 = c/2, noisy counts u with
    budget (1-alpha)*eps.  Both levels partition the data, so by sequential
    composition the release is eps-DP (plus ``n_share`` for N').

    Constrained inference (paper §IV): per level-1 cell with M = m2^c
    sub-cells, v' = (alpha^2 M v + (1-alpha)^2 sum u) / (alpha^2 M + (1-alpha)^2)
    (inverse-variance weighting), then u' = u + (v' - sum u) / M.  Queries sum
    v' of fully covered level-1 cells and, in partially covered ones, u' with
    uniformity inside each sub-cell.

    Parameters
    ----------
    points, domain, epsilon, seed : as :class:`UniformGrid`
    alpha : float
        Level-1 budget share, 0.5 in the paper.
    c_const : float
        c = 10; c2 = c_const / 2.
    n_share : float
        As in :class:`UniformGrid`.
    """

    def __init__(self, points, domain, epsilon, *, alpha=0.5, c_const=10.0,
                 n_share=0.05, seed=None):
        rng = np.random.default_rng(seed)
        pts = np.asarray(points)
        c = len(domain)
        self.c = c
        self.epsilon = float(epsilon)
        eps = epsilon * (1 - n_share)
        n_est = (_noisy_total(pts.shape[0], n_share * epsilon, rng)
                 if n_share > 0 else pts.shape[0])
        self.m1 = ag_level1_cells_per_axis(n_est, eps, c, c_const)
        self.axes = [EqualWidthAxis(lo, hi, self.m1) for lo, hi in domain]
        offs = _check_points(pts, self.axes)
        hist1 = _histogram(offs, self.axes)
        v = hist1 + rng.laplace(scale=1.0 / (alpha * eps), size=hist1.shape)

        # level-1 cell geometry (uint64 widths along each axis; < 2^64 since m1 >= 2)
        shape1 = hist1.shape
        grids = np.indices(shape1).reshape(c, -1)
        widths = np.stack([(ax.ends[g] - ax.starts[g]) + _U64(1)
                           for ax, g in zip(self.axes, grids)], axis=1)
        v_flat = v.ravel()
        c2 = c_const / 2.0
        m2 = np.ceil((np.maximum(v_flat, 0.0) * (1 - alpha) * eps / c2) ** (2.0 / (c + 2)))
        m2 = np.maximum(m2, 1).astype(np.int64)
        # every sub-cell must hold >= 1 value on every axis
        m2 = np.minimum(m2, widths.min(axis=1).astype(np.float64).clip(max=2**31)
                        .astype(np.int64))
        self.m2 = m2
        n_sub = m2 ** c
        sub_base = np.concatenate([[0], np.cumsum(n_sub)[:-1]])

        # level-2 histogram: sub-cell of each point inside its level-1 cell
        cells = [ax.cell(o) for ax, o in zip(self.axes, offs)]
        g = np.ravel_multi_index(cells, shape1) if pts.shape[0] else np.zeros(0, np.int64)
        local = np.zeros(g.shape[0], dtype=np.int64)
        for k, ax in enumerate(self.axes):
            within = offs[k] - ax.starts[cells[k]]
            jk = _split_index(within, widths[g, k], m2[g])
            local = local * m2[g] + jk
        total_sub = int(n_sub.sum())
        u = np.bincount(sub_base[g] + local, minlength=total_sub).astype(np.float64)
        u += rng.laplace(scale=1.0 / ((1 - alpha) * eps), size=total_sub)

        # constrained inference between the two levels (paper §IV)
        owner = np.repeat(np.arange(v_flat.size), n_sub)
        s = np.bincount(owner, weights=u, minlength=v_flat.size)
        mm = n_sub.astype(np.float64)
        v_adj = (alpha**2 * mm * v_flat + (1 - alpha)**2 * s) / (alpha**2 * mm + (1 - alpha)**2)
        u_adj = u + ((v_adj - s) / mm)[owner]
        self.level1 = v_adj.reshape(shape1)
        self._level1_est = GridEstimate(self.axes, self.level1)

        # flat prefix arrays of every level-2 grid, (m2+1)^c each
        pref_sizes = (m2 + 1) ** c
        self._pref_base = np.concatenate([[0], np.cumsum(pref_sizes)[:-1]]).astype(np.int64)
        pref = np.empty(int(pref_sizes.sum()))
        for mval in np.unique(m2):
            sel = np.nonzero(m2 == mval)[0]
            blocks = u_adj[(sub_base[sel][:, None] + np.arange(mval ** c)[None, :])]
            blocks = blocks.reshape((sel.size,) + (int(mval),) * c)
            p = np.zeros((sel.size,) + (int(mval) + 1,) * c)
            p[(slice(None),) + (slice(1, None),) * c] = blocks
            for k in range(c):
                np.cumsum(p, axis=k + 1, out=p)
            size = (int(mval) + 1) ** c
            pref[(self._pref_base[sel][:, None] + np.arange(size)[None, :]).ravel()] = \
                p.reshape(sel.size, size).ravel()
        self._pref = pref
        self._widths = widths
        self._grids = grids.T

    @property
    def num_cells(self) -> int:
        return int(self.level1.size + (self.m2 ** self.c).sum())

    def answer(self, lo, hi, chunk: int = 512) -> np.ndarray:
        """Estimated counts of inclusive rectangles (q, c); O(q m1^c) + O(pairs 6^c)."""
        qlo, qhi = _query_offsets(lo, hi, self.axes)
        q = qlo[0].shape[0]
        out = np.zeros(q)
        c = self.c
        for s0 in range(0, q, chunk):
            s1 = min(q, s0 + chunk)
            ql = [x[s0:s1] for x in qlo]
            qh = [x[s0:s1] for x in qhi]
            full = np.ones((s1 - s0, self.level1.size), dtype=bool)
            touch = np.ones_like(full)
            for k, ax in enumerate(self.axes):
                st = ax.starts[self._grids[:, k]][None, :]
                en = ax.ends[self._grids[:, k]][None, :]
                lk, hk = ql[k][:, None], qh[k][:, None]
                full &= (lk <= st) & (en <= hk)
                touch &= (lk <= en) & (st <= hk)
            out[s0:s1] = full.astype(np.float64) @ self.level1.ravel()
            qi, gi = np.nonzero(touch & ~full)
            if qi.size == 0:
                continue
            m2 = self.m2[gi]
            a, b, fa, fb = [], [], [], []
            for k, ax in enumerate(self.axes):
                st = ax.starts[self._grids[gi, k]]
                en = ax.ends[self._grids[gi, k]]
                w = self._widths[gi, k]
                lo_in = np.maximum(ql[k][qi], st) - st
                hi_in = np.minimum(qh[k][qi], en) - st
                ak = _split_index(lo_in, w, m2)
                bk = _split_index(hi_in, w, m2)
                sa, ea = _split_bound(ak, w, m2), _split_bound(ak + 1, w, m2)
                sb, eb = _split_bound(bk, w, m2), _split_bound(bk + 1, w, m2)
                end_a = np.where(ak == bk, hi_in, ea - _U64(1))
                fa.append(((end_a - lo_in).astype(np.float64) + 1) / (ea - sa).astype(np.float64))
                fb.append(((hi_in - sb).astype(np.float64) + 1) / (eb - sb).astype(np.float64))
                a.append(ak); b.append(bk)
            strides = np.stack([(m2 + 1) ** (c - 1 - k) for k in range(c)], axis=1)
            part = _box_sum(self._pref, self._pref_base[gi], strides, a, b, fa, fb)
            out[s0:s1] += np.bincount(qi, weights=part, minlength=s1 - s0)
        return out
