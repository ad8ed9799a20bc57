"""Random query workloads and their exact answers, shared by the benchmarks.

* :func:`random_intervals`, :func:`random_rectangles`: endpoints uniform in
  the domain (``kind="uniform"``) or drawn from the data (``kind="data"``:
  an interval between two random data values; a rectangle = bounding box of
  two random data points).
* :func:`interval_counts`: exact counts by sort + searchsorted.
* :func:`data_dir`, :func:`data_file`: the real data sets, from ``$PYDP_SYNOPSIS_DATA``
  (``zipcodes.npz`` also ships with the package).
* :func:`parse_options`: a benchmark's ``--ours key=value,...`` build options.
* :class:`RectangleCounter` / :func:`rectangle_counts`: exact c-D counts by a
  slab decomposition (points sorted by the first axis and cut into slabs;
  a slab fully inside a query's first-axis range is counted recursively on
  the other axes, the <= 2 partially covered slabs by brute force), about
  n^(1/c) slabs per level; 10^4 queries on 10^6 points take seconds.

Queries are inclusive ``(lo, hi)`` integer bounds; arrays are uint64 when the
domain starts at >= 0 (so D = 2^64 works) and int64 otherwise.
Seeds are for reproducible benchmarks.
"""
from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import numpy as np

__all__ = [
    "random_intervals",
    "random_rectangles",
    "interval_counts",
    "RectangleCounter",
    "rectangle_counts",
    "data_dir",
    "data_file",
    "DATA_ENV",
    "parse_options",
]


#: The environment variable naming the directory of the real data sets.
DATA_ENV = "PYDP_SYNOPSIS_DATA"
#: The data sets that ship inside the package (read from there when the directory lacks them).
_PACKAGED = {"zipcodes.npz": Path(__file__).resolve().parents[1] / "pydp_synopsis" / "data"}


def data_dir():
    """The directory named by ``$PYDP_SYNOPSIS_DATA``, or None when it is unset.

    Nothing else is looked at: a benchmark reads only the data it is pointed at.
    """
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else None


def data_file(name, *, required=True):
    """The path of the real data set ``name`` (``flights-2001h1.npz``, ``zipcodes.npz``).

    ``zipcodes.npz`` ships with the package and is read from there unless the
    data directory has its own.  Any other file must be in ``$PYDP_SYNOPSIS_DATA``:
    when it is not, the benchmark stops with one line saying so (or, with
    ``required=False``, this returns None).
    """
    root = data_dir()
    if root is not None and (root / name).is_file():
        return root / name
    if name in _PACKAGED:
        return _PACKAGED[name] / name
    if not required:
        return None
    where = f"{DATA_ENV}={root} has no {name}" if root is not None else f"{DATA_ENV} is not set"
    raise SystemExit(f"{os.path.basename(sys.argv[0]) or 'benchmark'}: needs the data set {name}: "
                     f"{where} (docs/benchmarks/index.md, 'Data')")


def parse_options(text):
    """``"k=v,k2=v2"`` as a dict of build keywords: each value a Python literal
    (``0.5``, ``None``, ``True``) where it parses as one, else the string."""
    opts = {}
    for item in filter(None, (text or "").split(",")):
        k, _, v = item.partition("=")
        try:
            opts[k.strip()] = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError):
            opts[k.strip()] = v.strip()
    return opts


def _uniform_values(rng, q, lo, hi):
    lo, hi = int(lo), int(hi)
    off = rng.integers(0, hi - lo + 1, size=q, dtype=np.uint64)
    shifted = off + np.uint64(lo % (1 << 64))
    return shifted if lo >= 0 else shifted.astype(np.int64)


def _data_values(rng, q, values, lo):
    v = np.asarray(values)
    if v.size == 0:
        raise ValueError("kind='data' needs a non-empty data set")
    pick = v[rng.integers(0, v.shape[0], size=q)]
    return pick.astype(np.uint64) if int(lo) >= 0 else pick.astype(np.int64)


