"""DAWA peer (1-D) for the interval benchmarks (not part of the package).

DAWA (Li, Hay, Miklau, Wang, PVLDB 2014) as in DPBench's reference code
(``dpcomp_core.algorithm.dawa.dawa_engine``: ``L1partition_approx`` then
``greedyH``, budget ratio 0.5), reimplemented in vectorised numpy:

0. **Bucketing.**  The integer domain is cut into ``min(2^16, D)`` equal-width
   buckets (exact integer boundaries, :class:`peers_rectangles.EqualWidthAxis`);
   ``x`` = bucket histogram.  DAWA works on a histogram; 2^16 cells is the
   resolution at which its stages stay tractable (DPBench's domains are
   <= 4096 cells).
1. **Private L1 partition** (budget ``eps1 = ratio * eps``).  Candidate
   buckets are all intervals of cells whose length is a power of two (every
   start position), as in DPBench's ``L1partition_approx``.  Cost of an
   interval = L1 deviation of its cells from their mean + ``1/eps2`` +
   Laplace noise of scale ``(2 - 1/len - 1/n) / eps1`` (no noise for length
   1), clamped below at ``1/eps2`` -- DPBench's exact cost.  The least-cost
   partition into candidate intervals is found by dynamic programming over
   the cells (ties go to the longer interval, as in DPBench).
   The L1 deviations of all O(n log n) windows are computed exactly with a
   merge-sort tree: a window of length 2^k is split into O(k) aligned dyadic
   blocks; for each block the count and sum of cells above the window mean
   come from a binary search in the block's sorted values and prefix sums
   (deviation = 2 * (sum_above - count_above * mean)).  They do not depend
   on epsilon or noise, so :class:`WindowDeviations` can be shared by builds.
2. **GreedyH** (budget ``eps2 = (1 - ratio) * eps``) on the workload reformed
   onto the partition's buckets (``Q[i, j]`` = mean over bucket j's cells of
   query i's weight on each cell, which is the covered fraction of the cell),
   binary hierarchy split as DPBench splits (sizes floor/ceil halves), the
   same leaf rules (a single bucket, or a node whose workload columns are
   all equal, which becomes one uniform query), the same local weight search
   (``granu = 100`` values of ``perc``, the ``decay = 2^(-depth/2)`` term),
   Laplace(1/eps2) on each weighted query, then least squares and uniform
   expansion inside each partition bucket and inside each cell.

Implementation choices (same estimator, different arithmetic):

* GreedyH's dense ``inv = (A^T A)^{-1}`` matrices are never formed.  Only
  ``u = inv 1`` enters the weight search, and by Sherman-Morrison it obeys
  ``u_node = concat(u_children) / (perc^2 + k (1 - perc)^2)`` with
  ``k = sum(u_children)``; the least-squares estimate is computed by the
  exact two-pass (bottom-up inverse-variance combination, top-down
  redistribution) solution of a tree of weighted range sums, which is the
  same estimate as ``inv A^T y``.  This makes 10^4-bucket partitions
  feasible (DPBench's dense version is O(n^2) memory).
* Quadratic forms use the workload matrix ``Q`` (the paper's error
  ``||Q A^+||_F^2``: ``||Q v||^2``).  DPBench's port passes ``Q^T Q`` where
  the original GreedyH code takes the workload, so its forms are
  ``||Q^T Q v||^2``; we follow the paper (``form="q"``), and ``form="qtq"``
  reproduces DPBench's variant (cost O(q^2) per node batch).
* Noise is ``numpy.random.Generator`` (continuous Laplace), seeded; the
  clamped noisy cost and DP are as in DPBench.

DAWA receives the query workload, as in the paper: the same queries it is
then evaluated on.

References
----------
C. Li, M. Hay, G. Miklau, Y. Wang, "A data- and workload-aware algorithm for
range queries under differential privacy", PVLDB 7(5), 2014.
M. Hay, A. Machanavajjhala, G. Miklau, Y. Chen, D. Zhang, "Principled
evaluation of differentially private algorithms using DPBench", SIGMOD 2016;
reference code github.com/dpcomp-org/dpcomp_core (``algorithm/dawa``).
"""
from __future__ import annotations

