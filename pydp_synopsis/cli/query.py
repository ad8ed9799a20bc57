"""``pydp-synopsis query`` (counts with their error bars, one query or a file of
them, written whole or not at all) and ``pydp-synopsis info`` (what a saved file
holds: public parameters only)."""
import csv
import io
import sys
import warnings

import numpy as np

from .. import persist
from ..errors import InputError, QueryClippedWarning, SynopsisError, UsageError
from ..inputs import parse_scale, to_fixed_point
from ..intervals import IntervalSynopsis
from ..partitions.merge import partition_summary
from ..level_histogram import LevelHistogram
from ..queryfiles import located, query_chunks, spooled_stdout
from ..rectangles import RectangleSynopsis
from ..sources.files import in_file
from .categories import by_level, count_levels, levels_lines
from .quantile import cmd_distribution, wants_distribution
from .common import check_output_option, delimiter_of, full_text, shown_text
from .sums import cmd_query_sums, print_sums_info

__all__ = ["cmd_query", "cmd_info"]

#: The synopses of one column (queries are one lo and one hi).
ONE_COLUMN = (IntervalSynopsis, LevelHistogram)


def _parse_point(text, dims, name, scale):
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != dims:
        raise UsageError(f"{name} needs {dims} comma-separated value(s), got {text!r}")
    try:
        return to_fixed_point(parts, scale, name)
    except InputError as exc:
        raise UsageError(str(exc)) from None


def _columns_of(syn):
    """The synopsis's column descriptions, or None (a file of integers: release
    0.1, or built without names)."""
    cols = (syn.column,) if isinstance(syn, ONE_COLUMN) else syn.columns
    return None if all(c.is_plain and c.name is None for c in cols) else cols


def _query_units(syn, scale):
    """How ``--lo``/``--hi`` and query files are read: None (integers, or decimals by
    ``--scale`` for files without a description) or the synopsis's columns, whose
    units they are given in; a ``--scale`` contradicting the file is an error."""
    cols = _columns_of(syn)
    if cols is None or all(c.is_plain for c in cols):
        return None
    if scale is not None:
        k = parse_scale(scale)
        for c in cols:
            if c.kind != "decimal" or c.resolution is not None or c.scale != 10**k:
                raise UsageError(f"--scale {scale} contradicts the synopsis: column "
                                 f"{c.name or '?'} is {c.describe()} (the file says how to "
                                 f"read queries: drop --scale)")
    return cols


def _parse_user_point(text, dims, name):
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != dims:
        raise UsageError(f"{name} needs {dims} comma-separated value(s), got {text!r}")
    return np.array(parts, dtype=object)


def _dims(syn):
    return 1 if isinstance(syn, ONE_COLUMN) else len(syn.domain)


def _error_bars(syn, lo, hi, confidence, nonnegative, method="rigorous"):
    """Per-query :class:`~pydp_synopsis.errorbars.ErrorBars` of (q, dims) corners."""
    if isinstance(syn, ONE_COLUMN):
        lo, hi = lo[:, 0], hi[:, 0]
    return syn.confidence_intervals(lo, hi, confidence, method=method, nonnegative=nonnegative)


def _print_one_answer(bars, bound, confidence):
    pct = f"{100 * confidence:g}%"
    which = "this query" if bars.method == "rigorous" else "this query, calibrated model"
    print(f"{shown_text(bars.answer[0])} ± {shown_text(bars.std[0])} (noise std); "
          f"{pct} interval [{shown_text(bars.low[0])}, {shown_text(bars.high[0])}] ({which})")
    print(f"simultaneous {pct} bound (all queries at once): ± {shown_text(bound)}")


def _bars_checked(syn, lo, hi, confidence, nonnegative, method, clipped=None):
    """:func:`_error_bars`; a value that is no date/decimal of its column is a usage error.
    ``clipped``: a :class:`ClipNote` counting the queries clipped to the domain."""
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", QueryClippedWarning)
            bars = _error_bars(syn, lo, hi, confidence, nonnegative, method)
    except TypeError as exc:
        raise UsageError(str(exc)) from None
    for w in seen:
        if clipped is not None and isinstance(w.message, QueryClippedWarning):
            clipped.add(w.message)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return bars


