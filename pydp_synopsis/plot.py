"""Pictures of releases, with their error bands (``pydp-synopsis plot``).

Every number drawn is a release or post-processing of releases: answers of
the synopsis (``count_many``), their per-query intervals
(``confidence_intervals``), a counter's printed releases and its public
noise law (``std``, the per-release tail).  Nothing here reads data, so a
picture costs no privacy; titles and labels hold public parameters only.

* :func:`plot_interval` -- an :class:`~pydp_synopsis.IntervalSynopsis` as
  the private distribution over its domain: counts per equal-width bin,
  with each bin's per-query interval as a band;
* :func:`plot_rectangle` -- a 2-D :class:`~pydp_synopsis.RectangleSynopsis`
  as a heat map of counts per cell (axes 0 and 1 of a wider one, over the
  full range of the others);
* :func:`plot_counter` -- a counter's running count (the releases it
  printed) with the per-release interval;
* :func:`plot_file` -- any saved file, as the command line does.

The view window of a synopsis, unless given, is taken from the released
answers: where the private cumulative count (at the released segment ends)
crosses 0.5% and 99.5% of the private total, widened by 5%.  matplotlib is
an optional dependency (``pip install 'pydp-synopsis[plot]'``); the figures
are drawn with its Agg canvas and never touch ``pyplot``'s global state.
"""
import datetime
import importlib
import math
import re
import zoneinfo

import numpy as np

from . import persist
from .errors import InputError, ParameterError, UsageError
from .inputs import parse_scale, to_fixed_point
from .params import check_int
from .intervals import IntervalSynopsis
from .noise import discrete_laplace_variance
from .plot_levels import plot_levels
from .rectangles import RectangleSynopsis
from .tails import laplace_sum_tail

__all__ = ["MAX_BINS", "MAX_BINS_2D", "check_bins", "require_matplotlib", "new_figure",
           "plot_interval", "plot_rectangle", "plot_counter", "plot_file", "read_releases",
           "view_window", "map_axes", "zone_ticks", "user_window", "LONGITUDE_NAMES",
           "LATITUDE_NAMES"]


def require_matplotlib(what="plotting"):
    """The ``matplotlib.figure.Figure`` class, or a one-line :class:`UsageError`.

    Call it before any work: a missing optional dependency should cost
    nothing (``demo --plot`` and ``plot`` check it first).
    """
    try:
        importlib.import_module("matplotlib.backends.backend_agg")   # the canvas of new_figure
        from matplotlib.figure import Figure
    except ImportError:
        raise UsageError(f"{what} needs matplotlib: pip install 'pydp-synopsis[plot]'") from None
    return Figure


def new_figure(size):
    """A matplotlib Figure on an Agg canvas (no pyplot state); ``size`` in inches."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = require_matplotlib()(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _unit(scale):
    """Divide offsets-in-the-domain's integers by this to get user units."""
    return 10 ** parse_scale(scale)


def _queries(column, ints):
    """Integer query corners as the synopsis takes them: unchanged for an integer
    column, else each value's exact text in the column's units (``Column.format``
    reads back to the same integer, time zones included)."""
    if column.is_plain:
        return ints
    return np.array([column.format(v) for v in np.asarray(ints).ravel().tolist()],
                    dtype=object).reshape(np.shape(ints))


def _axis(column, ints, scale):
    """``(x, label)``: integer positions on a plot axis, in the column's units.

    Decimals are divided by their scale (or multiplied by their resolution),
    dates and datetimes become ``datetime64`` (UTC for a zoned column), plain
    integers are divided by ``scale`` when one is given (files of release 0.1).
    """
    name = column.name or "value"
    ints = np.asarray([int(v) for v in ints], dtype=object)
    if column.kind in ("date", "datetime"):
        # instants as UTC datetime64; the ticks are drawn in the file's zone (_zone_ticks)
        zone = f" ({column.tz})" if column.tz else ""
        return column.values(ints.astype(np.int64)), f"{name}{zone}"
    if column.kind == "decimal":
        return np.array([float(v) for v in column.values(ints)]), name
    unit = _unit(scale)
    return np.array([float(v) for v in ints]) / unit, name


