"""Interval peers for the interval-synopsis benchmarks (not part of the package).

* The full-domain hierarchical histogram (Hay, Rastogi, Miklau, Suciu 2010;
  Qardaji, Yang, Li 2013) with branching b over all D values of the domain:
  every node of every level gets Laplace(levels/eps) noise, empty or not;
  a query is the sum of the nodes of its minimal b-ary cover.
  - :class:`HierarchicalHistogram` materialises it (D <= 2^22);
  - :func:`cover_sizes` / :func:`expected_squared_error` give the exact
    expected squared error of each query for any D <= 2^64, analytically;
  - :func:`simulate_errors` draws the exact joint error of a batch of queries
    for any D by materialising only the nodes those queries touch (the node
    noises are independent, so this is the same distribution as the full
    release restricted to the batch).
* :func:`opendp_interval_answers`: OpenDP's ``make_b_ary_tree`` + Laplace +
  ``make_consistent_b_ary_tree`` on the data bucketed into equal-width buckets.

Noise for the hierarchical histogram comes from ``numpy.random.Generator``
(benchmark peer; seeds for reproducibility only).  OpenDP draws its own noise.

References
----------
M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the accuracy of
differentially private histograms through consistency", PVLDB 2010 (the
hierarchical histogram H_b and consistency, §4).
W. Qardaji, W. Yang, N. Li, "Understanding hierarchical methods for
differentially private histograms", PVLDB 2013 (branching factor choice).
OpenDP 0.16, ``opendp.transformations.make_b_ary_tree`` and
``make_consistent_b_ary_tree``.
"""
from __future__ import annotations

import numpy as np

from peers_rectangles import EqualWidthAxis, to_offsets

__all__ = [
    "tree_levels",
    "cover_sizes",
    "expected_squared_error",
    "rmse_from_variances",
    "simulate_errors",
    "expected_max_error",
    "HierarchicalHistogram",
    "opendp_interval_answers",
]

_U64 = np.uint64


def _domain_size(domain) -> tuple[int, int]:
    lo, hi = int(domain[0]), int(domain[1])
    if hi < lo or hi - lo + 1 > 1 << 64:
        raise ValueError(f"domain must be (lo, hi) with 1 <= hi - lo + 1 <= 2^64, got {domain}")
    return lo, hi - lo + 1


def tree_levels(size: int, branching: int) -> int:
    """Levels h of the b-ary tree over ``size`` values: least h >= 1 with b^h >= size.

    Level l (0 = leaves) has nodes covering b^l consecutive values; the root
    level (one node for everything) is not released: it only helps the
    whole-domain query, which its b children answer too.
    """
    h, span = 1, branching
    while span < size:
        h += 1
        span *= branching
    return h


def _query_offsets(lo, hi, domain):
    dlo, size = _domain_size(domain)
    lo, hi = np.atleast_1d(np.asarray(lo)), np.atleast_1d(np.asarray(hi))
    if lo.shape != hi.shape or lo.ndim != 1:
        raise ValueError("lo and hi must be 1-D arrays of equal length")
    if lo.size and (np.any(lo > hi) or int(lo.min()) < dlo or int(hi.max()) > dlo + size - 1):
        raise ValueError("queries need domain lo <= lo <= hi <= domain hi")
    return to_offsets(lo, dlo), to_offsets(hi, dlo), size


def _cover_levels(l, r, size, b):
    """Yield, per level, the minimal-cover nodes of inclusive offsets [l, r].

    Yields ``(level, start, count)`` arrays: at that level the cover uses
    ``count`` nodes from index ``start`` on the left end and, for levels below
    the top, also ``rcount`` nodes ending at index ``r``; returned as two
    (start, count) runs.  Pure uint64 integer arithmetic, no overflow: a
    parent index is at most 2^64 / b and counts are < b (< 2b at the top).
    """
    h = tree_levels(size, b)
    bb = _U64(b)
    l, r = l.copy(), r.copy()
    active = np.ones(l.shape, dtype=bool)
    for level in range(h):
        if level == h - 1:
            cnt = np.where(active, r - l + _U64(1), _U64(0))
            yield level, (l, cnt), (r, np.zeros_like(cnt))
            return
        lp = l // bb + (l % bb != 0)           # first full parent
        rp1 = r // bb + (r % bb == bb - _U64(1))  # one past the last full parent
        has_parent = active & (lp < rp1)
        done = active & ~has_parent
        left = np.where(has_parent, (bb - l % bb) % bb, np.where(done, r - l + _U64(1), _U64(0)))
        right = np.where(has_parent, (r % bb + _U64(1)) % bb, _U64(0))
        yield level, (l, left), (r, right)
        active = has_parent
        l = np.where(has_parent, lp, l)
        r = np.where(has_parent, rp1 - _U64(1), r)


