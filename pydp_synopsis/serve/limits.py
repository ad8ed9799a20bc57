"""What a request may be: the service's limits, the body read under its size limit,
the JSON read strictly, and the query corners checked before any answer.

Every check here raises :class:`RequestError` (an HTTP status and one line);
the application turns it into ``{"error": "..."}``.  A request is trusted for
nothing: its declared length is checked before a byte of the body is read, a
body without a length (chunked) is read only up to the limit, the batch's
length is checked before any array is made of it, and the values' types are
checked before they reach a synopsis.  Nothing here touches a file.
"""
import dataclasses
import itertools
import json
from decimal import Decimal

import numpy as np

from ..params import check_int

__all__ = ["Limits", "RequestError", "DEFAULT_MAX_BODY", "DEFAULT_MAX_BATCH", "MAX_BATCH",
           "read_body", "parse_json", "query_corners", "check_confidence", "check_bins_param"]

#: Default largest request body (bytes): a 10,000-range batch of 20-digit integers fits.
DEFAULT_MAX_BODY = 1 << 20
#: Default most ranges or boxes in one request.
DEFAULT_MAX_BATCH = 10_000
#: Most ranges the ``--max-batch`` option may allow (one answer call stays under ~50 ms).
MAX_BATCH = 100_000
#: Most bytes the ``--max-body`` option may allow.
MAX_BODY = 64 << 20