def view_window(partition, cumulative, share=0.005):
    """``(lo, hi)`` integers of the domain holding the private mass between quantiles.

    ``cumulative[i]`` is the private count up to the partition's segment
    end ``i`` (released numbers): the window runs from the first end where it
    reaches ``share`` of the private total to the first where it reaches
    ``1 - share``, widened by 5% and clipped to the domain.  Falls back to
    the whole domain when the private total is not positive.
    """
    lo, hi = (int(x) for x in partition.domain)
    ends = [int(e) for e in partition.ends]
    total = float(cumulative[-1]) if len(cumulative) else 0.0
    if not total > 0:
        return lo, hi
    cum = np.maximum.accumulate(np.asarray(cumulative, dtype=np.float64))
    i = int(np.searchsorted(cum, share * total, side="left"))
    j = int(np.searchsorted(cum, (1 - share) * total, side="left"))
    a = lo if i == 0 else ends[i - 1] + 1
    b = ends[min(j, len(ends) - 1)]
    pad = (b - a) // 20
    return max(lo, a - pad), min(hi, b + pad)


#: Most bins of a 1-D picture (an image 100 dpi wide shows ~900).
MAX_BINS = 10_000
#: Most bins per axis of a 2-D heat map (250,000 cells, each a query).
MAX_BINS_2D = 500


def check_bins(bins, most, name="bins"):
    """``bins`` as an int in ``[1, most]`` (ParameterError naming ``name`` otherwise).

    Examples
    --------
    >>> check_bins(60, MAX_BINS_2D)
    60
    """
    return check_int(bins, name, 1, most)