class ClipNote:
    """The queries a command clipped to the domain, said in one note line at its end."""

    def __init__(self):
        self.clipped = self.outside = self.total = 0
        self.domain = ""

    def add(self, warning):
        self.clipped += warning.clipped
        self.outside += warning.outside
        self.total += warning.total
        self.domain = warning.domain

    def say(self):
        """The note on stderr (nothing when no query was clipped)."""
        if self.clipped:
            wholly = f"; {self.outside} wholly outside it: answered 0" if self.outside else ""
            print(f"pydp-synopsis: note: {self.clipped} of {self.total} queries reach "
                  f"outside the domain {self.domain}: answered over their part inside it "
                  f"(clipped){wholly}", file=sys.stderr)


def cmd_query(args):
    if wants_distribution(args):          # --quantile, --cdf, --histogram: cli/quantile.py
        return cmd_distribution(args)
    if args.output:
        check_output_option(args.output, args.synopsis, args.queries)
    delimiter = delimiter_of(args)
    syn = persist.load(args.synopsis)
    if not isinstance(syn, (*ONE_COLUMN, RectangleSynopsis)):
        raise UsageError(f"{args.synopsis} is a {type(syn).__name__} checkpoint, not a synopsis")
    if args.by_level:
        return by_level(syn, args, delimiter)
    if args.count_levels is not None:           # --levels A,B (cli/categories.py)
        return count_levels(syn, args)
    if args.sum or args.mean:                   # range sums and means (cli/sums.py)
        return cmd_query_sums(args, syn)
    dims = _dims(syn)
    units = _query_units(syn, args.scale)
    bound = syn.error_bound(args.confidence)
    if args.queries is None:
        if args.lo is None or args.hi is None:
            raise UsageError("give --lo and --hi, or --queries FILE.csv")
        if units is not None:
            lo = _parse_user_point(args.lo, dims, "--lo")[None, :]
            hi = _parse_user_point(args.hi, dims, "--hi")[None, :]
        else:
            lo = _parse_point(args.lo, dims, "--lo", args.scale)[None, :]
            hi = _parse_point(args.hi, dims, "--hi", args.scale)[None, :]
        note = ClipNote()
        bars = _bars_checked(syn, lo, hi, args.confidence, args.nonnegative, args.interval,
                             note)
        note.say()
        if args.output:       # the --queries file's format, one row
            texts = [p.strip() for text in (args.lo, args.hi) for p in str(text).split(",")]
            names = _query_columns(dims)

            def write_one(fh):
                text = io.StringIO()
                _answer_rows(_answers_writer(text, names, delimiter), names,
                             [dict(zip(names, texts))], bars, bound)
                fh.write(text.getvalue().encode())

            persist.atomic_write(args.output, write_one)
            return 0
        _print_one_answer(bars, bound, args.confidence)
        return 0
    names = _query_columns(dims)
    note = ClipNote()

    def write(fh):            # chunk by chunk: memory O(chunk), not O(file)
        text = io.StringIO()
        writer = _answers_writer(text, names, delimiter)
        for before, rows in query_chunks(args.queries, names, delimiter):
            if units is not None:
                table = {n: np.array([r[n] for r in rows], dtype=object) for n in names}
            else:
                try:
                    table = {n: to_fixed_point([r[n] for r in rows], args.scale, n) for n in names}
                except InputError as exc:
                    raise in_file(exc, args.queries) from None
            lo = np.column_stack([table[n] for n in names[:dims]])
            hi = np.column_stack([table[n] for n in names[dims:]])
            try:
                bars = _bars_checked(syn, lo, hi, args.confidence, args.nonnegative,
                                     args.interval, note)
            except (SynopsisError, ValueError) as exc:
                raise located(exc, before) from None
            _answer_rows(writer, names, rows, bars, bound)
            fh.write(text.getvalue().encode())
            text.seek(0)
            text.truncate()
        fh.write(text.getvalue().encode())

    if args.output:
        persist.atomic_write(args.output, write)
    else:
        spooled_stdout(write)
    note.say()
    return 0


