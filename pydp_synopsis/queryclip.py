"""Queries that reach outside a synopsis's domain: clipped to it, and said so.

Nothing is counted outside the domain (values outside it were refused, or
clipped into it with ``clip=True``), so a query ``[lo, hi]`` reaching past
the domain has the count of its part inside it: each query is clipped to the
domain per axis and answered there.  A query wholly outside the domain (on
some axis) has the true count 0, known without looking at the release: it is
answered 0 with a zero-width error bar (``low = high = std = 0``).  Queries
and the domain are public, so all of this is post-processing.  A
:class:`~pydp_synopsis.errors.QueryClippedWarning` says how many queries were
clipped (the domain in the synopsis's units); :meth:`QueryClipping.clipped_queries`
says which.  A reversed query (``lo > hi`` on some axis) is still refused: it is
almost always a caller's bug.
"""
import contextvars
import functools
import warnings

import numpy as np

from .errors import DomainError, QueryClippedWarning
from .params import outside_stacklevel

__all__ = ["QueryClipping", "clips_queries", "query_masks", "note_queries"]


def _ints(v):
    """Integer bounds as an array (Python ints beyond int64 kept exact), or None when they
    are not integers (the query method refuses them with its own message)."""
    arr = np.asarray(v)
    if arr.dtype.kind == "f" and not isinstance(v, np.ndarray):
        arr = np.array(v, dtype=object)
    if arr.dtype.kind not in "iuO":
        return None
    if arr.dtype.kind == "O" and not all(
            isinstance(x, (int, np.integer)) and not isinstance(x, bool)
            for x in arr.ravel().tolist()):
        return None
    return arr


def query_masks(lo, hi, domains, boxes):
    """``(clipped, outside)``: boolean arrays, one entry per query, of integer bounds.

    ``boxes``: rectangle corners (``(q, c)``, one domain per axis) rather than
    interval endpoints (any shape, one domain).  ``clipped``: the query reaches
    outside the domain; ``outside``: it holds no point of the domain.  None when
    the bounds are not integers of matching shapes (left to the query method).

    Raises
    ------
    DomainError
        ``lo > hi`` for some query (on some axis), with the query methods' message.

    Examples
    --------
    >>> clipped, outside = query_masks([-5, 2, 20], [3, 4, 30], [(0, 10)], boxes=False)
    >>> clipped.tolist(), outside.tolist()
    ([True, False, True], [False, False, True])
    """
    a, b = _ints(lo), _ints(hi)
    if a is None or b is None or a.shape != b.shape or (boxes and (
            a.ndim != 2 or a.shape[1] != len(domains))):
        return None
    if _all_inside(a, b, domains, boxes):       # the usual case: two passes, no masks
        none = np.zeros(a.shape[0] if boxes else a.size, dtype=bool)
        return none, none
    try:
        rev = a > b
    except (TypeError, OverflowError):
        return None
    if rev.any():
        if boxes:
            q, axis = np.argwhere(rev)[0]
            raise DomainError(f"lo must be <= hi, got lo > hi at row {q}, axis {axis}")
        raise DomainError(f"lo must be <= hi, got lo > hi at index {int(np.argmax(rev.ravel()))}")
    if boxes:
        lows = np.array([d[0] for d in domains], dtype=object)
        highs = np.array([d[1] for d in domains], dtype=object)
        clipped = ((a < lows) | (b > highs)).any(axis=1)
        outside = ((a > highs) | (b < lows)).any(axis=1)
    else:
        (dlo, dhi), = domains
        clipped = ((a < dlo) | (b > dhi)).ravel()
        outside = ((a > dhi) | (b < dlo)).ravel()
    return np.asarray(clipped, dtype=bool), np.asarray(outside, dtype=bool)


def _all_inside(a, b, domains, boxes):
    """Whether every bound lies in the domain (then no query is clipped)."""
    if a.size == 0:
        return True
    try:
        if boxes:
            return all(int(a[:, j].min()) >= lo and int(b[:, j].max()) <= hi
                       and int(b[:, j].min()) >= lo and int(a[:, j].max()) <= hi
                       for j, (lo, hi) in enumerate(domains))
        (lo, hi), = domains
        return int(a.min()) >= lo and int(a.max()) <= hi and int(b.min()) >= lo \
            and int(b.max()) <= hi
    except (TypeError, ValueError):
        return False


#: The integer bounds a decorated query method converted (:func:`note_queries`), per call.
_SEEN = contextvars.ContextVar("pydp_synopsis_query_masks", default=None)


