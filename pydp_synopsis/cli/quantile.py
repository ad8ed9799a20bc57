"""``pydp-synopsis query SYN --quantile 0.5,0.9`` (and ``--cdf X``, ``--histogram N``):
the distribution read from an interval synopsis, in its units, at no privacy cost
(post-processing of the saved release: :mod:`pydp_synopsis.quantiles`); of one axis of
a rectangle synopsis with ``--axis A`` (:mod:`pydp_synopsis.rectangles.marginals`)."""
import argparse
import csv
import io
import sys
from fractions import Fraction

import numpy as np

from .. import persist
from ..arguments import integer, real
from ..errors import DomainError, InputError, ParameterError, UsageError
from ..intervals import IntervalSynopsis
from ..rectangles import RectangleSynopsis
from .common import check_output_option, full_text

__all__ = ["OPTIONS", "add_distribution_options", "wants_distribution", "cmd_distribution"]

#: The options this module adds to ``query`` (in the order they are checked).
OPTIONS = ("quantile", "cdf", "histogram")


def add_distribution_options(parser):
    """Add ``--quantile``, ``--cdf`` and ``--histogram`` to the ``query`` parser."""
    parser.add_argument("--quantile", metavar="Q[,Q...]",
                        help="private quantiles, each Q in [0, 1] (e.g. 0.5,0.9), in the "
                             "synopsis's units (interval synopses; no privacy cost)")
    parser.add_argument("--cdf", metavar="X[,X...]",
                        help="private fraction and count of rows <= X, X in the synopsis's units")
    parser.add_argument("--histogram", metavar="N|E,E,...",
                        help="private counts of N equal-width bins over the domain (or of the "
                             "bins between the given edges) with per-bin intervals at "
                             "--confidence")
    parser.add_argument("--axis", metavar="A",
                        help="rectangle synopses: the axis of --quantile, --cdf, --histogram "
                             "(its index from 0 or its column's name)")


def wants_distribution(args):
    """True when ``args`` ask for one of :data:`OPTIONS` (then it must be the only question)."""
    asked = [name for name in OPTIONS if getattr(args, name, None) is not None]
    if not asked:
        if getattr(args, "axis", None) is not None:
            raise UsageError("--axis goes with --quantile, --cdf or --histogram")
        return False
    if len(asked) > 1 or args.lo is not None or args.hi is not None or args.queries is not None:
        others = [f"--{n}" for n in asked] + [f"--{n}" for n in ("lo", "hi", "queries")
                                              if getattr(args, n) is not None]
        raise UsageError(f"give one of --quantile, --cdf, --histogram, or --lo/--hi, or "
                         f"--queries; got {' '.join(others)}")
    return True


def _items(text, name):
    parts = [p.strip() for p in str(text).split(",")]
    if not all(parts):
        raise UsageError(f"--{name}: an empty value in {text!r}")
    return parts


def _fractions(text):
    out = []
    for p in _items(text, "quantile"):
        try:
            out.append(real(p))
        except argparse.ArgumentTypeError:
            raise UsageError(f"--quantile: {p!r} is not a number in [0, 1]") from None
    return np.array(out)


def _points(syn, text, name):
    """Comma-separated values as the synopsis takes them (ints for an integer one)."""
    parts = _items(text, name)
    if not syn.column.is_plain:
        return np.array(parts, dtype=object)
    try:
        return np.array([integer(p) for p in parts], dtype=object)
    except argparse.ArgumentTypeError:
        raise UsageError(f"--{name}: the synopsis holds integers, got {text!r}") from None


def _grid(syn, values):
    """Values returned in the synopsis's units -> their integers (Python ints)."""
    col = syn.column
    flat = np.ravel(values)
    if col.is_plain:
        return [int(v) for v in flat.tolist()]
    if col.kind == "decimal":         # floats of grid points: the nearest grid integer
        step = 1 / col.scale if col.resolution is None else float(Fraction(col.resolution))
        return [int(v) for v in np.rint(flat.astype(np.float64) / step).tolist()]
    return col.to_int(flat, "values", None, utc=col.tz is not None).tolist()


def _texts(syn, ints):
    """Integers as the user values they stand for (ISO dates and times in the column's
    time zone, exact decimals, integers)."""
    return [syn.column.format(v) for v in ints]


def _marginal(syn, args):
    """The :class:`~pydp_synopsis.rectangles.marginals.AxisMarginal` ``--axis`` names."""
    if args.axis is None:
        raise UsageError(f"--axis is required for a rectangle synopsis (an index from 0 to "
                         f"{syn.dims - 1} or a column's name)")
    axis = args.axis.strip()
    try:
        return syn.marginal(int(axis) if axis.lstrip("-").isdigit() else axis)
    except (ParameterError, TypeError) as exc:
        raise UsageError(f"--axis: {exc}") from None


def cmd_distribution(args):
    """Answer ``--quantile``, ``--cdf`` or ``--histogram`` (CSV on stdout or ``--output``)."""
    if args.output:
        check_output_option(args.output, args.synopsis, None)
    syn = persist.load(args.synopsis)
    if isinstance(syn, RectangleSynopsis):
        syn = _marginal(syn, args)
    elif not isinstance(syn, IntervalSynopsis):
        raise UsageError(f"--quantile, --cdf and --histogram need an interval or rectangle "
                         f"synopsis; {args.synopsis} is a {type(syn).__name__}")
    elif args.axis is not None:
        raise UsageError("--axis applies to a rectangle synopsis; an interval synopsis has "
                         "one axis")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    try:
        if args.quantile is not None:
            q = _fractions(args.quantile)
            writer.writerow(["q", "value"])
            values = _texts(syn, _grid(syn, syn.quantile(q)))
            writer.writerows(zip([full_text(v) for v in q], values))
        elif args.cdf is not None:
            x = _points(syn, args.cdf, "cdf")
            frac, count = syn.cdf(x), syn.cdf(x, counts=True)
            writer.writerow(["x", "cdf", "count"])
            for row in zip(_items(args.cdf, "cdf"), frac.tolist(), count.tolist()):
                writer.writerow([row[0], full_text(row[1]), full_text(row[2])])
        else:
            parts = _items(args.histogram, "histogram")
            if len(parts) == 1:
                try:
                    bins = integer(parts[0])
                except argparse.ArgumentTypeError:
                    raise UsageError(f"--histogram: give a number of bins or two or more "
                                     f"edges, got {args.histogram!r}") from None
            else:
                bins = _points(syn, args.histogram, "histogram")
            counts, edges, bars = syn.histogram(bins, confidence=args.confidence)
            e = _grid(syn, edges)
            # each bin as the inclusive range --lo/--hi would ask for
            lo, hi = _texts(syn, e[:-1]), _texts(syn, [v - 1 for v in e[1:-1]] + e[-1:])
            writer.writerow(["lo", "hi", "count", "std", "low", "high"])
            for j in range(len(counts)):
                writer.writerow([lo[j], hi[j]] + [full_text(x[j]) for x in
                                                  (counts, bars.std, bars.low, bars.high)])
    except (TypeError, InputError, ParameterError, DomainError) as exc:
        option = next(name for name in OPTIONS if getattr(args, name) is not None)
        raise UsageError(f"--{option}: {exc}") from None
    data = text.getvalue().encode()
    if args.output:
        persist.atomic_write(args.output, lambda fh: fh.write(data))
    else:
        sys.stdout.write(data.decode())
    return 0
