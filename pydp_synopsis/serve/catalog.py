"""What a service publishes: the files named at its start, loaded once, described
from their public parameters, and drawn as released numbers only.

:func:`load_catalog` reads each file with the package's own loader
(:func:`pydp_synopsis.load`: every declared size checked before it is
read, every field checked as build checks it) and keeps the objects in
memory; after that nothing a request says reaches the filesystem.  A
synopsis is a release, so its answers, descriptions and pictures are
post-processing of released numbers and cost no privacy.  A counter
checkpoint also holds its true prefix sum (the data): only its current
release, its time and its public noise law are ever shown.
"""
import dataclasses
import math
import os
import types
from decimal import Decimal
from fractions import Fraction

import numpy as np

from .. import persist
from ..errors import UsageError
from ..intervals import IntervalSynopsis
from ..plot import view_window
from ..rectangles import RectangleSynopsis
from .limits import RequestError

__all__ = ["Published", "load_catalog", "describe", "distribution", "jsonable",
           "MAX_BINS_1D", "MAX_BINS_2D", "DEFAULT_BINS_1D", "DEFAULT_BINS_2D"]

#: Bins of a 1-D picture: default and most.
DEFAULT_BINS_1D, MAX_BINS_1D = 120, 1000
#: Cells per axis of a 2-D heat map: default and most.
DEFAULT_BINS_2D, MAX_BINS_2D = 40, 100
#: Segment ends read to place a picture's window (evenly spaced when there are more).
_WINDOW_ENDS = 2048
#: Pictures kept per synopsis (one per ``bins`` asked; the oldest dropped first).
_CACHED_PICTURES = 8


@dataclasses.dataclass
class Published:
    """One published file: its ``name`` (the file's stem), the loaded object, its
    ``kind`` (``"interval"``, ``"rectangle"`` or ``"counter"``), its
    description (JSON-ready) and the pictures drawn so far."""

    name: str
    obj: object
    kind: str
    description: dict
    windows: tuple = ()
    pictures: dict = dataclasses.field(default_factory=dict)

    @property
    def dims(self):
        """Axes of a synopsis (1 for an interval synopsis), 0 for a counter."""
        if self.kind == "interval":
            return 1
        return len(self.obj.domain) if self.kind == "rectangle" else 0

    @property
    def columns(self):
        if self.kind == "interval":
            return (self.obj.column,)
        return tuple(self.obj.columns) if self.kind == "rectangle" else ()


def _kind_of(obj):
    if isinstance(obj, IntervalSynopsis):
        return "interval"
    if isinstance(obj, RectangleSynopsis):
        return "rectangle"
    return "counter"


def load_catalog(paths):
    """``{name: Published}`` of the files ``paths``, loaded once with :func:`pydp_synopsis.load`.

    Raises
    ------
    UsageError
        No file, or two files with the same stem (the name in the URLs).
    FormatError, OSError
        A file that is not a saved synopsis or counter checkpoint, or cannot
        be read (the command line exits 2 with that one line).
    """
    if not paths:
        raise UsageError("serve needs at least one saved synopsis or counter checkpoint")
    catalog = {}
    for path in paths:
        name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
        if not name:
            raise UsageError(f"{path}: the file name has no stem to serve it under")
        if name in catalog:
            raise UsageError(f"two files are named {name!r} (the name in the URLs is the file's "
                             f"stem): rename one")
        obj = persist.load(path)
        kind = _kind_of(obj)
        pub = Published(name, obj, kind, {})
        pub.description = _describe(pub)
        pub.windows = _windows(pub)
        catalog[name] = pub
    return catalog


