"""Declared workloads: the queries a user says they will ask, and the named classes of them.

``workload=`` on the builders declares the queries: arrays ``(lo, hi)`` in
the synopsis's units (intervals: shape (q,); rectangles: (q, c)), or the name
of a class.  A workload is **public**: it is an argument, like the domain,
and the synopsis records a summary of it.  It chooses how the budget of the
structure built on the released partition is spent (the interval tree's
fanout and per-level split: :mod:`pydp_synopsis.interval_workload`; the
rectangle structures: :mod:`pydp_synopsis.rectangles.workload`), never how
much is spent.

The named classes are fixed, public distributions of queries, each given by
the same ``N = 4181`` points of a Fibonacci lattice ``(u_i, v_i) = ((i +
1/2) / N, ((i G mod N) + 1/2) / N)``, ``G = 2584`` (deterministic: no
randomness is drawn).  ``m`` is the number of segments of the released
partition of an axis, and a *segment position* ``x`` in ``[0, m)`` stands for
the offset ``floor(frac(x) * w_j)`` inside segment ``j = floor(x)`` of width
``w_j``; since the segments follow the data, segment positions are a public
stand-in for the data's quantiles.

``"short"``
    ``lo`` at segment position ``x = u m``; ``hi`` at ``x + s`` (capped at
    the last segment), ``s = 2 ** (-2 + v * (2 + log2 W))`` segments,
    ``W = max(1, m / 100)``: widths log-uniform from a quarter of a segment
    to 1% of the segments (the benchmarks' "small" queries, about 0.1% of
    the data).
``"mixed"``
    Both ends at segment positions ``u m`` and ``v m`` (the smaller is
    ``lo``): widths from a fraction of a segment to all of them (the
    benchmarks' data-centred queries, whose ends are two data values).
``"long"``
    Both ends uniform over the domain: ``floor(u D)`` and ``floor(v D)``
    offsets, ``D`` its size (the benchmarks' "uniform" queries).

A rectangle class applies the 1-D class on every axis, the lattice's
coordinates rotated per axis (axis ``a`` uses points ``i + a * 1597 mod N``).

References
----------
.. [HLMMR10] C. Li, M. Hay, V. Rastogi, G. Miklau, A. McGregor, "Optimizing
   Linear Counting Queries Under Differential Privacy", PODS 2010 (the
   workload-aware choice of a strategy).
.. [SJ94] I. H. Sloan, S. Joe, "Lattice Methods for Multiple Integration",
   1994 (Fibonacci lattices).
"""
import dataclasses
import math

import numpy as np

from .errors import DomainError, ParameterError
from .params import as_offsets
from .units import convert_corners

__all__ = ["CLASSES", "LATTICE_SIZE", "MAX_QUERIES", "Workload", "check_workload", "lattice",
           "segment_offsets", "class_offsets"]

#: The named classes of queries.
CLASSES = ("short", "mixed", "long")
#: Points of the Fibonacci lattice behind the named classes (F_19; its generator F_18).
LATTICE_SIZE, _GENERATOR = 4181, 2584
#: The most declared queries (the choice computes every candidate's exact variance on each:
#: a few microseconds per query and candidate).
MAX_QUERIES = 1 << 18
#: Rotation of the lattice between the axes of a rectangle class.
_AXIS_SHIFT = 1597


@dataclasses.dataclass(frozen=True)
class Workload:
    """A checked declaration: a class name, or declared queries as offsets.

    Attributes
    ----------
    name : str
        ``"short"``, ``"mixed"``, ``"long"`` or ``"declared"``.
    lo, hi : numpy.ndarray of uint64 or None
        The declared queries' offsets from the domain's low ends (shape (q,)
        or (q, c)); None for a class.
    """

    name: str
    lo: object = None
    hi: object = None

    def offsets(self, ends, domains):
        """The queries as offsets: the declared ones, or the class's over the released
        segment ends (one uint64 array per axis in ``ends``); (q,) or (q, c) arrays."""
        if self.lo is not None:
            return self.lo, self.hi
        return class_offsets(self.name, ends, domains)


