"""The axes of a rectangle synopsis: their domains and the c private partitions over them.

Points and query corners are checked against the per-axis domains here
(:func:`check_points`, :func:`check_corners`) and become uint64 offsets from
each axis's ``lo``.  Every axis is cut into segments by its own private partition (DNRR section
2, Fig. 1, with ``epsilon_axis`` and failure probability ``beta / (2c)``
each; Theorem 3.3's proof).  Both structures count points by the tuple of
their segment indices and place a query corner inside a segment by the
fraction of the segment's span it covers (:meth:`Axes.corners`).
"""
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from .._core import LIMITS
from ..errors import DomainError, FormatError, ParameterError
from ..params import as_offsets, check_domain, dtype_name
from .._threads import run_parts, sort_u64
from ..aggregates import Cells, aggregate
from ..partitions import Partition, partition_of_sorted, partition_source_axis
from ..partitions.sharded import shard_streams
from .kernels import Unrefine

__all__ = ["MAX_AXES", "as_int_array", "axis_offsets", "axis_streams", "check_domains", "check_points",
           "check_corners", "Axes", "Corners", "Cells", "sealed_cells"]

#: Most axes a rectangle synopsis has (the C core's limit).
MAX_AXES = LIMITS.max_axes   # 8


def as_int_array(v):
    """``np.asarray``, except that Python ints beyond int64 (mixed with negatives)
    stay exact (object dtype) instead of becoming float64."""
    arr = np.asarray(v)
    if arr.dtype.kind == "f" and not isinstance(v, np.ndarray):
        obj = np.array(v, dtype=object)
        if all(isinstance(x, int) and not isinstance(x, bool) for x in obj.ravel().tolist()):
            return obj
    return arr


def axis_offsets(arr, domain, name, clip=False):
    """(rows, c) uint64 offsets of an integer array against c checked (lo, hi) pairs."""
    out = np.empty(arr.shape, dtype=np.uint64)

    def column(a):
        out[:, a] = as_offsets(arr[:, a], domain[a], f"{name}[:, {a}]", clip=clip)

    # the columns in threads when large (numpy releases the GIL); an error is
    # the lowest failing column's, as in a loop
    if arr.shape[0] >= 1 << 20:
        run_parts(column, [(a,) for a in range(len(domain))])
    else:
        for a in range(len(domain)):
            column(a)
    return out


def axis_streams(rng):
    """A fresh generator (32 bytes drawn from ``rng``, which advances) whose child
    ``derive(a)`` is axis a's stream: the axes' partitions can be drawn in any
    order or at once, with the same result, and no two builds share a stream."""
    return shard_streams(rng)


def check_domains(domain):
    """The c checked (lo, hi) pairs of a rectangle domain (1 <= c <= 8)."""
    if isinstance(domain, (str, bytes)) or not hasattr(domain, "__len__"):
        raise TypeError(f"domain must be a sequence of (lo, hi) pairs, got {domain!r}")
    c = len(domain)
    if not 1 <= c <= MAX_AXES:
        raise ParameterError(f"domain must have between 1 and {MAX_AXES} (lo, hi) pairs, got {c}")
    return tuple(check_domain(d, f"domain[{a}]") for a, d in enumerate(domain))


def check_points(points, domain, clip=False):
    """The checked ``(points, offsets, domain)``: (n, c) integers, their uint64
    offsets from each axis's ``lo``, and the c (lo, hi) pairs."""
    axes = check_domains(domain)
    c = len(axes)
    arr = as_int_array(points)
    if arr.dtype.kind in "fc":
        raise TypeError(f"points must be integers, got dtype {dtype_name(arr.dtype)} (NaN and floats "
                        f"are refused)")
    # The number of rows is data: messages name the columns, never the rows.
    if arr.ndim != 2:
        raise ParameterError(f"points must be an (n, {c}) array for a {c}-axis domain, "
                             f"got a {arr.ndim}-D array")
    if arr.shape[1] != c:
        raise ParameterError(f"points must be an (n, {c}) array for a {c}-axis domain, "
                             f"got {arr.shape[1]} columns")
    return arr, axis_offsets(arr, axes, "points", clip), axes