class RequestError(Exception):
    """A request the service refuses: ``status`` (4xx) and a one-line ``message``."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclasses.dataclass(frozen=True)
class Limits:
    """The service's limits (public; ``pydp-synopsis serve --max-body --max-batch``).

    Parameters
    ----------
    max_body : int
        Largest request body in bytes, in ``[1024, 64 MiB]``.
    max_batch : int
        Most ranges or boxes per count request, in ``[1, 100000]``.
    """

    max_body: int = DEFAULT_MAX_BODY
    max_batch: int = DEFAULT_MAX_BATCH

    def __post_init__(self):
        check_int(self.max_body, "max_body (bytes)", 1024, MAX_BODY)
        check_int(self.max_batch, "max_batch", 1, MAX_BATCH)


async def read_body(scope, receive, limit):
    """The request body (bytes), refused with 413 as soon as it exceeds ``limit``.

    A ``Content-Length`` above the limit is refused before anything is read;
    a body without one is read chunk by chunk and refused at the first chunk
    past the limit, so at most ``limit`` bytes (plus one chunk) are ever held.
    """
    declared = None
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                raise RequestError(400, "Content-Length is not a number") from None
            if declared < 0:
                raise RequestError(400, "Content-Length is negative")
    if declared is not None and declared > limit:
        raise RequestError(413, f"request body over the limit of {limit} bytes")
    parts, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise RequestError(400, "the client went away before its body was read")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"request body over the limit of {limit} bytes")
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


#: Largest decimal exponent a JSON number may have: no domain reaches 1e400, and a number
#: such as 1e999999999999999999 would be written out in full by the decimal conversion.
_MAX_EXPONENT = 400


def _decimal(text):
    value = Decimal(text)
    if abs(value.adjusted()) > _MAX_EXPONENT:
        raise ValueError(f"a number's exponent is beyond ±{_MAX_EXPONENT}")
    return value


#: One decoder for every request (``json.loads`` with options builds one per call).
_DECODER = json.JSONDecoder(parse_float=_decimal, parse_constant=_no_constant)


def parse_json(body):
    """The JSON object of ``body``; a decimal number is read as its exact
    :class:`~decimal.Decimal` (``40.1`` stands for 40.1, not the nearest float)."""
    if not body:
        raise RequestError(400, "the request has no body: send a JSON object")
    try:
        obj = _DECODER.decode(body.decode("utf-8"))    # RFC 8259: JSON is UTF-8
    except RecursionError:
        raise RequestError(400, "the JSON body is nested too deeply") from None
    except (ValueError, ArithmeticError) as exc:   # JSONDecodeError, UnicodeDecodeError;
        # decimal.InvalidOperation: a number whose exponent Decimal cannot hold (1e99999999999999999)
        text = str(exc).splitlines()[0] if isinstance(exc, ValueError) and str(exc) else \
            "a number out of range"
        raise RequestError(400, f"the body is not valid JSON ({text[:120]})") from None
    if not isinstance(obj, dict):
        raise RequestError(400, "the body must be a JSON object")
    return obj


_BOUND_TYPES = {int, str, Decimal}


def _check_keys(obj, allowed, required):
    extra = sorted(set(obj) - allowed)
    if extra:
        raise RequestError(400, f"unknown field {extra[0][:40]!r}: allowed are "
                                f"{', '.join(sorted(allowed))}")
    if required not in obj:
        raise RequestError(400, f"the body needs {required!r}")


def query_corners(obj, dims, limits):
    """``(lo, hi)`` of a count request: (q,) arrays for ``dims == 1``, else (q, dims).

    ``{"ranges": [[lo, hi], ...]}`` for an interval synopsis, ``{"boxes":
    [[[lo_0, hi_0], [lo_1, hi_1], ...], ...]}`` for a rectangle synopsis;
    bounds are JSON integers, decimal numbers or strings (ISO dates and
    times, decimal text), converted by the synopsis's columns.  Arrays of
    plain integers become int64 (uint64 or Python ints beyond), the fast path.
    """
    key = "ranges" if dims == 1 else "boxes"
    _check_keys(obj, {key, "confidence"}, key)
    items = obj[key]
    if not isinstance(items, list) or not items:
        raise RequestError(400, f"{key!r} must be a non-empty list")
    if len(items) > limits.max_batch:            # before any array is made of it
        raise RequestError(413, f"{len(items)} {key} in one request: the limit is "
                                f"{limits.max_batch}")
    what = "[lo, hi]" if dims == 1 else f"{dims} [lo, hi] pairs (one per axis)"
    if dims == 1 and set(map(type, items)) == {list} and set(map(len, items)) == {2}:
        flat = list(itertools.chain.from_iterable(items))    # C-speed passes, no Python loop
    else:
        shape = (len(items), dims, 2)
        try:
            arr = np.array(items, dtype=object) if dims > 1 else None
        except ValueError:
            arr = None
        if arr is None or arr.shape != shape:
            raise RequestError(400, f"each of {key!r} must be {what}")
        flat = arr.reshape(-1)
    types = set(map(type, flat))
    if not types <= _BOUND_TYPES:
        bad = sorted(t.__name__ for t in types - _BOUND_TYPES)
        names = {"bool": "true/false", "NoneType": "null", "list": "a list", "dict": "an object"}
        raise RequestError(400, f"a bound of {key!r} is {names.get(bad[0], bad[0])}: give "
                                f"numbers, or strings in the column's units")
    arr = None
    if types == {int}:
        try:
            arr = np.array(items, dtype=np.int64)
        except OverflowError:
            try:
                arr = np.array(items, dtype=np.uint64)
            except OverflowError:
                pass                             # the synopsis names the bound outside its domain
    if arr is None:
        arr = np.array(items, dtype=object)
    if dims == 1:
        return arr[:, 0], arr[:, 1]
    return arr[:, :, 0], arr[:, :, 1]


def check_confidence(obj, default=0.95):
    """The request's ``confidence`` (a number strictly between 0 and 1), or ``default``."""
    value = obj.get("confidence", default)
    if type(value) not in (int, float, Decimal) or not 0 < value < 1:
        raise RequestError(400, "'confidence' must be a number strictly between 0 and 1")
    return float(value)


def check_bins_param(text, default, most):
    """A ``bins`` query parameter: an integer in ``[1, most]``."""
    if text is None:
        return default
    if not text.isdigit() or len(text) > 7 or not 1 <= int(text) <= most:
        raise RequestError(400, f"bins must be an integer in [1, {most}]")
    return int(text)