# ------------------------------------------------------------------ describe
def jsonable(value):
    """A released number or value as JSON: exact rationals and Decimals as floats,
    numpy scalars as Python numbers, dates and times as ISO text."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating, Fraction, Decimal)):
        x = float(value)
        return x if math.isfinite(x) else None
    if isinstance(value, np.datetime64):
        return str(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "M":                 # ISO text, 'T' between date and time
            return np.datetime_as_string(value).tolist()
        return [jsonable(v) for v in value.tolist()] if value.dtype.kind in "Om" \
            else jsonable(value.tolist())
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


def _user_value(column, v):
    """A domain end in user units as JSON: a number for integers and decimals
    (``float`` of the exact decimal), ISO text for dates and times."""
    if column.kind == "integer":
        return int(v)
    text = column.format(v)
    return float(Decimal(text)) if column.kind == "decimal" else text


def _column_json(column, lo, hi, axis):
    return {"name": column.name if column.name is not None else str(axis),
            "kind": column.kind, "units": column.describe(),
            "domain": [_user_value(column, lo), _user_value(column, hi)],
            "domain_text": [column.format(lo), column.format(hi)]}


def _exact(x):
    """A parameter as a float and its exact text (``"1/3"``)."""
    return {"value": jsonable(x), "text": str(x)}


def _describe(pub):
    obj, kind = pub.obj, pub.kind
    out = {"name": pub.name, "kind": kind, "class": type(obj).__name__,
           "epsilon": jsonable(obj.epsilon), "epsilon_text": str(obj.epsilon),
           "delta": jsonable(getattr(obj, "delta", 0) or 0)}
    if kind == "counter":
        out.update(horizon=obj.horizon, time=obj.time, structure=_counter_structure(obj),
                   release=_counter_release(obj))
        return out
    doms = [obj.domain] if kind == "interval" else list(obj.domain)
    out["beta"] = jsonable(obj.beta)
    out["columns"] = [_column_json(c, lo, hi, a)
                      for a, (c, (lo, hi)) in enumerate(zip(pub.columns, doms))]
    out["domain"] = [col["domain"] for col in out["columns"]]
    if kind == "interval":
        tree = {"tree": obj.tree, "estimator": obj.estimator, "segments": len(obj)}
        tree.update({"k": obj.k} if obj.tree == "kary" else
                    {"fanout": getattr(obj, "fanout", None)})
        out["structure"] = tree
        out["query"] = {"body": "ranges", "example": {"ranges": [out["domain"][0]]}}
    else:
        out["structure"] = {"structure": obj.structure, "nodes": obj.num_nodes,
                            "segments_per_axis": [len(p) for p in obj.partitions]}
        out["query"] = {"body": "boxes", "example": {"boxes": [out["domain"]]}}
    out["clipped"] = bool(getattr(obj, "clipped", False))
    out["features"] = [f for f in ("quantile", "histogram", "cdf") if hasattr(obj, f)]
    return out


def _counter_structure(obj):
    out = {"counter": type(obj).__name__}
    for key in ("k", "subtraction", "max_items", "beta"):
        value = getattr(obj, key, None)
        if value is not None:
            out[key] = jsonable(value)
    return out


def _counter_release(obj, confidence=0.95):
    """The counter's current release and its public error (never its true count)."""
    release = getattr(obj, "release", None)
    if release is None:
        return None
    out = {"time": obj.time, "value": int(release)}
    if obj.time and hasattr(obj, "std") and hasattr(obj, "noise_scale"):
        out["std"] = float(obj.std([obj.time])[0])
    if hasattr(obj, "error_bound"):
        bound = float(obj.error_bound(confidence=confidence))
        out.update(confidence=confidence, bound=bound, low=release - bound, high=release + bound,
                   bound_is="simultaneous over every release of the counter")
    return out


def describe(catalog, name):
    """The description of a published name (404 when it is not published)."""
    return published(catalog, name).description


def published(catalog, name):
    pub = catalog.get(name)
    if pub is None:
        raise RequestError(404, "no synopsis of that name is served (GET /api/synopses lists them)")
    return pub


