"""The JSON API's handlers: each reads what it needs of a request (path and query
parameters, the body under its limit) and returns ``(status, payload)``.

They know nothing of the web framework beyond a request's ``path_params``,
``query_params``, ``scope`` and ``receive``; :mod:`.app` turns their
payloads into responses and every :class:`RequestError` into a 4xx with
``{"error": "..."}``.  Nothing here opens a file or a connection: the
synopses were loaded at start (:mod:`.catalog`).
"""
from decimal import Decimal

import numpy as np

from .answers import ANSWER_ERRORS, Batcher, as_request_error, bars_json
from .catalog import (DEFAULT_BINS_1D, DEFAULT_BINS_2D, MAX_BINS_1D, MAX_BINS_2D, distribution,
                      jsonable, published)
from .limits import RequestError, check_bins_param, check_confidence, parse_json, query_corners, read_body

__all__ = ["Service", "healthz", "list_synopses", "describe_synopsis", "count", "picture",
           "quantile", "cdf", "histogram"]


class Service:
    """The published catalog, the limits, and one :class:`Batcher` per synopsis."""

    def __init__(self, catalog, limits):
        self.catalog = catalog
        self.limits = limits
        self.batchers = {name: Batcher(pub.obj) for name, pub in catalog.items()
                         if pub.kind != "counter"}


async def _json_body(service, request):
    body = await read_body(request.scope, request.receive, service.limits.max_body)
    return parse_json(body)


async def healthz(service, request):
    """``GET /healthz``: the service answers (and how many files it serves)."""
    return 200, {"status": "ok", "synopses": len(service.catalog)}


async def list_synopses(service, request):
    """``GET /api/synopses``: ``[{"name", "kind", ...}]`` in the order given at start."""
    return 200, [{"name": pub.name, "kind": pub.kind, "class": pub.description["class"],
                  "epsilon": pub.description["epsilon"]}
                 for pub in service.catalog.values()]


async def describe_synopsis(service, request):
    """``GET /api/synopses/{name}``: columns, units, domain in user units, ε, δ, structure."""
    return 200, published(service.catalog, request.path_params["name"]).description


def _synopsis(service, request, what="count"):
    pub = published(service.catalog, request.path_params["name"])
    if pub.kind == "counter":
        raise RequestError(400, f"{pub.name} is a counter: it has no {what} queries "
                                f"(GET /api/synopses/{pub.name} gives its release)")
    return pub


async def count(service, request):
    """``POST /api/synopses/{name}/count``: ``{"ranges": [[lo, hi], ...]}`` or
    ``{"boxes": [[[lo, hi], ...], ...]}`` -> ``{"answers", "std", "low", "high"}``,
    equal to the synopsis's ``confidence_intervals`` (answers: ``count_many``)."""
    pub = _synopsis(service, request)
    obj = await _json_body(service, request)
    lo, hi = query_corners(obj, pub.dims, service.limits)
    confidence = check_confidence(obj)
    refuse_outside(pub, lo, hi)
    bars = await service.batchers[pub.name].submit(lo, hi, confidence)
    return 200, bars_json(bars)


def refuse_outside(pub, lo, hi):
    """A query reaching outside the domain is a 400 here: the library clips it (and says
    so in a warning), but a web client would not see that its question was changed."""
    try:
        clipped = pub.obj.clipped_queries(lo, hi)
    except ANSWER_ERRORS as exc:
        raise as_request_error(exc) from None
    if clipped.any():
        i = int(np.argmax(clipped.ravel()))
        key = "ranges" if pub.dims == 1 else "boxes"
        raise RequestError(400, f"{key}[{i}] reaches outside the domain "
                                f"{pub.obj.domain_text()}: only queries inside it are answered")


async def picture(service, request):
    """``GET /api/synopses/{name}/distribution?bins=N``: what the page draws."""
    pub = published(service.catalog, request.path_params["name"])
    default, most = (DEFAULT_BINS_1D, MAX_BINS_1D) if pub.kind == "interval" \
        else (DEFAULT_BINS_2D, MAX_BINS_2D)
    bins = check_bins_param(request.query_params.get("bins"), default, most)
    try:
        return 200, distribution(pub, bins)
    except ANSWER_ERRORS as exc:
        raise as_request_error(exc) from None