def _bins(lo, hi, bins):
    """``bins`` contiguous integer bins ``[starts, stops]`` covering ``[lo, hi]`` (fewer if narrow)."""
    width = hi - lo + 1
    bins = max(1, min(bins, width))
    edges = [lo + (width * i) // bins for i in range(bins + 1)]
    starts = np.array(edges[:-1], dtype=object)
    stops = np.array([e - 1 for e in edges[1:]], dtype=object)
    return starts, stops


def _as_int_array(values, domain):
    """Python ints as the dtype the synopsis takes for its domain (uint64 above int64)."""
    dtype = np.uint64 if domain[1] > np.iinfo(np.int64).max else np.int64
    return np.array([int(v) for v in values], dtype=dtype)


def plot_interval(syn, path=None, *, window=None, bins=200, confidence=0.95, scale=None, ax=None):
    """Draw an interval synopsis's private distribution with its per-bin band.

    Parameters
    ----------
    syn : IntervalSynopsis
    path : str, optional
        Write a PNG here (atomically); else only draw on ``ax``.
    window : (int, int), optional
        Inclusive domain range to draw; default :func:`view_window`.
    bins : int
        Equal-width bins over the window, in ``[1, MAX_BINS]`` (10,000).
    confidence : float
        Of each bin's interval (``confidence_intervals(..., method="calibrated")``:
        a model of the segments a bin cuts, labelled so; per bin, not
        simultaneous).
    scale : str, optional
        The fixed-point scale used at build (``"1e6"``): the axis in user units.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(syn, IntervalSynopsis):
        raise TypeError(f"syn must be an IntervalSynopsis, got {type(syn).__name__}")
    bins = check_bins(bins, MAX_BINS)
    dom, col = syn.domain, syn.column
    if window is None:
        ends = syn.partition.ends
        cum = syn.count_many(_queries(col, np.full(len(ends), dom[0], dtype=ends.dtype)),
                             _queries(col, ends))
        window = view_window(syn.partition, cum)
    starts, stops = _bins(int(window[0]), int(window[1]), int(bins))
    # the calibrated band (a model of the cut segments): the rigorous one is the
    # released count of every segment a bin cuts, which swamps narrow bins
    bars = syn.confidence_intervals(_queries(col, _as_int_array(starts, dom)),
                                    _queries(col, _as_int_array(stops, dom)),
                                    confidence, method="calibrated", nonnegative=True)
    x, xlabel = _axis(col, list(starts) + [int(stops[-1]) + 1], scale)
    fig, ax = _figure_and_axes(ax, (9, 4.5))
    which = "calibrated (a model)" if bars.method == "calibrated" else "rigorous"
    ax.fill_between(x, np.append(bars.low, bars.low[-1]), np.append(bars.high, bars.high[-1]),
                    step="post", alpha=0.3, color="tab:blue",
                    label=f"{100 * confidence:g}% interval per bin, {which}")
    ax.step(x, np.append(bars.answer, bars.answer[-1]), where="post", color="tab:blue", lw=1.2,
            label="private count (clipped at 0)")
    ax.set_xlabel(xlabel)
    zone_ticks(ax.xaxis, col)
    ax.set_ylabel(f"count per bin ({len(starts)} bins)")
    ax.set_title(f"IntervalSynopsis, epsilon = {syn.epsilon}: private distribution")
    ax.set_xlim(x[0], x[-1])
    ax.legend(loc="upper right", fontsize="small")
    return _finish(fig, path)


def plot_rectangle(syn, path=None, *, window=None, bins=60, scale=None, ax=None, axes=None):
    """Draw a rectangle synopsis as a heat map of private counts per cell (two of its axes).

    Parameters
    ----------
    syn : RectangleSynopsis
    path : str, optional
        Write a PNG here.
    window : sequence of two (int, int), optional
        Inclusive ranges of the drawn axes (x first, then y); default per axis
        from the private marginal (:func:`view_window`).
    axes : pair of int or str, optional
        The synopsis's axes drawn on x and y, by index or column name
        (``("lon", "lat")``); default :func:`map_axes` (axes 0 and 1, a
        latitude-like axis 0 put on y).
    bins : int
        Cells per axis, in ``[1, MAX_BINS_2D]`` (500).
    scale : str, optional
        The fixed-point scale used at build: axes in user units.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(syn, RectangleSynopsis):
        raise TypeError(f"syn must be a RectangleSynopsis, got {type(syn).__name__}")
    bins = check_bins(bins, MAX_BINS_2D)
    dom = [(int(a), int(b)) for a, b in syn.domain]
    c, cols = len(dom), syn.columns
    drawn = map_axes(cols, dom, axes)

    def corners(arr):
        out = np.empty(arr.shape, dtype=object)
        for a in range(c):
            out[:, a] = _queries(cols[a], _as_int_array(arr[:, a], dom[a]))
        return out if any(not col.is_plain for col in cols) else _corner_array(arr, dom)

    if window is None:
        window = []
        for axis in drawn:
            ends = syn.partitions[axis].ends
            lo = np.array([[d[0] for d in dom]] * len(ends), dtype=object)
            hi = np.array([[d[1] for d in dom]] * len(ends), dtype=object)
            hi[:, axis] = [int(e) for e in ends]
            cum = syn.count_many(corners(lo), corners(hi))
            window.append(view_window(syn.partitions[axis], cum))
    (s0, e0), (s1, e1) = (_bins(int(w[0]), int(w[1]), int(bins)) for w in window)
    g0, g1 = np.meshgrid(np.arange(len(s0)), np.arange(len(s1)), indexing="ij")
    q = g0.size
    lo = np.array([[d[0] for d in dom]] * q, dtype=object)
    hi = np.array([[d[1] for d in dom]] * q, dtype=object)
    lo[:, drawn[0]], hi[:, drawn[0]] = s0[g0.ravel()], e0[g0.ravel()]
    lo[:, drawn[1]], hi[:, drawn[1]] = s1[g1.ravel()], e1[g1.ravel()]
    counts, std = syn.count_many(corners(lo), corners(hi), return_std=True, nonnegative=True)
    (x0, label0), (x1, label1) = (_axis(cols[a], [s[0], int(e[-1]) + 1], scale)
                                  for a, (s, e) in zip(drawn, ((s0, e0), (s1, e1))))
    if any(cols[a].kind in ("date", "datetime") for a in drawn):
        import matplotlib.dates as mdates
        x0, x1 = (mdates.date2num(x) if x.dtype.kind == "M" else x for x in (x0, x1))
    extent = [float(x0[0]), float(x0[1]), float(x1[0]), float(x1[1])]
    fig, ax = _figure_and_axes(ax, (7.5, 6))
    image = ax.imshow(counts.reshape(len(s0), len(s1)).T, origin="lower", extent=extent,
                      aspect="auto", cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="private count per cell (clipped at 0)")
    if cols[drawn[0]].kind in ("date", "datetime"):
        ax.xaxis_date()
        zone_ticks(ax.xaxis, cols[drawn[0]])
    if cols[drawn[1]].kind in ("date", "datetime"):
        ax.yaxis_date()
        zone_ticks(ax.yaxis, cols[drawn[1]])
    ax.set_xlabel(f"axis {drawn[0]}: {label0}")
    ax.set_ylabel(f"axis {drawn[1]}: {label1}")
    extra = f", axes {drawn[0]} x {drawn[1]} of {c}" if c > 2 else ""
    ax.set_title(f"RectangleSynopsis, epsilon = {syn.epsilon}{extra}\n"
                 f"median noise std per cell ± {np.median(std):.3g}", fontsize="medium")
    return _finish(fig, path)


#: Column names read as longitude (drawn on x) and latitude (drawn on y) by :func:`map_axes`.
LONGITUDE_NAMES = ("lon", "lng", "long", "longitude", "x", "easting")
LATITUDE_NAMES = ("lat", "latitude", "y", "northing")


def _geo_kind(column, domain):
    """``"lon"``, ``"lat"`` or None: by the column's name (its last word: ``pickup_lon``),
    else, for a decimal column, by its domain (beyond [-90, 90] within [-180, 180]: lon)."""
    words = re.split(r"[^a-z]+", (column.name or "").lower())
    word = next((w for w in reversed(words) if w), "")
    if word in LONGITUDE_NAMES:
        return "lon"
    if word in LATITUDE_NAMES:
        return "lat"
    if column.kind == "decimal" and not column.name:
        lo, hi = (float(v) for v in column.values(np.array(domain, dtype=np.int64)))
        if -180 <= lo and hi <= 180 and (lo < -90 or hi > 90):
            return "lon"
    return None


def map_axes(columns, domains, axes=None):
    """The synopsis's axes drawn on x and y: ``axes`` (indices or column names), or axes 0
    and 1 with a longitude-like axis on x and a latitude-like one on y (a map, not its
    transpose).

    An axis is longitude-like when its name's last word is one of
    :data:`LONGITUDE_NAMES`, latitude-like for :data:`LATITUDE_NAMES`; an unnamed
    decimal axis whose domain lies in [-180, 180] and reaches beyond [-90, 90] is
    longitude-like.  Axes 0 and 1 are swapped when axis 0 is latitude-like and axis 1
    is not, or axis 1 is longitude-like and axis 0 is not.

    Examples
    --------
    >>> from pydp_synopsis.columns import Column
    >>> lat, lon = Column.decimal("lat", scale=100), Column.decimal("lon", scale=100)
    >>> map_axes([lat, lon], [(-9000, 9000), (-18000, 18000)])
    (1, 0)
    >>> map_axes([lat, lon], [(-9000, 9000), (-18000, 18000)], axes=("lat", "lon"))
    (0, 1)
    """
    c = len(columns)
    if axes is None:
        kinds = [_geo_kind(col, d) for col, d in zip(columns[:2], domains[:2])]
        swap = (kinds[0] == "lat" and kinds[1] != "lat") or \
            (kinds[1] == "lon" and kinds[0] != "lon")
        return (1, 0) if swap else (0, 1)
    names = [col.name for col in columns]
    if isinstance(axes, str):
        axes = [a.strip() for a in axes.split(",")]
    axes = list(axes)
    if len(axes) != 2:
        raise ParameterError(f"axes must name two axes (x, y), got {len(axes)}")
    out = []
    for a in axes:
        if isinstance(a, str) and a in names:
            out.append(names.index(a))
        elif isinstance(a, (int, np.integer)) and not isinstance(a, bool) and 0 <= a < c:
            out.append(int(a))
        elif isinstance(a, str) and a.isdigit() and int(a) < c:
            out.append(int(a))
        else:
            shown = ", ".join(n for n in names if n) or "none"
            raise ParameterError(f"axes: {a!r} is no axis of the synopsis (indices 0 to "
                                 f"{c - 1}; column names: {shown})")
    if out[0] == out[1]:
        raise ParameterError("axes must name two different axes")
    return tuple(out)


def zone_ticks(axis, column):
    """Draw a time axis's ticks as wall times in the column's time zone (its values are
    UTC instants; matplotlib would show them in UTC)."""
    if column.kind != "datetime" or not column.tz:
        return
    import matplotlib.dates as mdates

    zone = datetime.timezone.utc if column.tz.upper() == "UTC" else zoneinfo.ZoneInfo(column.tz)
    locator = mdates.AutoDateLocator(tz=zone)
    axis.set_major_locator(locator)
    axis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=zone))