def note_queries(synopsis, lo, hi):
    """Return ``(lo, hi)``, the integer bounds a synopsis's ``_user`` converted, noting
    which queries they clip for the :func:`clips_queries` call running (if any): the
    bounds are converted from user units once per call."""
    seen = _SEEN.get()
    if seen is not None and not seen:
        domains, boxes = synopsis._query_domains()
        seen.append(query_masks(lo, hi, domains, boxes))
    return lo, hi


def _zeroed(result, outside, empty=0):
    """``result`` (an array, a tuple of arrays, an ErrorBars) with every per-query array
    set to ``empty`` (0; NaN for a mean) at the queries wholly outside the domain."""
    if isinstance(result, tuple):
        parts = [_zeroed(x, outside, empty) for x in result]
        return type(result)(*parts) if hasattr(result, "_fields") else tuple(parts)
    if isinstance(result, np.ndarray) and result.size == outside.size:
        out = result.astype(np.float64) if np.isnan(empty) else result.copy()
        out.reshape(-1)[outside] = empty
        return out
    return result


class QueryClipping:
    """Mixed into both synopses: which queries reach outside the domain (no state of its
    own; the synopsis provides ``_user``, ``domain`` and its columns)."""

    __slots__ = ()

    def _query_domains(self):
        boxes = getattr(self, "dims", None) is not None
        return (list(self.domain) if boxes else [self.domain]), boxes

    def clipped_queries(self, lo, hi):
        """Which queries reach outside the domain (a bool array, one per query).

        Such a query is answered over its part inside the domain, and one wholly
        outside it is answered 0 with a zero-width error bar (a
        :class:`~pydp_synopsis.errors.QueryClippedWarning` says how many).
        Post-processing of public inputs: no privacy cost.

        Parameters
        ----------
        lo, hi : array_like
            As the synopsis's ``count_many`` (user units included).

        Examples
        --------
        >>> import pydp_synopsis as ps
        >>> s = ps.IntervalSynopsis.build([1, 2, 2, 7], domain=(0, 7), epsilon=1,
        ...                               rng=ps.Rng(seed=2))
        >>> s.clipped_queries([-3, 1, 9], [2, 7, 12]).tolist()
        [True, False, True]
        """
        domains, boxes = self._query_domains()
        masks = query_masks(*self._user(lo, hi), domains, boxes)
        if masks is None:
            raise TypeError("lo and hi must be integer bounds of the same shape (or the "
                            "synopsis's units)")
        return masks[0]

    def domain_text(self):
        """The domain in the synopsis's units, as messages show it (e.g. ``[2001-01-01, 2001-06-30]``)."""
        domains, _ = self._query_domains()
        columns = self.columns if hasattr(self, "columns") else (self.column,)
        return " x ".join(f"[{col.format(d[0])}, {col.format(d[1])}]"
                          for col, d in zip(columns, domains))


def clips_queries(method=None, *, empty=0):
    """Decorate a query method ``(self, lo, hi, ...)``: queries clipped to the domain, a
    :class:`QueryClippedWarning` saying how many, queries wholly outside answered 0
    (``empty``: NaN for a mean, which has no value over no rows).

    The method itself clips its offsets (``as_offsets(..., clip=True)``); the synopsis's
    ``_user`` hands the integer bounds it converted to :func:`note_queries` (which refuses
    reversed queries on the bounds as given); this wrapper then zeroes the answers of the
    queries that hold no point of the domain.  Only the outermost decorated call warns."""
    if method is None:
        return functools.partial(clips_queries, empty=empty)

    @functools.wraps(method)
    def clipped(self, lo, hi, *args, **kwargs):
        outer = _SEEN.get()
        token = _SEEN.set([])
        try:
            result = method(self, lo, hi, *args, **kwargs)
            seen = _SEEN.get()
        finally:
            _SEEN.reset(token)
        masks = seen[0] if seen else None
        if outer is not None:       # called by another decorated method: it says so
            if masks is not None and not outer:
                outer.append(masks)
            return result
        if masks is None or not masks[0].any():
            return result
        clip, outside = masks
        n, out = int(clip.sum()), int(outside.sum())
        what = "0" if empty == empty else "NaN (no rows)"
        wholly = f"; {out} wholly outside it: answered {what}" if out else ""
        domain = self.domain_text()
        warnings.warn(QueryClippedWarning(
            f"{n} of {clip.size} queries reach outside the domain {domain}: answered over "
            f"their part inside it{wholly}", clipped=n, outside=out, total=int(clip.size),
            domain=domain), stacklevel=outside_stacklevel())
        return _zeroed(result, outside, empty) if out else result

    return clipped
