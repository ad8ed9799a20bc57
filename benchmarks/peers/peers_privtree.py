"""PrivTree peer for the interval and rectangle benchmarks (not part of the package).

PrivTree (Zhang, Xiao, Xie, SIGMOD 2016), Algorithm 2 with the parameters of
Corollary 1, over integer domains of up to 2^64 values per axis:

* fanout beta = 2^c on c axes: a split halves every axis at its midpoint
  (left half ``[s, s + (e - s) // 2]``, right half the rest; both exact in
  uint64 since ``e - s < 2^64``).  An axis of width 1 is not split further
  (it then gives one child instead of two along it); a node whose axes all
  have width 1 cannot be split and is a leaf;
* ``lambda = (2 beta - 1) / ((beta - 1) eps_tree)``, ``delta = lambda ln beta``,
  ``theta = 0``;
* biased count ``b(v) = max(theta - delta, c(v) - depth(v) delta)`` (root depth
  0); ``v`` is split iff ``b(v) + Laplace(lambda) > theta``;
* ``eps_tree = eps_leaf = eps / 2`` (half for the tree, half for the leaves):
  every leaf gets ``count + Laplace(1 / eps_leaf)`` (the leaves partition the
  domain, so their counts have L1 sensitivity 1).

The tree is grown breadth first, one vectorised step per level: in 1-D the
count of every node of a level is two ``np.searchsorted`` calls on the sorted
offsets; in c-D every point still inside an active node carries that node's
index and is moved to its child each level (O(n) per level).

Queries assume uniformity inside a leaf: a leaf contributes its noisy count
times the fraction of its volume (number of integer points) that the query
covers.  1-D: prefix sums over the leaves in domain order plus the two
fractional end leaves; c-D: a (queries x leaves) overlap matrix in chunks.

Noise comes from ``numpy.random.Generator`` (continuous Laplace), seeded for
reproducible benchmarks; this is a peer, not a hardened release.

References
----------
J. Zhang, X. Xiao, X. Xie, "PrivTree: a differentially private algorithm for
hierarchical decompositions", SIGMOD 2016 (Algorithm 2; Corollary 1:
lambda >= (2 beta - 1) / ((beta - 1) eps), delta = lambda ln beta; theta = 0).
The eps/2 + eps/2 split between the tree and the leaf counts is this
benchmark's choice (``tree_share``).
"""
from __future__ import annotations

import math

import numpy as np

from peers_rectangles import to_offsets

__all__ = ["privtree_parameters", "PrivTree"]

_U64 = np.uint64


def privtree_parameters(eps_tree: float, beta: int) -> tuple[float, float]:
    """(lambda, delta) of Corollary 1: lambda = (2b-1)/((b-1) eps), delta = lambda ln b."""
    if beta < 2:
        raise ValueError("fanout beta must be >= 2")
    lam = (2.0 * beta - 1.0) / ((beta - 1.0) * eps_tree)
    return lam, lam * math.log(beta)


def _check_domain(domain):
    out = []
    for lo, hi in domain:
        lo, hi = int(lo), int(hi)
        if hi < lo or hi - lo + 1 > 1 << 64:
            raise ValueError(f"axis domain must be (lo, hi) with 1 <= hi - lo + 1 <= 2^64, got {(lo, hi)}")
        out.append((lo, hi))
    return out