def user_window(syn, window, drawn=(0,), scale=None, name="window"):
    """A plot window given in the synopsis's units (dates, decimals, ints) as integer
    ``(lo, hi)`` pairs, one per drawn axis (``drawn``: their indices, x then y);
    errors name ``name`` (``--range``).  A file without units reads decimals by
    ``scale`` (files of release 0.1).  A window reaching past the domain is
    clipped to it; one wholly outside it is an error."""
    cols = (syn.column,) if isinstance(syn, IntervalSynopsis) else syn.columns
    if len(window) != len(drawn):
        raise UsageError(f"{name} gives {len(window)} ranges for the {len(drawn)} drawn "
                         f"axes")
    out = []
    for a, pair in zip(drawn, window):
        col = cols[a]
        try:
            lo, hi = pair
            if col.is_plain:
                ints = to_fixed_point([str(lo), str(hi)], scale, name)
            else:
                ints = [col.to_int(b, name, side) for b, side in ((lo, "lo"), (hi, "hi"))]
            lo, hi = int(ints[0]), int(ints[1])
        except (InputError, TypeError, ValueError) as exc:
            raise UsageError(f"{name} entry {pair[0]}:{pair[1]}: {exc}") from None
        if lo > hi:
            raise UsageError(f"{name} entry {pair[0]}:{pair[1]}: lo must be <= hi")
        dom = syn.domain if isinstance(syn, IntervalSynopsis) else syn.domain[a]
        if hi < dom[0] or lo > dom[1]:
            raise UsageError(f"{name} entry {pair[0]}:{pair[1]} lies outside the domain "
                             f"[{col.format(dom[0])}, {col.format(dom[1])}]")
        out.append((max(lo, int(dom[0])), min(hi, int(dom[1]))))   # the part in the domain
    return out