def random_intervals(q: int, domain, *, kind: str = "uniform", values=None, seed=None):
    """``q`` random inclusive intervals in ``domain = (lo, hi)``; returns (lo, hi)."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        a, b = (_uniform_values(rng, q, *domain) for _ in range(2))
    elif kind == "data":
        a, b = (_data_values(rng, q, values, domain[0]) for _ in range(2))
    else:
        raise ValueError("kind must be 'uniform' or 'data'")
    return np.minimum(a, b), np.maximum(a, b)


def random_rectangles(q: int, domain, *, kind: str = "uniform", points=None, seed=None):
    """``q`` random inclusive rectangles in ``domain`` (c pairs); returns (q, c) lo, hi."""
    rng = np.random.default_rng(seed)
    c = len(domain)
    if kind == "uniform":
        cols = [[_uniform_values(rng, q, *domain[k]) for k in range(c)] for _ in range(2)]
    elif kind == "data":
        pts = np.asarray(points)
        if pts.ndim != 2 or pts.shape[0] == 0:
            raise ValueError("kind='data' needs a non-empty (n, c) point array")
        rows = [pts[rng.integers(0, pts.shape[0], size=q)] for _ in range(2)]
        cols = [[r[:, k].astype(np.uint64) if int(domain[k][0]) >= 0 else r[:, k].astype(np.int64)
                 for k in range(c)] for r in rows]
    else:
        raise ValueError("kind must be 'uniform' or 'data'")
    lo = [np.minimum(a, b) for a, b in zip(*cols)]
    hi = [np.maximum(a, b) for a, b in zip(*cols)]
    dtype = np.uint64 if all(x.dtype == np.uint64 for x in lo) else np.int64
    return np.stack(lo, 1).astype(dtype), np.stack(hi, 1).astype(dtype)


def interval_counts(values, lo, hi, *, presorted: bool = False) -> np.ndarray:
    """Exact number of values in each inclusive [lo, hi]; O((n + q) log n)."""
    s = np.asarray(values) if presorted else np.sort(np.asarray(values))
    if s.dtype.kind not in "iu":
        raise ValueError("values must be integers")
    dt = np.uint64 if (s.dtype == np.uint64 or (s.size and int(s[0]) >= 0)) else np.int64
    s = s.astype(dt)
    return _count_1d(s, _as_dtype(np.asarray(lo), dt), _as_dtype(np.asarray(hi), dt))


def _as_dtype(x: np.ndarray, dtype):
    """Map query bounds to ``dtype`` clipped to its range: (clipped, below, above).

    ``below``/``above`` flag bounds outside the representable range (e.g. a
    negative bound against uint64 data)."""
    if dtype == np.uint64 and x.dtype.kind == "i":
        below = x < 0
        return np.where(below, 0, x).astype(np.uint64), below, np.zeros(x.shape, bool)
    if dtype == np.int64 and x.dtype == np.uint64:
        above = x > np.uint64(np.iinfo(np.int64).max)
        return (np.where(above, np.uint64(np.iinfo(np.int64).max), x).astype(np.int64),
                np.zeros(x.shape, bool), above)
    return x.astype(dtype), np.zeros(x.shape, bool), np.zeros(x.shape, bool)


def _count_1d(s, lo, hi):
    (lo_v, _, lo_above), (hi_v, hi_below, _) = lo, hi
    cnt = np.searchsorted(s, hi_v, side="right") - np.searchsorted(s, lo_v, side="left")
    return np.where(hi_below | lo_above, 0, np.maximum(cnt, 0)).astype(np.int64)


class _Slabs:
    """Slab index over columns ``cols`` (first axis sorted, cut into slabs)."""

    def __init__(self, cols):
        self.d = len(cols)
        n = cols[0].shape[0]
        if self.d == 1:
            self.sorted = np.sort(cols[0])
            return
        order = np.argsort(cols[0], kind="stable")
        self.cols = [c[order] for c in cols]
        size = max(32, int(np.ceil(n ** ((self.d - 1) / self.d))))
        self.starts = np.arange(0, n, size)
        self.ends = np.minimum(self.starts + size, n)
        self.size = size
        self.smin = self.cols[0][self.starts]
        self.smax = self.cols[0][self.ends - 1]
        self.children = [_Slabs([c[s:e] for c in self.cols[1:]])
                         for s, e in zip(self.starts, self.ends)]

    def count(self, lo, hi) -> np.ndarray:
        q = lo[0].shape[0]
        if self.d == 1:
            cnt = (np.searchsorted(self.sorted, hi[0], side="right")
                   - np.searchsorted(self.sorted, lo[0], side="left"))
            return np.maximum(cnt, 0).astype(np.int64)
        out = np.zeros(q, dtype=np.int64)
        if q == 0 or self.starts.size == 0:
            return out
        l0, h0 = lo[0][:, None], hi[0][:, None]
        full = (l0 <= self.smin[None, :]) & (self.smax[None, :] <= h0)
        part = (l0 <= self.smax[None, :]) & (self.smin[None, :] <= h0) & ~full
        for s in np.nonzero(full.any(axis=0))[0]:
            sel = np.nonzero(full[:, s])[0]
            out[sel] += self.children[s].count([x[sel] for x in lo[1:]], [x[sel] for x in hi[1:]])
        qi, si = np.nonzero(part)
        chunk = max(1, 4_000_000 // self.size)
        ar = np.arange(self.size)
        for c0 in range(0, qi.size, chunk):
            pq, ps = qi[c0:c0 + chunk], si[c0:c0 + chunk]
            idx = self.starts[ps][:, None] + ar[None, :]
            ok = idx < self.ends[ps][:, None]
            idx = np.minimum(idx, self.cols[0].shape[0] - 1)
            for k in range(self.d):
                col = self.cols[k][idx]
                ok &= (lo[k][pq][:, None] <= col) & (col <= hi[k][pq][:, None])
            out += np.bincount(pq, weights=ok.sum(axis=1), minlength=q).astype(np.int64)
        return out


class RectangleCounter:
    """Exact rectangle counts over a fixed (n, c) integer point set.

    Build O(c n log n); a batch of q queries costs about
    O(q n^(1/c) + q c n^((c-1)/c)) vectorised work.
    """

    def __init__(self, points):
        pts = np.asarray(points)
        if pts.ndim != 2 or pts.dtype.kind not in "iu":
            raise ValueError("points must be an (n, c) integer array")
        self.c = pts.shape[1]
        self.n = pts.shape[0]
        self._dtypes = []
        cols = []
        for k in range(self.c):
            col = pts[:, k]
            dt = np.uint64 if (col.dtype == np.uint64 or (col.size and int(col.min()) >= 0)) \
                else np.int64
            self._dtypes.append(dt)
            cols.append(col.astype(dt))
        self._index = _Slabs(cols)

    def count(self, lo, hi) -> np.ndarray:
        """Exact counts of the inclusive rectangles ``lo``, ``hi`` of shape (q, c)."""
        lo, hi = np.atleast_2d(np.asarray(lo)), np.atleast_2d(np.asarray(hi))
        if lo.shape != hi.shape or lo.shape[1] != self.c:
            raise ValueError(f"lo and hi must have shape (q, {self.c})")
        los, his, empty = [], [], np.zeros(lo.shape[0], dtype=bool)
        for k, dt in enumerate(self._dtypes):
            lv, _, lo_above = _as_dtype(lo[:, k], dt)
            hv, hi_below, _ = _as_dtype(hi[:, k], dt)
            empty |= lo_above | hi_below | (lo[:, k] > hi[:, k])
            los.append(lv)
            his.append(hv)
        res = self._index.count(los, his)
        return np.where(empty, 0, res)


def rectangle_counts(points, lo, hi) -> np.ndarray:
    """Exact counts of the rectangles; see :class:`RectangleCounter`."""
    return RectangleCounter(points).count(lo, hi)