class PrivTree:
    """PrivTree over c integer axes (c = 1 for intervals).

    Parameters
    ----------
    points : (n,) integer array (c = 1) or (n, c) integer array
    domain : (lo, hi) for c = 1, or a sequence of c inclusive (lo, hi) pairs
    epsilon : float, total budget (eps/2 for the tree, eps/2 for leaf counts)
    tree_share : float, share of epsilon for the tree (0.5 as in the paper)
    theta : float, split threshold (0 in the paper)
    max_leaves : int, safety cap on the number of leaves (raises if exceeded)
    seed : int or numpy Generator (benchmarks only)

    Attributes
    ----------
    starts, ends : (L, c) uint64 inclusive offsets of each leaf on each axis
    counts : (L,) true leaf counts (kept for tests; not part of the release)
    noisy : (L,) released noisy leaf counts
    depths : (L,) depth of each leaf
    """

    def __init__(self, points, domain, epsilon, *, tree_share=0.5, theta=0.0,
                 max_leaves=10_000_000, seed=None):
        rng = np.random.default_rng(seed)
        pts = np.asarray(points)
        if pts.ndim == 1:
            domain = [domain]
            pts = pts[:, None]
        dom = _check_domain(domain)
        c = len(dom)
        if pts.ndim != 2 or pts.shape[1] != c:
            raise ValueError(f"points must have shape (n, {c})")
        if pts.dtype.kind not in "iu":
            raise TypeError("points must be integers")
        offs = []
        for k, (lo, hi) in enumerate(dom):
            col = pts[:, k]
            if col.size and (int(col.min()) < lo or int(col.max()) > hi):
                raise ValueError(f"points outside the domain on axis {k}")
            offs.append(to_offsets(col, lo))
        self.domain = dom
        self.c = c
        self.epsilon = float(epsilon)
        self.beta = 2 ** c
        eps_tree = tree_share * epsilon
        self.eps_leaf = (1.0 - tree_share) * epsilon
        self.lam, self.delta = privtree_parameters(eps_tree, self.beta)
        self.theta = float(theta)
        if c == 1:
            self._grow_1d(offs[0], rng, max_leaves)
        else:
            self._grow_cd(offs, rng, max_leaves)
        self.noisy = self.counts + rng.laplace(scale=1.0 / self.eps_leaf, size=self.counts.size)
        # 1-D: leaves in domain order and prefix sums for fast answers
        if c == 1:
            order = np.argsort(self.starts[:, 0], kind="stable")
            for name in ("starts", "ends", "counts", "noisy", "depths"):
                setattr(self, name, getattr(self, name)[order])
            self._prefix = np.concatenate([[0.0], np.cumsum(self.noisy)])
        self._widths = (self.ends - self.starts).astype(np.float64) + 1.0

    # ---------------------------------------------------------------- growth

    def _split_decision(self, counts, depth, splittable, rng):
        b = np.maximum(self.theta - self.delta, counts - depth * self.delta)
        noisy = b + rng.laplace(scale=self.lam, size=counts.size)
        return (noisy > self.theta) & splittable

    def _grow_1d(self, off, rng, max_leaves):
        s_sorted = np.sort(off)
        starts = np.zeros(1, dtype=_U64)
        ends = np.array([(self.domain[0][1] - self.domain[0][0])], dtype=_U64)
        leaves_s, leaves_e, leaves_c, leaves_d = [], [], [], []
        depth, n_leaves = 0, 0
        while starts.size:
            cnt = (np.searchsorted(s_sorted, ends, side="right")
                   - np.searchsorted(s_sorted, starts, side="left")).astype(np.float64)
            split = self._split_decision(cnt, depth, ends > starts, rng)
            leaf = ~split
            leaves_s.append(starts[leaf]); leaves_e.append(ends[leaf])
            leaves_c.append(cnt[leaf]); leaves_d.append(np.full(int(leaf.sum()), depth))
            n_leaves += int(leaf.sum())
            if n_leaves + 2 * int(split.sum()) > max_leaves:
                raise RuntimeError(f"PrivTree: more than {max_leaves} leaves")
            s, e = starts[split], ends[split]
            mid = s + (e - s) // _U64(2)
            starts = np.concatenate([s, mid + _U64(1)])
            ends = np.concatenate([mid, e])
            depth += 1
        self.starts = np.concatenate(leaves_s)[:, None]
        self.ends = np.concatenate(leaves_e)[:, None]
        self.counts = np.concatenate(leaves_c)
        self.depths = np.concatenate(leaves_d)

    def _grow_cd(self, offs, rng, max_leaves):
        c = self.c
        n = offs[0].shape[0]
        P = np.stack(offs, axis=1)                               # (n, c) uint64
        starts = np.zeros((1, c), dtype=_U64)
        ends = np.array([[hi - lo for lo, hi in self.domain]], dtype=_U64)
        node = np.zeros(n, dtype=np.int64)                      # active node of each point
        alive = np.arange(n)                                    # points in active nodes
        leaves_s, leaves_e, leaves_c, leaves_d = [], [], [], []
        depth, n_leaves = 0, 0
        combos = np.arange(2 ** c)
        bits = (combos[:, None] >> np.arange(c)[None, :]) & 1   # (2^c, c)
        while starts.shape[0]:
            k_nodes = starts.shape[0]
            cnt = np.bincount(node, minlength=k_nodes).astype(np.float64)
            can = ends > starts                                 # (k, c) axis splittable
            split = self._split_decision(cnt, depth, can.any(axis=1), rng)
            leaf = ~split
            leaves_s.append(starts[leaf]); leaves_e.append(ends[leaf])
            leaves_c.append(cnt[leaf]); leaves_d.append(np.full(int(leaf.sum()), depth))
            n_leaves += int(leaf.sum())
            si = np.nonzero(split)[0]
            s, e, cs = starts[si], ends[si], can[si]
            mid = np.where(cs, s + (e - s) // _U64(2), e)       # unsplittable: the whole axis
            # valid child combos: bit 1 only on splittable axes
            valid = ~np.any((bits[None, :, :] == 1) & ~cs[:, None, :], axis=2)   # (ks, 2^c)
            child_id = np.full(valid.shape, -1, dtype=np.int64)
            child_id[valid] = np.arange(int(valid.sum()))
            if n_leaves + int(valid.sum()) > max_leaves:
                raise RuntimeError(f"PrivTree: more than {max_leaves} leaves")
            ks_idx, cb = np.nonzero(valid)                      # row-major = child_id order
            bsel = bits[cb].astype(bool)
            new_s = np.where(bsel, mid[ks_idx] + _U64(1), s[ks_idx])
            new_e = np.where(bsel, e[ks_idx], mid[ks_idx])
            # move the points of split nodes to their child
            pos = np.full(k_nodes, -1, dtype=np.int64)
            pos[si] = np.arange(si.size)
            pn = pos[node]
            keep = pn >= 0
            alive, pn = alive[keep], pn[keep]
            code = np.zeros(alive.size, dtype=np.int64)
            for k in range(c):
                code |= (P[alive, k] > mid[pn, k]).astype(np.int64) << k
            node = child_id[pn, code]
            starts, ends = new_s, new_e
            depth += 1
        self.starts = np.concatenate(leaves_s)
        self.ends = np.concatenate(leaves_e)
        self.counts = np.concatenate(leaves_c)
        self.depths = np.concatenate(leaves_d)

    # ---------------------------------------------------------------- answers

    @property
    def num_leaves(self) -> int:
        return int(self.counts.size)

    def _query_offsets(self, lo, hi):
        lo, hi = np.asarray(lo), np.asarray(hi)
        if self.c == 1:
            lo, hi = np.atleast_1d(lo)[:, None], np.atleast_1d(hi)[:, None]
        lo, hi = np.atleast_2d(lo), np.atleast_2d(hi)
        if lo.shape != hi.shape or lo.shape[1] != self.c:
            raise ValueError(f"queries must have shape (q, {self.c})")
        ql, qh = [], []
        for k, (dlo, dhi) in enumerate(self.domain):
            if lo.shape[0] and (np.any(lo[:, k] > hi[:, k]) or int(lo[:, k].min()) < dlo
                                or int(hi[:, k].max()) > dhi):
                raise ValueError("queries need domain lo <= lo <= hi <= domain hi")
            ql.append(to_offsets(lo[:, k], dlo))
            qh.append(to_offsets(hi[:, k], dlo))
        return ql, qh

    def answer(self, lo, hi, chunk_elems: int = 4_000_000) -> np.ndarray:
        """Estimated counts of inclusive intervals (1-D arrays) or boxes ((q, c) arrays)."""
        ql, qh = self._query_offsets(lo, hi)
        if self.c == 1:
            return self._answer_1d(ql[0], qh[0])
        q = ql[0].shape[0]
        out = np.empty(q)
        step = max(1, chunk_elems // max(1, self.num_leaves))
        for a in range(0, q, step):
            b = min(q, a + step)
            frac = np.ones((b - a, self.num_leaves))
            for k in range(self.c):
                s, e = self.starts[None, :, k], self.ends[None, :, k]
                l, h = ql[k][a:b, None], qh[k][a:b, None]
                top, bot = np.minimum(e, h), np.maximum(s, l)
                ov = np.where(top >= bot, (top - bot).astype(np.float64) + 1.0, 0.0)
                frac *= ov / self._widths[None, :, k]
            out[a:b] = frac @ self.noisy
        return out

    def _answer_1d(self, l, h):
        s, e = self.starts[:, 0], self.ends[:, 0]
        a = np.searchsorted(s, l, side="right") - 1
        b = np.searchsorted(s, h, side="right") - 1
        w = self._widths[:, 0]
        same = a == b
        end_a = np.where(same, h, e[a])
        fa = ((end_a - l).astype(np.float64) + 1.0) / w[a]
        fb = ((h - s[b]).astype(np.float64) + 1.0) / w[b]
        inner = self._prefix[np.maximum(b, a + 1)] - self._prefix[a + 1]
        return fa * self.noisy[a] + np.where(same, 0.0, inner + fb * self.noisy[b])