def _corner_array(rows, dom):
    dtype = np.uint64 if any(d[1] > np.iinfo(np.int64).max for d in dom) else np.int64
    return np.array(rows.tolist(), dtype=dtype) if len(rows) else np.zeros((0, len(dom)), dtype)


def _counter_tail(counter, times, confidence):
    """Per release, a ``t`` with ``P(|noise_t| > t) <= 1 - confidence`` (rigorous).

    The release at t sums ``std(t)**2 / Var`` i.i.d. discrete Laplace terms
    of the counter's scale: the Chernoff bound with the exact MGF
    (:func:`~pydp_synopsis.tails.laplace_sum_tail`), both signs.
    """
    var = discrete_laplace_variance(counter.noise_scale)
    terms = np.rint(counter.std(times) ** 2 / var).astype(np.int64)
    log_inv = math.log(2.0 / (1.0 - confidence))
    tails = {n: (laplace_sum_tail(int(n), counter.noise_scale, log_inv) if n else 0.0)
             for n in np.unique(terms)}
    return np.array([tails[n] for n in terms])


def plot_counter(counter, releases, path=None, *, start=0, confidence=0.95, ax=None):
    """Draw a counter's running count (its releases) with the per-release interval.

    Parameters
    ----------
    counter : BinaryTreeCounter, KaryTreeCounter or SparseStreamCounter
        The counter (or its checkpoint) that made the releases: only its
        public parameters are read (the noise law of each release).
    releases : array_like of int
        The releases at times ``start + 1, start + 2, ...`` (what
        ``update_many`` returned or ``count-stream`` printed).
    path : str, optional
        Write a PNG here.
    start : int
        The time before the first release.
    confidence : float
        Of each release's interval (rigorous per release; tree counters).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    rel = np.asarray(releases, dtype=np.float64).ravel()
    times = np.arange(start + 1, start + 1 + len(rel))
    if len(rel) and times[-1] > counter.horizon:
        raise UsageError(f"{len(rel):,} releases after time {start:,} go past the counter's "
                         f"horizon {counter.horizon:,}")
    fig, ax = _figure_and_axes(ax, (9, 4.5))
    if hasattr(counter, "std") and len(rel):
        half = _counter_tail(counter, times, confidence)
        ax.fill_between(times, rel - half, rel + half, alpha=0.3, color="tab:orange", lw=0,
                        label=f"{100 * confidence:g}% interval per release")
    ax.plot(times, rel, color="tab:orange", lw=1, label="private running count")
    ax.set_xlabel("time (items)")
    ax.set_ylabel("running count")
    ax.set_title(f"{type(counter).__name__}, epsilon = {counter.epsilon}, "
                 f"horizon = {counter.horizon:,}")
    ax.legend(loc="upper left", fontsize="small")
    return _finish(fig, path)


def _figure_and_axes(ax, size):
    if ax is not None:
        return ax.figure, ax
    fig = new_figure(size)
    return fig, fig.add_subplot(1, 1, 1)


def _finish(fig, path):
    if path is not None:
        fig.tight_layout()
        persist.atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=100))
    return fig


def read_releases(path):
    """The releases ``count-stream`` printed: one integer per line, or ``time,value`` lines."""
    times, values = [], []
    try:
        with open(path) as fh:
            for number, line in enumerate(fh, 1):
                line = line.strip()
                if not line:
                    continue
                parts = line.split(",")
                try:
                    if len(parts) == 2:
                        times.append(int(parts[0]))
                        values.append(int(parts[1]))
                    elif len(parts) == 1:
                        values.append(int(parts[0]))
                    else:
                        raise ValueError
                except ValueError:
                    raise UsageError(f"{path}: line {number:,} is not a release (an integer, or "
                                     f"time,value)") from None
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    if times and len(times) != len(values):
        raise UsageError(f"{path}: mixes 'time,value' lines with plain releases")
    return (np.array(times) if times else None), np.array(values, dtype=np.int64)


def plot_file(path, output, *, releases=None, confidence=0.95, scale=None, bins=None,
              window=None, axes=None):
    """Draw the saved synopsis or checkpoint at ``path`` into the PNG ``output``.

    A counter checkpoint holds no past releases: give the file ``count-stream``
    printed as ``releases``.  ``window``: ``(lo, hi)`` pairs in the synopsis's
    units, one per drawn axis (:func:`user_window`; errors name ``--range``);
    ``axes``: a rectangle synopsis's drawn axes (:func:`map_axes`).  Returns a
    one-line description of the picture.
    """
    if bins is not None:
        check_bins(bins, MAX_BINS, "--bins")
    obj = persist.load(path)
    if isinstance(obj, RectangleSynopsis) and bins is not None:
        check_int(bins, "--bins (per axis of a rectangle synopsis)", 1, MAX_BINS_2D)
    if getattr(getattr(obj, "column", None), "kind", None) == "category":
        plot_levels(obj, output, confidence=confidence)
        return "counts by level with per-level intervals"
    if isinstance(obj, (IntervalSynopsis, RectangleSynopsis)) and window is not None:
        drawn = (0,) if isinstance(obj, IntervalSynopsis) else \
            map_axes(obj.columns, obj.domain, axes)
        window = user_window(obj, window, drawn, scale, "--range")
    if isinstance(obj, IntervalSynopsis):
        plot_interval(obj, output, bins=200 if bins is None else bins, confidence=confidence, scale=scale,
                      window=None if window is None else window[0])
        return "interval synopsis: private distribution with per-bin intervals"
    if isinstance(obj, RectangleSynopsis):
        plot_rectangle(obj, output, bins=60 if bins is None else bins, scale=scale,
                       window=window, axes=axes)
        return "rectangle synopsis: heat map of private counts"
    if releases is None:
        raise UsageError(f"{path} is a {type(obj).__name__} checkpoint, which holds no past "
                         f"releases: give the count-stream output with --releases FILE")
    times, values = read_releases(releases)
    if times is not None:           # sparse counter: steps at the printed times
        # the release is 0 before the first seal; the picture ends at the last
        # printed seal (the checkpoint's time may be a data position: not drawn)
        times = np.concatenate([[0], times])
        values = np.concatenate([[0], values])
        fig, ax = _figure_and_axes(None, (9, 4.5))
        ax.step(times, values, where="post", color="tab:orange", label="private running count")
        ax.set_xlabel("time")
        ax.set_ylabel("running count")
        ax.set_title(f"{type(obj).__name__}, epsilon = {obj.epsilon}")
        ax.legend(loc="upper left", fontsize="small")
        _finish(fig, output)
        return "sparse counter: running count at the printed times"
    plot_counter(obj, values, output, confidence=confidence)
    return "counter: running count with per-release intervals"