def check_workload(workload, domains, columns=None):
    """``workload=`` checked (before any budget is charged or randomness drawn).

    Parameters
    ----------
    workload : None, str or (lo, hi)
        A class name of :data:`CLASSES`, or two array_likes of query
        corners in the synopsis's units: shape (q,) for one axis, (q, c) for
        ``c`` axes, ``lo <= hi``, every corner inside the domain.
    domains : list of (int, int)
        The checked integer domain of each axis.
    columns : tuple of Column, optional
        The axes' user units (None: plain integers).

    Returns
    -------
    Workload or None

    Raises
    ------
    ParameterError
        An unknown class, an empty workload, more than :data:`MAX_QUERIES`
        queries, a wrong shape.
    DomainError
        A corner outside the domain or ``lo > hi`` (as the queries themselves).
    TypeError
        Neither a string nor a pair.
    """
    if workload is None:
        return None
    if isinstance(workload, str):
        if workload not in CLASSES:
            raise ParameterError(f"workload must be one of {CLASSES} or (lo, hi) arrays, "
                                 f"got {workload!r}")
        return Workload(workload)
    if not isinstance(workload, (tuple, list)) or len(workload) != 2:
        raise TypeError("workload must be a class name ('short', 'mixed', 'long') or a pair "
                        "(lo, hi) of query corners")
    c = len(domains)
    lo, hi = workload
    for v in (lo, hi):                 # the size before any conversion allocates
        if hasattr(v, "__len__") and len(v) > MAX_QUERIES:
            raise ParameterError(f"workload may hold at most {MAX_QUERIES} queries, got "
                                 f"{len(v)}")
    if columns is not None:
        lo, hi = convert_corners(columns, lo, hi, True)
    lo_o, hi_o = (_axis_offsets(v, domains, name) for v, name in ((lo, "lo"), (hi, "hi")))
    want = "(q,)" if c == 1 else f"(q, {c})"
    for arr in (lo_o, hi_o):
        if arr.ndim != (1 if c == 1 else 2) or (c > 1 and arr.shape[1] != c):
            raise ParameterError(f"workload lo and hi must have shape {want}, got {arr.shape}")
    if lo_o.shape != hi_o.shape:
        raise ParameterError(f"workload lo and hi must have the same shape, got {lo_o.shape} "
                             f"and {hi_o.shape}")
    if lo_o.shape[0] == 0:
        raise ParameterError("workload must hold at least one query, got none")
    if lo_o.shape[0] > MAX_QUERIES:
        raise ParameterError(f"workload may hold at most {MAX_QUERIES} queries, got "
                             f"{lo_o.shape[0]}")
    bad = lo_o > hi_o
    if bad.any():
        q = int(np.argmax(bad.any(axis=-1) if bad.ndim > 1 else bad))
        raise DomainError(f"workload lo must be <= hi, got lo > hi at query {q}")
    return Workload("declared", lo_o, hi_o)


def _axis_offsets(v, domains, name):
    """One corner array as uint64 offsets, checked against each axis's domain."""
    arr = np.asarray(v) if not isinstance(v, np.ndarray) else v
    if len(domains) == 1:
        return np.ascontiguousarray(as_offsets(arr, domains[0], f"workload {name}"),
                                    dtype=np.uint64)
    if arr.ndim != 2 or arr.shape[1] != len(domains):
        raise ParameterError(f"workload lo and hi must have shape (q, {len(domains)}), got "
                             f"{arr.shape}")
    cols = [as_offsets(arr[:, a], domains[a], f"workload {name}[{a}]")
            for a in range(len(domains))]
    return np.ascontiguousarray(np.stack(cols, axis=1), dtype=np.uint64)


def lattice(axis=0):
    """The Fibonacci lattice ``(u, v)``, float64 arrays of :data:`LATTICE_SIZE` points in
    (0, 1), rotated by ``axis * 1597`` points.

    Examples
    --------
    >>> u, v = lattice()
    >>> u.size, bool(0 < u.min() and v.max() < 1)
    (4181, True)
    """
    n = LATTICE_SIZE
    i = (np.arange(n, dtype=np.int64) + axis * _AXIS_SHIFT) % n
    return (i + 0.5) / n, ((i * _GENERATOR) % n + 0.5) / n


def segment_offsets(ends, x):
    """Offsets of segment positions ``x`` (float64 in ``[0, m)``) over segment ``ends``
    (uint64 end offsets): ``start_j + floor(frac(x) * w_j)``, ``j = floor(x)``.

    Examples
    --------
    >>> segment_offsets(np.array([9, 19], dtype=np.uint64), np.array([0.5, 1.0, 1.99]))
    array([ 5, 10, 19], dtype=uint64)
    """
    m = ends.size
    j = np.clip(np.floor(x), 0, m - 1).astype(np.int64)
    start = np.where(j > 0, ends[np.maximum(j - 1, 0)] + np.uint64(1), np.uint64(0))
    width = ends[j] - start                        # w_j - 1: no overflow at 2**64
    wf = width.astype(np.float64) + 1.0
    inside = np.minimum(np.floor((x - j) * wf), np.nextafter(wf, 0.0))
    return start + np.minimum(inside.astype(np.uint64), width)


def class_offsets(name, ends, domains):
    """The class ``name``'s queries as offsets over released segment ``ends`` (a list, one
    uint64 array per axis): (q,) arrays for one axis, (q, c) for more."""
    los, his = [], []
    for a, (e, (dlo, dhi)) in enumerate(zip(ends, domains)):
        u, v = lattice(a)
        m = e.size
        if name == "long":
            size = dhi - dlo + 1
            half = 2 * LATTICE_SIZE
            # floor(t D) exactly for the lattice's t = (2 j + 1) / (2 N) (D may be 2**64)
            a_j = [((2 * int(k) + 1) * size) // half for k in np.rint(u * half - 1) // 2]
            b_j = [((2 * int(k) + 1) * size) // half for k in np.rint(v * half - 1) // 2]
            x, y = np.array(a_j, dtype=np.uint64), np.array(b_j, dtype=np.uint64)
        elif name == "mixed":
            x, y = segment_offsets(e, u * m), segment_offsets(e, v * m)
        else:
            width = 2.0 ** (-2.0 + v * (2.0 + math.log2(max(1.0, m / 100.0))))
            top = np.nextafter(float(m), 0.0)
            x = segment_offsets(e, u * m)
            y = segment_offsets(e, np.minimum(u * m + width, top))
        los.append(np.minimum(x, y))
        his.append(np.maximum(x, y))
    if len(ends) == 1:
        return los[0], his[0]
    return np.stack(los, axis=1), np.stack(his, axis=1)