# ------------------------------------------------------------------ pictures
def _bins(lo, hi, bins):
    """Contiguous inclusive integer bins ``(starts, stops)`` covering ``[lo, hi]``."""
    width = hi - lo + 1
    bins = max(1, min(bins, width))
    edges = [lo + (width * i) // bins for i in range(bins + 1)]
    return edges[:-1], [e - 1 for e in edges[1:]]


def _as_query(column, ints, domain_hi):
    """Integer corners as the synopsis takes them: ints for an integer column, else
    each value's exact text in the column's units (read back to the same integer)."""
    if column.is_plain:
        dtype = np.uint64 if domain_hi > np.iinfo(np.int64).max else np.int64
        return np.array(ints, dtype=dtype)
    return np.array([column.format(v) for v in ints], dtype=object)


def _spread(ends):
    """At most ``_WINDOW_ENDS`` of the segment ends, evenly spaced, the last kept."""
    ends = [int(e) for e in ends]
    if len(ends) <= _WINDOW_ENDS:
        return ends
    idx = np.linspace(0, len(ends) - 1, _WINDOW_ENDS).round().astype(np.int64)
    return [ends[i] for i in idx]


def _window(syn, axis, partition):
    """The part of axis ``axis`` holding the private mass (:func:`~pydp_synopsis.plot.view_window`)."""
    doms = [syn.domain] if isinstance(syn, IntervalSynopsis) else list(syn.domain)
    cols = [syn.column] if isinstance(syn, IntervalSynopsis) else list(syn.columns)
    ends = _spread(partition.ends)
    lo = [[int(d[0])] * len(ends) for d in doms]
    hi = [[int(d[1])] * len(ends) for d in doms]
    hi[axis] = ends
    los = [_as_query(c, v, int(d[1])) for c, v, d in zip(cols, lo, doms)]
    his = [_as_query(c, v, int(d[1])) for c, v, d in zip(cols, hi, doms)]
    if isinstance(syn, IntervalSynopsis):
        cum = syn.count_many(los[0], his[0])
    else:
        cum = syn.count_many(_stack(los), _stack(his))
    # view_window reads a partition's domain and ends only
    return view_window(types.SimpleNamespace(domain=doms[axis], ends=ends), cum)


def _stack(parts):
    if all(p.dtype != object for p in parts) and len({p.dtype for p in parts}) == 1:
        return np.stack(parts, axis=1)
    return np.stack([p.astype(object) for p in parts], axis=1)


def _windows(pub):
    if pub.kind == "interval":
        return (_window(pub.obj, 0, pub.obj.partition),)
    if pub.kind == "rectangle":
        return tuple(_window(pub.obj, a, pub.obj.partitions[a]) for a in range(min(2, pub.dims)))
    return ()


def distribution(pub, bins=None, confidence=0.95):
    """What the page draws, released numbers only (cached per ``bins``).

    * interval: equal-width bins over the window, ``lo``/``hi`` in user units
      and each bin's ``answers``, ``std``, ``low``, ``high`` (nonnegative);
    * rectangle: a ``bins x bins`` heat map of axes 0 and 1 (the other axes
      over their whole domain): the edges and the answers, row by row of axis 1;
    * counter: its current release and error.
    """
    if pub.kind == "counter":
        return {"kind": "counter", "horizon": pub.obj.horizon,
                "release": pub.description["release"]}
    key = (bins, confidence)
    cached = pub.pictures.get(key)
    if cached is None:
        cached = _interval_picture(pub, bins, confidence) if pub.kind == "interval" \
            else _heat_map(pub, bins)
        if len(pub.pictures) >= _CACHED_PICTURES:
            pub.pictures.pop(next(iter(pub.pictures)))
        pub.pictures[key] = cached
    return cached


def _interval_picture(pub, bins, confidence):
    syn, col = pub.obj, pub.obj.column
    starts, stops = _bins(pub.windows[0][0], pub.windows[0][1], bins)
    bars = syn.confidence_intervals(_as_query(col, starts, syn.domain[1]),
                                    _as_query(col, stops, syn.domain[1]), confidence,
                                    nonnegative=True)
    return {"kind": "interval", "confidence": confidence,
            "lo": [col.format(v) for v in starts], "hi": [col.format(v) for v in stops],
            "answers": jsonable(bars.answer), "std": jsonable(bars.std),
            "low": jsonable(bars.low), "high": jsonable(bars.high)}


def _heat_map(pub, bins):
    syn = pub.obj
    if pub.dims < 2:
        raise RequestError(400, "a heat map needs two axes: query this synopsis by its boxes")
    doms = [(int(a), int(b)) for a, b in syn.domain]
    cols = syn.columns
    (s0, e0), (s1, e1) = (_bins(w[0], w[1], bins) for w in pub.windows)
    n0, n1 = len(s0), len(s1)
    i0, i1 = np.repeat(np.arange(n0), n1), np.tile(np.arange(n1), n0)
    lo, hi = [], []
    for a, (c, d) in enumerate(zip(cols, doms)):
        if a == 0:
            lo_ints, hi_ints = [s0[i] for i in i0], [e0[i] for i in i0]
        elif a == 1:
            lo_ints, hi_ints = [s1[i] for i in i1], [e1[i] for i in i1]
        else:
            lo_ints, hi_ints = [d[0]] * (n0 * n1), [d[1]] * (n0 * n1)
        lo.append(_as_query(c, lo_ints, d[1]))
        hi.append(_as_query(c, hi_ints, d[1]))
    counts, std = syn.count_many(_stack(lo), _stack(hi), return_std=True, nonnegative=True)
    grid = counts.reshape(n0, n1).T           # rows: axis 1, columns: axis 0
    return {"kind": "rectangle",
            "x": {"lo": [cols[0].format(v) for v in s0], "hi": [cols[0].format(v) for v in e0]},
            "y": {"lo": [cols[1].format(v) for v in s1], "hi": [cols[1].format(v) for v in e1]},
            "answers": jsonable(grid), "median_std": float(np.median(std))}