def check_corners(lo, hi, domain):
    """The checked query corners as (q, c) uint64 offsets ``(lo, hi)``.

    Raises
    ------
    TypeError
        Non-integer corners.
    ParameterError
        Not two (q, c) arrays of the same shape.
    DomainError
        ``lo > hi`` on some axis.  A corner outside the domain is clipped to
        it (the query methods say so: :mod:`pydp_synopsis.queryclip`).
    """
    c, corners = len(domain), []
    for name, v in (("lo", lo), ("hi", hi)):
        arr = as_int_array(v)
        if arr.dtype.kind in "fc":
            raise TypeError(f"{name} must be integers, got dtype {dtype_name(arr.dtype)}")
        if arr.ndim != 2 or arr.shape[1] != c:
            raise ParameterError(f"{name} must be a (q, {c}) array, got shape {arr.shape}")
        corners.append(axis_offsets(arr, domain, name, clip=True))   # queryclip.py
    lo_o, hi_o = corners
    if lo_o.shape != hi_o.shape:
        raise ParameterError(f"lo and hi must have the same shape, got {lo_o.shape} and {hi_o.shape}")
    bad = lo_o > hi_o
    if bad.any():
        q, a = np.argwhere(bad)[0]
        raise DomainError(f"lo must be <= hi, got lo > hi at row {q}, axis {a}")
    return lo_o, hi_o


def sealed_cells(read, ends):
    """Cells read over the *refined* partitions (:func:`refine_ends`) of the released
    ``ends`` by ``read`` (a source's ``cells``: per-axis ends -> Cells), mapped back
    to the released segments; the first complete pass also counts, per axis, the
    points on a segment's end (:meth:`Cells.seal_counts`).  No extra pass over the data."""
    maps = [refine_ends(e) for e in ends]
    refined = read(tuple(m[0] for m in maps))
    unrefine = Unrefine([m[1:] for m in maps])
    done = []

    def chunks():
        count = not done            # the seal counts are read in the first full pass
        acc = np.zeros(unrefine.c, dtype=np.int64)
        for seg, weights in refined:
            # one C pass: released segments, and the rows on an end counted
            yield unrefine(seg, weights, acc if count else None), weights
        if count:
            done[:] = [acc]

    def seals():
        if not done:
            raise RuntimeError("seal counts are known after a complete pass over the cells")
        return done[0].copy()

    return Cells(chunks, seals=seals)


def refine_ends(ends):
    """Every segment of width >= 2 split into its span less its end, and its end.

    Returns
    -------
    refined : numpy.ndarray of uint64
        The refined partition's segment ends (at most ``2 m``).
    orig : numpy.ndarray of uint32
        Per refined segment, the released segment holding it.
    seal : numpy.ndarray of bool
        Per refined segment, whether it is a released segment's end.

    Raises
    ------
    ParameterError
        The refined partition has more than ``2**32 - 1`` segments.
    """
    ends = np.asarray(ends, dtype=np.uint64)
    starts = np.concatenate((np.zeros(1, dtype=np.uint64), ends[:-1] + np.uint64(1)))
    refined = np.sort(np.concatenate((ends, ends[ends > starts] - np.uint64(1))))
    if refined.size > np.iinfo(np.uint32).max:
        raise ParameterError("the seal counts need at most 2**32 - 1 refined segments per "
                             "axis; pass seal_share=0 or a smaller epsilon")
    orig = np.searchsorted(ends, refined, side="left").astype(np.uint32)
    return refined, orig, refined == ends[orig]


class Corners(NamedTuple):
    """Where the corners of q queries fall on one axis (offsets, uint64 arrays)."""

    #: segment of ``lo`` and of ``hi``
    k: np.ndarray
    r: np.ndarray
    #: first offset of segment ``k`` and of segment ``r``
    k_first: np.ndarray
    r_first: np.ndarray
    #: values in segment ``k`` and in segment ``r`` (float64)
    k_span: np.ndarray
    r_span: np.ndarray