import numpy as np

from peers_rectangles import EqualWidthAxis, to_offsets

__all__ = ["WindowDeviations", "l1_partition", "Dawa", "brute_force_costs"]


class WindowDeviations:
    """L1 deviations from the mean of every cell window of power-of-two length.

    ``dev[k][s]`` = sum_{t=s}^{s+2^k-1} |x_t - mean| for s = 0..n-2^k.
    Exact up to float rounding, O(n log^2 n) vectorised work.
    """

    def __init__(self, x):
        x = np.asarray(x, dtype=np.float64)
        n = x.size
        if n == 0:
            raise ValueError("empty histogram")
        self.n = n
        self.x = x
        levels = max(0, (n - 1).bit_length())
        P = 1 << levels
        xp = np.zeros(P)
        xp[:n] = x
        shift = float(xp.max()) + 1.0
        keys, csum = [], []
        for lev in range(levels + 1):
            blk = np.sort(xp.reshape(-1, 1 << lev), axis=1)
            keys.append((np.arange(P >> lev, dtype=np.float64)[:, None] * shift + blk).ravel())
            csum.append(np.concatenate([[0.0], np.cumsum(blk.ravel())]))
        cx = np.concatenate([[0.0], np.cumsum(x)])
        self.dev = []
        for k in range(n.bit_length()):
            L = 1 << k
            if L > n:
                break
            s = np.arange(n - L + 1)
            mean = (cx[s + L] - cx[s]) / L
            a_sum = np.zeros(s.size)
            a_cnt = np.zeros(s.size)
            l, r = s.copy(), s + L
            for lev in range(levels + 1):
                act = l < r
                if not act.any():
                    break
                for side in (0, 1):
                    if side == 0:
                        m = act & ((l & 1) == 1)
                        blocks = l[m]
                        l = np.where(m, l + 1, l)
                    else:
                        m = (l < r) & ((r & 1) == 1)
                        r = np.where(m, r - 1, r)
                        blocks = r[m]
                    if blocks.size:
                        idx = np.searchsorted(keys[lev], blocks * shift + mean[m], side="right")
                        end = (blocks + 1) << lev
                        a_cnt[m] += end - idx
                        a_sum[m] += csum[lev][end] - csum[lev][idx]
                l >>= 1
                r >>= 1
            self.dev.append(np.maximum(2.0 * (a_sum - a_cnt * mean), 0.0))


def brute_force_costs(x):
    """Dict {(start, length): L1 deviation} for every power-of-two window (tests)."""
    x = np.asarray(x, dtype=np.float64)
    out = {}
    L = 1
    while L <= x.size:
        for s in range(x.size - L + 1):
            w = x[s:s + L]
            out[(s, L)] = float(np.abs(w - w.mean()).sum())
        L *= 2
    return out


def l1_partition(dev: WindowDeviations, eps1: float, eps2: float, rng, *, noise=True):
    """DPBench's approximate noisy L1 partition; returns bucket boundaries.

    Returns ``bounds`` (sorted, 0 = bounds[0] < ... < bounds[-1] = n): bucket j
    holds cells ``bounds[j] .. bounds[j+1] - 1``.  ``noise=False`` gives the
    noise-free least-cost partition (tests).
    """
    n = dev.n
    inv2 = 1.0 / eps2
    K = len(dev.dev)
    cost = np.full((n, K), np.inf)                 # cost[i, k]: window of length 2^k ending at i
    for k, d in enumerate(dev.dev):
        L = 1 << k
        c = d + inv2
        if noise and L > 1:
            c = c + rng.laplace(scale=(2.0 - 1.0 / L - 1.0 / n) / eps1, size=d.size)
        cost[L - 1:, k] = np.maximum(c, inv2)
    rows = cost.tolist()
    best = [0.0] * (n + 1)
    back = [0] * (n + 1)
    for i in range(n):
        row = rows[i]
        bi, bk = best[i] + row[0], 0
        L, k = 2, 1
        while L <= i + 1 and k < K:
            v = best[i + 1 - L] + row[k]
            if v <= bi:
                bi, bk = v, k
            L <<= 1
            k += 1
        best[i + 1] = bi
        back[i + 1] = i + 1 - (1 << bk)
    bounds = [n]
    j = n
    while j > 0:
        j = back[j]
        bounds.append(j)
    return np.array(bounds[::-1], dtype=np.int64), best[n]


