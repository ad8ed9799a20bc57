"""Count requests answered in batches: the requests that arrive together are
answered by one vectorised ``confidence_intervals`` call.

A synopsis answers a batch of q queries in about the time of a few single
ones (one C call per batch; ~0.3 ms for one interval, ~1.3 ms for 1,000),
so a service under load gathers the requests that are ready in the same
turn of the event loop and answers them at once.  The answers are the
same: every answer and interval is per query, whatever else is in the
batch (a test checks it).  A batch that fails (one request out of the
domain) is answered again request by request, so each request gets its
own answer or its own error.
"""
import asyncio

import numpy as np

from ..errors import SynopsisError
from .limits import RequestError

__all__ = ["Batcher", "ANSWER_ERRORS", "as_request_error", "bars_json"]

#: What a synopsis raises for a query it cannot answer (the request's fault): 400.
ANSWER_ERRORS = (SynopsisError, ValueError, TypeError, ArithmeticError)


def as_request_error(exc):
    """A synopsis's refusal of a query as a 400 with its first line (the message names
    the argument and the allowed range in the column's units; never data)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return RequestError(400, text[:300])


def bars_json(bars):
    """``{"answers", "std", "low", "high"}`` of an :class:`~pydp_synopsis.ErrorBars`, as
    float64 arrays (the application's encoder writes them: shortest text that reads back
    to the same float, a non-finite value as ``null``)."""
    return {"answers": bars.answer, "std": bars.std, "low": bars.low, "high": bars.high}


class Batcher:
    """Answers the count requests of one synopsis, batching those that arrive together.

    Only called from the event loop's thread (the synopsis is never used by
    two threads at once).
    """

    def __init__(self, syn):
        self._syn = syn
        self._pending = {}
        self._scheduled = False

    def submit(self, lo, hi, confidence):
        """A future of the request's :class:`~pydp_synopsis.ErrorBars` (or its
        :class:`RequestError`), answered in the next turn of the loop."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        key = (confidence, lo.dtype.str, hi.dtype.str)
        self._pending.setdefault(key, []).append((lo, hi, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    def answer(self, lo, hi, confidence):
        """The request's :class:`~pydp_synopsis.ErrorBars`, answered alone."""
        try:
            return self._syn.confidence_intervals(lo, hi, confidence)
        except ANSWER_ERRORS as exc:
            raise as_request_error(exc) from None

    def _flush(self):
        self._scheduled = False
        pending, self._pending = self._pending, {}
        for (confidence, _, _), items in pending.items():
            if len(items) > 1 and self._together(confidence, items):
                continue
            for lo, hi, future in items:
                self._settle(future, self.answer, lo, hi, confidence)

    def _together(self, confidence, items):
        """Answer ``items`` in one call; False (nothing settled) when the batch fails."""
        try:
            bars = self._syn.confidence_intervals(np.concatenate([i[0] for i in items]),
                                                  np.concatenate([i[1] for i in items]),
                                                  confidence)
        except Exception:      # noqa: BLE001 -- answered again one by one, each its own error
            return False
        start = 0
        for lo, _, future in items:
            stop = start + len(lo)
            part = type(bars)(*(field[start:stop] for field in bars))
            if not future.done():            # the client may have gone away
                future.set_result(part)
            start = stop
        return True

    @staticmethod
    def _settle(future, compute, *args):
        """Settle ``future`` with ``compute(*args)`` or its exception (a RequestError is
        answered 4xx, anything else is a defect answered 500 by the handler)."""
        try:
            result = compute(*args)
        except Exception as exc:             # noqa: BLE001 -- handed to the waiting request
            if not future.done():
                future.set_exception(exc)
            return
        if not future.done():
            future.set_result(result)