def cover_sizes(lo, hi, domain, branching: int) -> np.ndarray:
    """Number of nodes in the minimal b-ary cover of each inclusive query.

    O(q log_b D), exact integer arithmetic for D up to 2^64.
    """
    l, r, size = _query_offsets(lo, hi, domain)
    total = np.zeros(l.shape, dtype=np.int64)
    for _, (_, lc), (_, rc) in _cover_levels(l, r, size, branching):
        total += lc.astype(np.int64) + rc.astype(np.int64)
    return total


def expected_squared_error(lo, hi, domain, branching: int, epsilon: float) -> np.ndarray:
    """Exact E[(answer - true)^2] per query: |cover| * 2 (h/eps)^2.

    Each point is counted in one node per level, so the L1 sensitivity of
    the h released levels is h and each node gets Laplace(h/eps) (variance
    2 (h/eps)^2); the cover's nodes are distinct, their noises independent.
    """
    _, size = _domain_size(domain)
    scale = tree_levels(size, branching) / epsilon
    return cover_sizes(lo, hi, domain, branching) * 2.0 * scale * scale


def rmse_from_variances(var: np.ndarray) -> float:
    """RMSE over a workload = sqrt(mean expected squared error)."""
    return float(np.sqrt(np.mean(var)))


def _cover_nodes(l, r, size, b):
    """Flat (query, level, node) arrays of every minimal-cover node."""
    qs, levels, nodes = [], [], []
    q_idx = np.arange(l.shape[0])
    for level, (ls, lc), (rs, rc) in _cover_levels(l, r, size, b):
        width = int(max(lc.max(initial=0), rc.max(initial=0)))
        for t in range(width):
            tt = _U64(t)
            m = lc > tt
            qs.append(q_idx[m]); levels.append(np.full(m.sum(), level)); nodes.append(ls[m] + tt)
            m = rc > tt
            qs.append(q_idx[m]); levels.append(np.full(m.sum(), level)); nodes.append(rs[m] - tt)
    if not qs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.uint64)
    return np.concatenate(qs), np.concatenate(levels), np.concatenate(nodes)


def simulate_errors(lo, hi, domain, branching: int, epsilon: float, *, reps: int = 1,
                    seed=None) -> np.ndarray:
    """Exact draws of the joint error vector of the queries, for any D <= 2^64.

    Only the nodes used by some query's cover are drawn (once each, shared by
    every query using them), which gives exactly the distribution of the
    full release's errors on this batch.  Returns shape (reps, q).
    Cost O(reps * q * b log_b D).
    """
    rng = np.random.default_rng(seed)
    l, r, size = _query_offsets(lo, hi, domain)
    scale = tree_levels(size, branching) / epsilon
    qi, lev, node = _cover_nodes(l, r, size, branching)
    key = np.lexsort((node, lev))
    # unique (level, node) pairs
    lev_s, node_s = lev[key], node[key]
    new = np.ones(key.size, dtype=bool)
    new[1:] = (lev_s[1:] != lev_s[:-1]) | (node_s[1:] != node_s[:-1])
    uid = np.empty(key.size, dtype=np.int64)
    uid[key] = np.cumsum(new) - 1
    n_unique = int(new.sum())
    out = np.empty((reps, l.shape[0]))
    for k in range(reps):
        noise = rng.laplace(scale=scale, size=n_unique)
        out[k] = np.bincount(qi, weights=noise[uid], minlength=l.shape[0])
    return out


def expected_max_error(lo, hi, domain, branching: int, epsilon: float, *, reps: int = 20,
                       seed=None) -> float:
    """Monte-Carlo E[max_q |error_q|] from :func:`simulate_errors` (exact joint law)."""
    e = simulate_errors(lo, hi, domain, branching, epsilon, reps=reps, seed=seed)
    return float(np.abs(e).max(axis=1).mean())