class _Workload:
    """Range queries over m buckets: weight fa on bucket a, 1 on a+1..b-1, fb on b."""

    def __init__(self, a, b, fa, fb):
        self.a, self.b = a.astype(np.int64), b.astype(np.int64)
        same = self.a == self.b
        self.fa = fa.astype(np.float64)
        self.fb = np.where(same, 0.0, fb.astype(np.float64))
        self.q = self.a.size

    def value(self, col):
        """Q[i, col[i]] for each query i."""
        return np.where(col == self.a, self.fa,
                        np.where(col == self.b, self.fb,
                                 ((col > self.a) & (col < self.b)).astype(np.float64)))

    def col_norm2(self, col):
        """||Q[:, c]||^2 for each c in the array col."""
        col = np.asarray(col)
        out = np.zeros(col.size)
        step = max(1, 4_000_000 // max(self.q, 1))
        for s in range(0, col.size, step):
            c = col[s:s + step][None, :]
            a, b = self.a[:, None], self.b[:, None]
            v = np.where(c == a, self.fa[:, None],
                         np.where(c == b, self.fb[:, None], ((c > a) & (c < b)) * 1.0))
            out[s:s + c.shape[1]] = (v * v).sum(axis=0)
        return out

    def weighted_sums(self, lo, hi, pu, u):
        """Y[i, t] = sum_{c in [lo_t, hi_t)} Q[i, c] u[c]  (pu = prefix sums of u)."""
        a, b = self.a[:, None], self.b[:, None]
        L, H = lo[None, :], hi[None, :]
        il = np.maximum(L, a + 1)
        ih = np.minimum(H, b)                      # exclusive end of the interior part
        y = np.where(ih > il, pu[np.clip(ih, 0, pu.size - 1)] - pu[np.clip(il, 0, pu.size - 1)], 0.0)
        ina = (a >= L) & (a < H)
        y += np.where(ina, self.fa[:, None] * u[self.a][:, None], 0.0)
        inb = (b >= L) & (b < H) & (b != a)
        y += np.where(inb, self.fb[:, None] * u[self.b][:, None], 0.0)
        return y

    def change_points(self, m):
        """Sorted columns c with Q[:, c] != Q[:, c-1] for some query."""
        cand = np.concatenate([self.a, self.a + 1, self.b, self.b + 1])
        qi = np.tile(np.arange(self.q), 4)
        ok = (cand >= 1) & (cand < m)
        cand, qi = cand[ok], qi[ok]
        sub = _Workload.__new__(_Workload)
        sub.a, sub.b, sub.fa, sub.fb, sub.q = self.a[qi], self.b[qi], self.fa[qi], self.fb[qi], qi.size
        diff = sub.value(cand) != sub.value(cand - 1)
        return np.unique(cand[diff])


class Dawa:
    """DAWA over a 1-D integer domain, given the workload (see module docstring).

    Parameters
    ----------
    values : 1-D integer array
    domain : (lo, hi) inclusive, D <= 2^64
    epsilon : float
    lo, hi : inclusive query bounds (the workload DAWA optimises for)
    buckets : int, cells of the histogram (min(buckets, D))
    ratio : float, partition share of the budget (0.5)
    branch, granu : GreedyH's branching factor and search granularity (2, 100)
    form : "q" (paper) or "qtq" (DPBench's quadratic forms)
    deviations : WindowDeviations of the same histogram, to reuse across builds
    seed : int or Generator (benchmarks only)
    """

    def __init__(self, values, domain, epsilon, lo, hi, *, buckets=1 << 16, ratio=0.5,
                 branch=2, granu=100, form="q", deviations=None, seed=None):
        rng = np.random.default_rng(seed)
        dlo, dhi = int(domain[0]), int(domain[1])
        self.domain = (dlo, dhi)
        self.axis = ax = EqualWidthAxis(dlo, dhi, min(int(buckets), dhi - dlo + 1))
        v = np.asarray(values)
        if v.size and (int(v.min()) < dlo or int(v.max()) > dhi):
            raise ValueError("values outside the domain")
        x = np.bincount(ax.cell(to_offsets(v, dlo)), minlength=ax.m).astype(np.float64)
        self.x = x
        n = ax.m
        eps1, eps2 = ratio * epsilon, (1.0 - ratio) * epsilon
        if deviations is None or deviations.n != n or not np.array_equal(deviations.x, x):
            deviations = WindowDeviations(x)
        self.deviations = deviations
        self.bounds, _ = l1_partition(deviations, eps1, eps2, rng)
        nb = self.bounds.size - 1
        sizes = np.diff(self.bounds).astype(np.float64)
        y = np.add.reduceat(x, self.bounds[:-1])
        # workload on cells, then on partition buckets
        ql, qh = to_offsets(np.atleast_1d(lo), dlo), to_offsets(np.atleast_1d(hi), dlo)
        ca, cb, fa, fb = ax.pieces(ql, qh)
        cfb = np.where(ca == cb, 0.0, fb)
        A = np.searchsorted(self.bounds, ca, side="right") - 1
        B = np.searchsorted(self.bounds, cb, side="right") - 1

        def bucket_weight(j):
            s, e = self.bounds[j], self.bounds[j + 1]          # cells [s, e)
            il, ih = np.maximum(s, ca + 1), np.minimum(e, cb)
            w = np.maximum(ih - il, 0).astype(np.float64)
            w += np.where((ca >= s) & (ca < e), fa, 0.0)
            w += np.where((cb >= s) & (cb < e) & (cb != ca), cfb, 0.0)
            return w / sizes[j]

        FA, FB = bucket_weight(A), bucket_weight(B)
        self.workload = W = _Workload(A, B, FA, np.where(A == B, 0.0, FB))
        est = self._greedy_h(W, y, nb, eps2, branch, granu, form, rng)
        # uniform expansion: partition bucket -> cells
        self.cells = np.repeat(est / sizes, np.diff(self.bounds))
        self._prefix = np.concatenate([[0.0], np.cumsum(self.cells)])

    # ------------------------------------------------------------ GreedyH

    def _greedy_h(self, W, y, m, eps, branch, granu, form, rng):
        G = None
        if form == "qtq":
            G = self._gram(W, m)
        elif form != "q":
            raise ValueError("form must be 'q' or 'qtq'")
        cps = W.change_points(m)
        # ---- tree, level by level (DPBench's split sizes and leaf rules)
        levels = []                       # per depth: dict of arrays
        lo, hi = np.array([0]), np.array([m])
        parent = np.array([-1])
        while lo.size:
            size = hi - lo
            inside = np.searchsorted(cps, hi - 1, side="right") - np.searchsorted(cps, lo + 1, side="left")
            leaf = (size == 1) | (inside == 0)
            lev = dict(lo=lo, hi=hi, parent=parent, leaf=leaf)
            levels.append(lev)
            idx = np.nonzero(~leaf)[0]
            cl, ch, cp = [], [], []
            s, n = lo[idx], size[idx]
            small = n <= branch
            # n <= branch: singletons
            for t in range(branch):
                mm = small & (t < n)
                cl.append(s[mm] + t); ch.append(s[mm] + t + 1); cp.append(idx[mm])
            big = ~small
            nb_, sb, ib = n[big], s[big], idx[big]
            rem = nb_ % branch
            step = (nb_ - rem) // branch
            swi = (branch - rem) * step
            for t in range(branch):
                # DPBench's separators: sizes step (first branch-rem children), step+1 (the rest)
                st = np.where(t <= branch - rem, t * step, swi + (t - (branch - rem)) * (step + 1))
                t1 = t + 1
                en = np.where(t1 <= branch - rem, t1 * step, swi + (t1 - (branch - rem)) * (step + 1))
                cl.append(sb + st); ch.append(sb + en); cp.append(ib)
            lo = np.concatenate(cl) if cl else np.zeros(0, np.int64)
            hi = np.concatenate(ch) if ch else np.zeros(0, np.int64)
            parent = np.concatenate(cp) if cp else np.zeros(0, np.int64)
            order = np.argsort(lo, kind="stable")
            lo, hi, parent = lo[order], hi[order], parent[order]
        # ---- bottom-up weight search
        u = np.zeros(m)
        for d in range(len(levels) - 1, -1, -1):
            lev = levels[d]
            K = lev["lo"].size
            err = np.zeros(K); kk = np.zeros(K); M = np.zeros(K); p = np.ones(K)
            lf = lev["leaf"]
            # leaves: err = M = ||Q[:, lo]||^2 (column norm; uniform leaf = its first column)
            if lf.any():
                lcol = lev["lo"][lf]
                if G is None:
                    e = W.col_norm2(lcol)
                else:
                    Y = W.weighted_sums(lcol, lcol + 1, np.arange(m + 1, dtype=np.float64),
                                        np.ones(m))
                    e = np.einsum("ij,ij->j", Y, G @ Y)
                err[lf] = e; M[lf] = e; kk[lf] = 1.0
                sl = _ranges_mask(lev["lo"][lf], lev["hi"][lf], m)
                sizes = (lev["hi"] - lev["lo"])[lf]
                u[sl[0]] = (1.0 / sizes)[sl[1]]
            ii = np.nonzero(~lf)[0]
            if ii.size:
                ch = levels[d + 1]
                cpar = np.searchsorted(ii, ch["parent"])       # child's parent position in ii
                sumerr = np.bincount(cpar, weights=ch["err"], minlength=ii.size)
                ksum = np.bincount(cpar, weights=ch["k"], minlength=ii.size)
                m1 = np.bincount(cpar, weights=ch["M"], minlength=ii.size)
                pu = np.concatenate([[0.0], np.cumsum(u)])
                mm = np.zeros(ii.size)
                q = W.q
                step = max(1, 4_000_000 // max(q, 1))
                for s0 in range(0, ii.size, step):
                    sel = ii[s0:s0 + step]
                    Y = W.weighted_sums(lev["lo"][sel], lev["hi"][sel], pu, u)
                    mm[s0:s0 + sel.size] = (np.einsum("ij,ij->j", Y, Y) if G is None
                                            else np.einsum("ij,ij->j", Y, G @ Y))
                decay = 1.0 / branch ** (d / 2.0)
                j = np.arange(granu, dtype=np.float64)
                err1 = (granu - j) ** 2
                err2 = j ** 2 * decay
                tot = (1.0 / err1[None, :]) * (sumerr[:, None] - ((mm - m1) * decay + m1)[:, None]
                                               * err2[None, :] / (err1[None, :] + err2[None, :]
                                                                  * ksum[:, None]))
                jb = np.argmin(tot, axis=1)
                e = tot[np.arange(ii.size), jb] * granu ** 2
                perc = 1.0 - jb / granu
                scale = 1.0 / (perc ** 2 + ksum * (1.0 - perc) ** 2)
                err[ii] = e; p[ii] = perc; kk[ii] = ksum * scale; M[ii] = mm * scale ** 2
                sl = _ranges_mask(lev["lo"][ii], lev["hi"][ii], m)
                u[sl[0]] *= scale[sl[1]]
            lev.update(err=err, k=kk, M=M, p=p)
        # ---- weights top-down: own weight = (1 - perc) (leaves 1) x product of ancestors' perc
        for d, lev in enumerate(levels):
            mult = np.ones(lev["lo"].size) if d == 0 else levels[d - 1]["mult"][lev["parent"]] \
                * levels[d - 1]["p"][lev["parent"]]
            lev["mult"] = mult
            lev["w"] = mult * np.where(lev["leaf"], 1.0, 1.0 - lev["p"])
        # ---- measurements
        py = np.concatenate([[0.0], np.cumsum(y)])
        for lev in levels:
            true = py[lev["hi"]] - py[lev["lo"]]
            w = lev["w"]
            obs = w * true + rng.laplace(scale=1.0 / eps, size=w.size)
            lev["obs"] = np.where(w > 0, obs, 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                lev["z"] = np.where(w > 0, obs / np.where(w > 0, w, 1.0), 0.0)
                lev["var"] = np.where(w > 0, 1.0 / np.where(w > 0, w, 1.0) ** 2, np.inf)
        # ---- least squares on the tree: bottom-up combine, top-down redistribute
        for d in range(len(levels) - 1, -1, -1):
            lev = levels[d]
            zh, vh = lev["z"].copy(), lev["var"].copy()
            ii = np.nonzero(~lev["leaf"])[0]
            if ii.size:
                ch = levels[d + 1]
                cpar = np.searchsorted(ii, ch["parent"])
                s = np.bincount(cpar, weights=ch["zh"], minlength=ii.size)
                vs = np.bincount(cpar, weights=ch["vh"], minlength=ii.size)
                vo = vh[ii]
                with np.errstate(divide="ignore", invalid="ignore"):
                    inv = np.where(np.isinf(vo), 0.0, 1.0 / vo)
                    comb_v = 1.0 / (inv + 1.0 / vs)
                    comb_z = comb_v * (np.where(np.isinf(vo), 0.0, lev["z"][ii] * inv) + s / vs)
                zh[ii], vh[ii] = comb_z, comb_v
                lev["s"], lev["vs"] = s, vs
            lev["zh"], lev["vh"] = zh, vh
        levels[0]["F"] = levels[0]["zh"].copy()
        for d in range(1, len(levels)):
            lev, par = levels[d], levels[d - 1]
            ii = np.nonzero(~par["leaf"])[0]
            cpar = np.searchsorted(ii, lev["parent"])
            lev["F"] = lev["zh"] + lev["vh"] / par["vs"][cpar] * (par["F"][lev["parent"]] - par["s"][cpar])
        # leaves' totals, spread uniformly over their partition buckets
        est = np.zeros(m)
        for lev in levels:
            lf = lev["leaf"]
            if lf.any():
                sl = _ranges_mask(lev["lo"][lf], lev["hi"][lf], m)
                size = (lev["hi"] - lev["lo"])[lf]
                est[sl[0]] = (lev["F"][lf] / size)[sl[1]]
        self.levels = levels
        return est

    @staticmethod
    def _gram(W, m):
        """G = Q Q^T (q x q) for DPBench's Q^T Q quadratic forms, in chunks of columns."""
        G = np.zeros((W.q, W.q))
        for s in range(0, m, 2048):
            cols = np.arange(s, min(m, s + 2048))
            Y = W.weighted_sums(cols, cols + 1, np.arange(m + 1, dtype=np.float64), np.ones(m))
            G += Y @ Y.T
        return G

    # ------------------------------------------------------------ answers

    @property
    def num_buckets(self) -> int:
        return int(self.bounds.size - 1)

    def answer(self, lo, hi) -> np.ndarray:
        """Estimated counts of inclusive intervals (uniform inside each cell)."""
        dlo = self.domain[0]
        ql, qh = to_offsets(np.atleast_1d(lo), dlo), to_offsets(np.atleast_1d(hi), dlo)
        a, b, fa, fb = self.axis.pieces(ql, qh)
        c = self.cells
        inner = self._prefix[np.maximum(b, a + 1)] - self._prefix[a + 1]
        return fa * c[a] + np.where(a == b, 0.0, inner + fb * c[b])


def _ranges_mask(lo, hi, m):
    """(columns, owner) of the disjoint half-open ranges [lo_t, hi_t)."""
    sizes = hi - lo
    owner = np.repeat(np.arange(lo.size), sizes)
    cols = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes) + np.repeat(lo, sizes)
    return cols, owner