def _query_columns(dims):
    """The corner columns of a query file: lo,hi or lo_0..,hi_0.."""
    if dims == 1:
        return ["lo", "hi"]
    return [f"lo_{a}" for a in range(dims)] + [f"hi_{a}" for a in range(dims)]


def _answers_writer(text, names, delimiter):
    """A CSV writer on ``text`` that has written the answers' header: the query
    columns ``names``, then answer,std,low,high,simultaneous_bound."""
    writer = csv.writer(text, lineterminator="\n", delimiter=delimiter)
    writer.writerow(names + ["answer", "std", "low", "high", "simultaneous_bound"])
    return writer


def _answer_rows(writer, names, rows, bars, bound):
    """One CSV row per query: its columns as given, then its answer and error bars."""
    for i, r in enumerate(rows):
        writer.writerow([r[n] for n in names]
                        + [full_text(x[i]) for x in (bars.answer, bars.std, bars.low, bars.high)]
                        + [full_text(bound)])


def cmd_info(args):
    kind, meta, arrays, info = persist.read_record(args.path)
    obj = persist.load(args.path)
    print(f"kind:           {kind}")
    print(f"format version: {info['format_version']}")
    print(f"created:        {info['created']}")
    keys = ("epsilon", "beta", "domain")
    if isinstance(obj, IntervalSynopsis):
        keys += ("tree",) + (("k",) if obj.tree == "kary" else ("fanout", "level_ratio"))
        keys += ("estimator",)
    elif isinstance(obj, RectangleSynopsis):
        keys += ("structure",)
    elif isinstance(obj, LevelHistogram):
        keys += ("noise_scale",)
    else:
        keys += ("horizon", "k", "time")
    for key in keys:
        value = getattr(obj, key, None)
        if value is not None:
            print(f"{key + ':':<15} {value}")
    if getattr(obj, "clipped", False):
        print("clipped:        yes (values outside the domain counted at its nearest end)")
    cols = _columns_of(obj) if isinstance(obj, (*ONE_COLUMN, RectangleSynopsis)) else None
    if cols is not None:
        doms = [obj.domain] if isinstance(obj, ONE_COLUMN) else obj.domain
        for a, (c, (lo, hi)) in enumerate(zip(cols, doms)):
            label = c.name if c.name is not None else str(a)
            print(f"{'column ' + label + ':':<15} {c.describe()}, domain "
                  f"{c.format(lo)} .. {c.format(hi)}")
            for line in levels_lines(c):
                print(line)
    if isinstance(obj, IntervalSynopsis):
        print(f"segments:       {len(obj):,}")
        print(f"partition:      {partition_summary(obj.partition)}")
        if obj.workload is not None:          # public: the declared queries and the choice
            w = obj.workload
            print(f"workload:       {w.workload} ({w.queries:,} queries): fanout {w.fanout}, "
                  f"level ratio {w.level_ratio}; mean noise variance {w.variance:.4g} "
                  f"(default tree {w.default_variance:.4g})")
            if w.partition is not None:       # the public rule's partition options
                print(f"{'':16}{w.partition.describe()}")
        print_sums_info(obj)
    elif isinstance(obj, RectangleSynopsis):
        print(f"nodes:          {obj.num_nodes:,}")
        if getattr(obj, "workload", None) is not None:
            w = obj.workload

            def shown(v):                         # a fanout per axis, or one share
                return ", ".join(map(str, v)) if isinstance(v, tuple) else str(v)
            print(f"workload:       {w.workload} ({w.queries:,} boxes): {w.option} "
                  f"{shown(w.value)} (default {shown(w.default)})")
        print(f"segments/axis:  {', '.join(str(len(p)) for p in obj.partitions)}")
        if obj.seal_shares is not None:       # released shares (post-processing)
            print(f"seal shares:    {', '.join(f'{r:.3f}' for r in obj.seal_shares)}")
        if obj.fine_constant is not None:     # a public rule of released counts
            print(f"fine constant:  {obj.fine_constant:g}")
    return 0