def _feature(service, request, name):
    pub = _synopsis(service, request, name)
    if not hasattr(pub.obj, name):
        raise RequestError(404, f"this synopsis has no {name} (an interval synopsis of a "
                                f"release that provides it does)")
    return pub


def _axis(pub, given):
    """The keyword arguments naming one axis: none for an interval synopsis (which
    refuses an ``axis``), the axis of a rectangle synopsis (an index or a column
    name, required)."""
    if pub.kind != "rectangle":
        if given is not None:
            raise RequestError(400, "'axis' is for a rectangle synopsis; this one has one "
                                    "column")
        return {}
    dims = pub.obj.dims
    if given is None:
        raise RequestError(400, f"a rectangle synopsis needs 'axis': an index 0..{dims - 1} "
                                f"or a column name")
    if isinstance(given, str) and given.lstrip("-").isdigit():
        given = int(given)
    if isinstance(given, bool) or not isinstance(given, (int, str)):
        raise RequestError(400, f"'axis' must be an index 0..{dims - 1} or a column name")
    if isinstance(given, int) and not 0 <= given < dims:
        raise RequestError(400, f"'axis' must be an index 0..{dims - 1} or a column name")
    return {"axis": given}


def _numbers_list(obj, key, limits):
    values = obj.get(key)
    if not isinstance(values, list) or not values:
        raise RequestError(400, f"the body needs {key!r}: a non-empty list")
    if len(values) > limits.max_batch:
        raise RequestError(413, f"{len(values)} values in one request: the limit is "
                                f"{limits.max_batch}")
    if not set(map(type, values)) <= {int, str, Decimal}:
        raise RequestError(400, f"{key!r} must hold numbers or strings")
    return values


async def quantile(service, request):
    """``POST /api/synopses/{name}/quantile`` ``{"q": [...]}`` -> ``{"quantiles": [...]}``
    (the synopsis's ``quantile``, in user units), where the synopsis has one; a
    rectangle synopsis's axis is named by ``"axis"`` (an index or a column name)."""
    pub = _feature(service, request, "quantile")
    obj = await _json_body(service, request)
    q = _numbers_list(obj, "q", service.limits)
    if str in set(map(type, q)):
        raise RequestError(400, "'q' must hold numbers in [0, 1]")
    axis = _axis(pub, obj.get("axis"))
    try:
        out = pub.obj.quantile(np.array(q, dtype=np.float64), **axis)
    except ANSWER_ERRORS as exc:
        raise as_request_error(exc) from None
    return 200, {"quantiles": jsonable(out)}


async def cdf(service, request):
    """``POST /api/synopses/{name}/cdf`` ``{"x": [...]}`` -> ``{"cdf": [...]}``."""
    pub = _feature(service, request, "cdf")
    obj = await _json_body(service, request)
    x = _numbers_list(obj, "x", service.limits)
    axis = _axis(pub, obj.get("axis"))
    try:
        out = pub.obj.cdf(np.array(x, dtype=object if not set(map(type, x)) == {int}
                                   else np.int64), **axis)
    except ANSWER_ERRORS as exc:
        raise as_request_error(exc) from None
    return 200, {"cdf": jsonable(out)}


async def histogram(service, request):
    """``GET /api/synopses/{name}/histogram?bins=N``: the synopsis's ``histogram(bins)`` as
    ``{"counts", "edges"}`` (edges in the column's units)."""
    pub = _feature(service, request, "histogram")
    bins = check_bins_param(request.query_params.get("bins"), DEFAULT_BINS_1D, MAX_BINS_1D)
    axis = _axis(pub, request.query_params.get("axis"))
    try:
        out = pub.obj.histogram(bins, **axis)
    except ANSWER_ERRORS as exc:
        raise as_request_error(exc) from None
    counts, edges = out[0], out[1]            # numpy's (counts, edges)
    return 200, {"counts": jsonable(counts), "edges": jsonable(edges)}