class HierarchicalHistogram:
    """Materialised b-ary hierarchical histogram over every value of the domain.

    Level l (l = 0..h-1) holds ceil(D / b^l) node counts, each plus
    Laplace(h/eps).  eps-DP: one point changes one node per level.

    Parameters
    ----------
    values : 1-D integer array
    domain : (lo, hi), inclusive; D = hi - lo + 1 <= 2^22
    epsilon : float
    branching : int, b >= 2
    seed : int or Generator -- for benchmarks/tests only
    """

    MAX_SIZE = 1 << 22

    def __init__(self, values, domain, epsilon, branching=2, seed=None):
        rng = np.random.default_rng(seed)
        self.domain = domain
        lo, size = _domain_size(domain)
        if size > self.MAX_SIZE:
            raise ValueError(f"domain has {size} values; materialising needs <= 2^22 "
                             "(use expected_squared_error / simulate_errors)")
        v = np.asarray(values)
        if v.size and (int(v.min()) < lo or int(v.max()) > lo + size - 1):
            raise ValueError("values outside the domain")
        off = to_offsets(v, lo).astype(np.int64)
        self.branching, self.size = int(branching), size
        self.levels = tree_levels(size, self.branching)
        self.scale = self.levels / epsilon
        self.noisy = []
        span = 1
        for _ in range(self.levels):
            n_nodes = -(-size // span)
            hist = np.bincount(off // span, minlength=n_nodes).astype(np.float64)
            self.noisy.append(hist + rng.laplace(scale=self.scale, size=n_nodes))
            span *= self.branching

    def answer(self, lo, hi) -> np.ndarray:
        """Sum of the minimal-cover nodes' noisy counts. O(q b log_b D)."""
        l, r, size = _query_offsets(lo, hi, self.domain)
        qi, lev, node = _cover_nodes(l, r, size, self.branching)
        vals = np.empty(qi.size)
        for level in range(self.levels):
            m = lev == level
            vals[m] = self.noisy[level][node[m].astype(np.int64)]
        return np.bincount(qi, weights=vals, minlength=l.shape[0])


def opendp_interval_answers(values, domain, epsilon, lo, hi, *, buckets: int = 1 << 16,
                            branching: int | None = None) -> np.ndarray:
    """Interval answers from OpenDP's consistent b-ary tree over equal-width buckets.

    The domain is cut into ``buckets`` equal-width buckets (exact integer
    boundaries); the bucket histogram (L1 sensitivity 1 under add/remove of
    one value) goes through OpenDP's ``make_b_ary_tree`` (sensitivity x
    number of tree levels, computed by OpenDP), ``then_laplace`` (integer,
    i.e. discrete Laplace noise, scale = levels / eps, checked with
    ``measurement.map(1) <= eps``) and ``make_consistent_b_ary_tree``
    (Hay et al. 2010 least squares, post-processing) which returns consistent
    leaf estimates.  A query sums the leaves fully inside it plus, for the two
    end buckets, the leaf times the covered fraction (uniformity).

    ``branching`` defaults to ``opendp.transformations.choose_branching_factor``.
    Raises ImportError if opendp is missing.
    """
    import opendp.prelude as dp
    dp.enable_features("contrib")
    dlo, size = _domain_size(domain)
    axis = EqualWidthAxis(dlo, dlo + size - 1, buckets)
    v = np.asarray(values)
    hist = np.bincount(axis.cell(to_offsets(v, dlo)), minlength=axis.m)
    b = int(branching) if branching else int(dp.t.choose_branching_factor(axis.m))
    space = (dp.vector_domain(dp.atom_domain(T=dp.i64)), dp.l1_distance(T=dp.i64))
    tree = dp.t.make_b_ary_tree(*space, leaf_count=axis.m, branching_factor=b)
    levels = tree.map(1)
    meas = (tree >> dp.m.then_laplace(scale=float(levels) / float(epsilon))
            >> dp.t.make_consistent_b_ary_tree(branching_factor=b, TIA=dp.i64, TOA=dp.f64))
    if meas.map(1) > epsilon * (1 + 1e-12):
        raise RuntimeError(f"OpenDP reports eps = {meas.map(1)} > {epsilon}")
    leaves = np.asarray(meas(hist.astype(np.int64).tolist()), dtype=np.float64)[:axis.m]
    ql, qh, _ = _query_offsets(lo, hi, domain)
    a, bq, fa, fb = axis.pieces(ql, qh)
    prefix = np.concatenate([[0.0], np.cumsum(leaves)])
    inner = prefix[np.maximum(bq, a + 1)] - prefix[a + 1]
    return fa * leaves[a] + np.where(a == bq, 0.0, inner + fb * leaves[bq])