class Axes:
    """The released per-axis partitions.

    Parameters
    ----------
    partitions : sequence of Partition
        One per axis, each with ``beta / (2c)``.
    beta : float
        The build's failure probability: the c partitions' weight bounds
        fail together with probability at most ``beta / 2``.

    Attributes
    ----------
    partitions : tuple of Partition
    beta : float
    ends : tuple of numpy.ndarray of uint64
        Per axis, the segments' right ends as offsets from ``lo``.
    sizes : tuple of int
        Per axis, the number of partition segments ``m_a``.
    """

    __slots__ = ("partitions", "beta", "ends", "sizes")

    def __init__(self, partitions, beta):
        self.partitions = tuple(partitions)
        self.beta = beta
        self.ends = tuple(np.ascontiguousarray(p.end_offsets, dtype=np.uint64)
                          for p in self.partitions)
        self.sizes = tuple(len(p) for p in self.partitions)

    @classmethod
    def release(cls, points, offsets, domain, epsilon_axis, beta, threshold_factor, rng,
                counts=None):
        """Draw the c private partitions (one of the two places they are drawn).

        Parameters
        ----------
        points : numpy.ndarray, shape (n, c)
            The checked points in domain coordinates.
        offsets : numpy.ndarray of uint64, shape (n, c)
            The same points as offsets from each axis's ``lo``.
        domain : sequence of c (int, int)
            Checked inclusive bounds.
        epsilon_axis : Fraction
            Privacy parameter of each partition.
        beta : float
            The build's failure probability (``beta / (2c)`` per axis).
        threshold_factor : float
            The partitions' threshold constant.
        rng : Rng
            32 bytes are drawn from it (:func:`axis_streams`); axis a's partition
            draws from that key's child stream a, the axes in
            :func:`~pydp_synopsis.get_threads` threads.
        counts : numpy.ndarray of int64, optional
            Checked multiplicities of the points (None: one each).

        Returns
        -------
        axes : Axes
        segments : numpy.ndarray of uint32, shape (n, c)
            Each point's segment index per axis.
        n_hat : float
            ``max_a m_a T_a``: a segment is sealed once its noisy weight
            reaches ``T_a``, so this estimates n from released numbers only
            (post-processing).

        Notes
        -----
        O(c n log n) for the sorts, the axes at once on as many threads.
        """
        c = len(domain)
        streams = axis_streams(rng)

        def axis(a):
            # Fig. 1 with the public threshold factor (ln D + ln(1/beta)) / eps: privacy
            # holds for any public threshold (3 is only Theorem 2.1's constant)
            if counts is None:     # the checked offsets, sorted once (no second check)
                srt, cnt = sort_u64(np.ascontiguousarray(offsets[:, a])), None
            else:                  # their distinct values with the summed counts
                srt, cnt = aggregate(np.ascontiguousarray(offsets[:, a]), counts)
            part = partition_of_sorted(srt, domain[a], epsilon_axis, beta / (2 * c),
                                       threshold_factor, streams.derive(a), cnt)
            if len(part) > np.iinfo(np.uint32).max:    # needs over 2**32 thresholds of points
                raise ParameterError(f"domain[{a}]: the partition has more than 2**32 - 1 "
                                     "segments; use a smaller epsilon or a coarser domain")
            return part, part.lookup.of(offsets[:, a])

        # the axes in threads: each draws from its own stream, so any thread count
        # gives the same partitions
        done = run_parts(axis, [(a,) for a in range(c)])
        segments = np.empty(offsets.shape, dtype=np.uint32)
        for a, (_, seg) in enumerate(done):
            segments[:, a] = seg
        parts = [part for part, _ in done]
        n_hat = max(float(len(p)) * p.threshold for p in parts)
        return cls(parts, beta), segments, n_hat

    @classmethod
    def release_chunks(cls, prepared, domain, epsilon_axis, beta, threshold_factor, rng,
                       shards=1):
        """The c private partitions of streamed data, drawn as :meth:`release` draws them.

        Parameters
        ----------
        prepared : pydp_synopsis.sources.Prepared
            The checked source: axis a's partition runs over its sorted
            aggregates (:func:`~pydp_synopsis.partitions.runner.partition_source_axis`).
        domain, epsilon_axis, beta, threshold_factor, rng
            As for :meth:`release`.
        shards : int
            Public shards per axis (:mod:`pydp_synopsis.partitions.sharded`); 1: none.

        Returns
        -------
        axes : Axes
        n_hat : float
            As for :meth:`release`.

        Notes
        -----
        With one shard, under a seed, the same partitions as :meth:`release`
        of the same multiset (:func:`~pydp_synopsis.partitions.partition_of_chunks`);
        memory O(chunk + segments).
        """
        c = len(domain)
        parts, n_hat = [], 0.0
        streams = axis_streams(rng)
        for a, axis_domain in enumerate(domain):
            part, _ = partition_source_axis(prepared, a, axis_domain, epsilon_axis, beta / (2 * c),
                                            streams.derive(a), shards,
                                            threshold_factor=threshold_factor)
            parts.append(part)
            n_hat = max(n_hat, float(len(part)) * part.threshold)
        return cls(parts, beta), n_hat

    def seal_counts(self, offsets, segments, weights=None):
        """Per axis, how many of the points lie on their segment's end (int64, true
        counts: the adaptive grid adds the noise).  O(n c)."""
        out = np.zeros(self.dims, dtype=np.int64)
        for a, ends in enumerate(self.ends):
            hit = ends[segments[:, a]] == offsets[:, a]
            out[a] = np.count_nonzero(hit) if weights is None else int(weights[hit].sum())
        return out

    # ------------------------------------------------------------------ reading
    @property
    def dims(self):
        """Number of axes c."""
        return len(self.partitions)

    @property
    def domain(self):
        """The c inclusive ``(lo, hi)`` pairs."""
        return tuple(p.domain for p in self.partitions)

    @property
    def epsilon(self):
        """Privacy loss of the c partitions together (``c epsilon_axis``)."""
        return self.dims * self.partitions[0].epsilon

    @property
    def threshold_factor(self):
        """The partitions' threshold constant."""
        return self.partitions[0].threshold_factor

    def corners(self, a, lo, hi):
        """The segments of the corners ``lo``, ``hi`` (offsets, uint64) on axis ``a``.

        Returns
        -------
        Corners
            O(q log(m_a / buckets)): the partition's lookup.
        """
        ends, one = self.ends[a], np.uint64(1)
        lookup = self.partitions[a].lookup             # bucket table, C search
        k, r = lookup.of(lo).astype(np.intp), lookup.of(hi).astype(np.intp)
        k_first = np.where(k == 0, np.uint64(0), ends[np.maximum(k, 1) - 1] + one)
        r_first = np.where(r == 0, np.uint64(0), ends[np.maximum(r, 1) - 1] + one)
        return Corners(k, r, k_first, r_first, (ends[k] - k_first).astype(np.float64) + 1.0,
                       (ends[r] - r_first).astype(np.float64) + 1.0)

    # ------------------------------------------------------------------ record
    def record(self):
        """``(meta, arrays)`` of the file record: domain, epsilon_axis, ``ends_<a>``."""
        meta = {"domain": [[int(lo), int(hi)] for lo, hi in self.domain],
                "epsilon_axis": list(self.partitions[0].epsilon.as_integer_ratio())}
        return meta, {f"ends_{a}": e for a, e in enumerate(self.ends)}

    @classmethod
    def from_record(cls, meta, arrays, beta, threshold_factor):
        """The partitions of a file record (checked by :class:`Partition`).

        Raises
        ------
        FormatError
            Not 1 to 8 axes, or a non-positive epsilon_axis; invalid
            partitions raise DomainError/ParameterError (the loader's
            caller turns them into FormatError).
        """
        domain = [(int(lo), int(hi)) for lo, hi in meta["domain"]]
        c = len(domain)
        if not 1 <= c <= MAX_AXES:
            raise FormatError("rectangle synopsis record: bad number of axes")
        eps_axis = Fraction(*meta["epsilon_axis"])
        if eps_axis <= 0:
            raise FormatError("rectangle synopsis record has an invalid epsilon_axis")
        return cls((Partition(np.asarray(arrays[f"ends_{a}"], dtype=np.uint64), domain=domain[a],
                              epsilon=eps_axis, beta=beta / (2 * c),
                              threshold_factor=threshold_factor)
                    for a in range(c)), beta)
