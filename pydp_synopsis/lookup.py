"""Segment lookup: which segment of a partition holds each offset.

``np.searchsorted(ends, x, side="left")`` answered through a bucket table
on the top bits of ``x`` (``csrc/lookup.c``): one table read and a short
branch-free search instead of ``log2 m`` dependent cache misses.  Queries
(two lookups per interval, two per axis per rectangle) and the rectangle
build (one per point per axis) go through it.  The table is
post-processing of the released segment ends: nothing private, nothing
random.

Package-internal (synopses and :class:`~pydp_synopsis.partition.Partition`
build one from checked ends; arguments are not re-validated).
"""
import numpy as np

from ._core import LIMITS, check, ffi, lib, u64

__all__ = ["SegmentLookup"]


class SegmentLookup:
    """The segment lookup of strictly increasing ``uint64`` ends.

    Parameters
    ----------
    ends : numpy.ndarray of uint64
        1-D, strictly increasing, the last the domain's last offset (every
        key is at most it).  Kept (read-only) by the lookup.

    Notes
    -----
    Building is O(m) time and about ``m`` bytes (a power of two); a lookup
    is O(1) for ends spread like data and O(log m) at worst.  For
    ``m >= 2**32`` (never reached in practice) it falls back to
    ``np.searchsorted``.

    Examples
    --------
    >>> lk = SegmentLookup(np.array([3, 9, 20], dtype=np.uint64))
    >>> lk.find(np.array([0, 3, 4, 20], dtype=np.uint64)).tolist()
    [0, 0, 1, 2]
    """

    __slots__ = ("ends", "_table", "_native")

    def __init__(self, ends):
        self.ends = np.ascontiguousarray(ends, dtype=np.uint64)
        self._table = self._native = None
        m = self.ends.size
        if 1 <= m < LIMITS.lookup_segment_limit:
            self._table = np.empty(lib.pds_lookup_table_len(m), dtype=np.uint32)
            self._native = ffi.new("pds_lookup *")
            check(lib.pds_lookup_init(self._native, u64(self.ends), m,
                                      ffi.from_buffer("uint32_t[]", self._table),
                                      self._table.size), "segment lookup")

    @property
    def native(self):
        """The C ``pds_lookup *`` (None when ``m >= 2**32``); valid while ``self`` lives."""
        return self._native

    def find(self, offsets):
        """``np.searchsorted(ends, offsets, side="left")`` as int64, same shape.

        ``offsets`` (uint64) must be at most ``ends[-1]`` (ParameterError otherwise).
        """
        x = np.ascontiguousarray(offsets, dtype=np.uint64)
        if self._native is None:
            return np.searchsorted(self.ends, x, side="left").astype(np.int64)
        out = np.empty(x.shape, dtype=np.int64)
        check(lib.pds_lookup_find(self._native, u64(x.reshape(-1)), x.size,
                                  ffi.from_buffer("int64_t[]", out.reshape(-1))),
              "segment lookup")
        return out

    def find_into(self, offsets, out):
        """Write the segments of a 1-D ``uint64`` column into a 1-D ``uint32`` column.

        Both may be strided views (e.g. columns of ``(n, c)`` arrays whose
        strides are multiples of the item size); no copy is made.
        """
        if (self._native is None or offsets.dtype != np.uint64 or out.dtype != np.uint32
                or offsets.ndim != 1 or out.shape != offsets.shape
                or offsets.strides[0] <= 0 or offsets.strides[0] % 8
                or out.strides[0] <= 0 or out.strides[0] % 4):
            out[:] = np.searchsorted(self.ends, offsets, side="left")
            return out
        # raw addresses of the (alive) views: cffi's from_buffer needs contiguous memory
        x_p = ffi.cast("uint64_t *", offsets.__array_interface__["data"][0])
        o_p = ffi.cast("uint32_t *", out.__array_interface__["data"][0])
        check(lib.pds_lookup_find_u32(self._native, x_p, offsets.strides[0] // 8, offsets.size,
                                      o_p, out.strides[0] // 4), "segment lookup")
        return out
