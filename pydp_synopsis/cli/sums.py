"""Range sums on the command line: ``build --sum COLUMN --sum-bounds LO:HI``, ``query --sum`` /
``query --mean``, and the sums' lines of ``info`` (pydp_synopsis/range_sums.py)."""
import dataclasses
import io

import numpy as np

from .. import persist
from ..errors import InputError, SynopsisError, UsageError
from ..inputs import parse_scale, read_columns
from ..intervals import IntervalSynopsis
from ..params import check_share
from ..queryfiles import located, query_chunks, spooled_stdout
from ..range_sums import check_sum_options
from ..sources.files import in_file
from .common import full_text, shown_text

__all__ = ["add_build_arguments", "add_query_arguments", "wants_sums", "check_build_sums",
           "build_with_sums", "cmd_query_sums", "print_sums_info"]


def add_build_arguments(b):
    """``build``'s sum options."""
    b.add_argument("--sum", metavar="COLUMN",
                   help="also release range sums (and means) of this numeric column over "
                        "ranges of the --columns one (needs --sum-bounds)")
    b.add_argument("--sum-bounds", dest="sum_bounds", metavar="LO:HI",
                   help="public bounds of the --sum column (lo < hi, its units): values are "
                        "clipped to them; the sums' noise grows with hi - lo")
    b.add_argument("--sum-scale", dest="sum_scale", metavar="10^K",
                   help="power of ten turning the --sum column's decimals into integers "
                        "(e.g. 1e2 for cents; default: whole numbers)")
    b.add_argument("--sum-share", dest="sum_share", metavar="S",
                   help="share of the trees' budget spent on the sums, in (0, 1) (default 0.5)")


def add_query_arguments(q):
    """``query``'s sum options."""
    g = q.add_mutually_exclusive_group()
    g.add_argument("--sum", action="store_true",
                   help="answer range sums of the synopsis' --sum column instead of counts")
    g.add_argument("--mean", action="store_true",
                   help="answer range means of the synopsis' --sum column instead of counts")


def wants_sums(args):
    """Whether ``build`` was asked for sums (any sum option given)."""
    return any(getattr(args, k, None) is not None
               for k in ("sum", "sum_bounds", "sum_scale", "sum_share"))


def _bounds(text):
    parts = str(text).split(":")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise UsageError(f"--sum-bounds must be LO:HI, got {text!r}")
    return parts[0].strip(), parts[1].strip()


def check_build_sums(args, columns, units, dims):
    """Every sum option checked before any data is read (UsageError, one line)."""
    if args.sum is None:
        raise UsageError("--sum-bounds, --sum-scale and --sum-share need --sum COLUMN")
    if args.sum_bounds is None:
        raise UsageError("--sum needs --sum-bounds LO:HI (public bounds of its values)")
    if dims != 1 or len(columns) != 1:
        raise UsageError("--sum needs one --columns column (an interval synopsis)")
    if args.input is None and args.sql is None:
        raise UsageError("--sum reads an --input file or a --database with --sql")
    if args.table is not None or args.engine not in (None, "local") or args.shards is not None:
        raise UsageError("--sum reads the two columns in memory: use --input (or --sql), "
                         "not --table, --engine or --shards")
    if args.dropna:
        raise UsageError("--sum needs rows without missing values: drop --dropna")
    if units is not None and not all(c.is_plain for c in units):
        raise UsageError("--sum needs an integer --columns column (dates, --scale or "
                         "--resolution: use the Python API)")
    if args.sum == columns[0]:
        raise UsageError("--sum names the --columns column itself: give another column")
    try:
        if args.sum_share is not None:
            check_share(float(args.sum_share), "--sum-share")
        parse_scale(args.sum_scale)
        check_sum_options(np.zeros(0), _bounds(args.sum_bounds), None, args.sum_scale, 1,
                          None, None, False, "hierarchical", 16, 1, 0)
    except (TypeError, ValueError) as exc:
        text = str(exc).replace("sum_bounds", "--sum-bounds").replace("sum_scale", "--sum-scale")
        raise UsageError(text) from None


def build_with_sums(args, columns, domain, rng):
    """Read the two columns (in memory) and build the synopsis with its range sums."""
    k = parse_scale(args.sum_scale)
    x, = read_columns(args.input, columns, sql=args.sql, database=args.database)
    # the sum column at its scale (exact integers), handed back as values of that scale
    v, = read_columns(args.input, [args.sum], sql=args.sql, database=args.database,
                      scale=args.sum_scale)
    if x.size != v.size:
        raise InputError("--sum: the two columns have different lengths")
    values = v / 10**k if k else v
    share = None if args.sum_share is None else float(args.sum_share)
    syn = IntervalSynopsis.build(
        x, domain=domain[0], epsilon=args.epsilon, beta=args.beta, rng=rng,
        partition=args.partition, clip=args.clip, sum_of=values,
        sum_bounds=_bounds(args.sum_bounds), sum_scale=args.sum_scale, sum_share=share)
    syn.sums.column = dataclasses.replace(syn.sums.column, name=args.sum)   # saved with it
    return syn


def _parse(syn, texts, name):
    """Query bounds: integers, or text in the synopsis' units (dates, decimals)."""
    texts = [str(t).strip() for t in texts]
    if not syn.column.is_plain:
        return np.array(texts, dtype=object)
    try:
        return np.array([int(t) for t in texts], dtype=object)
    except ValueError:
        raise UsageError(f"{name} must be integers of the synopsis' column") from None


def _bars(syn, lo, hi, mean, confidence):
    try:
        if mean:
            return syn.mean_intervals(lo, hi, confidence)
        return syn.sum_intervals(lo, hi, confidence)
    except TypeError as exc:
        raise UsageError(str(exc)) from None


def cmd_query_sums(args, syn):
    """``query --sum`` / ``query --mean``: answers with std and per-query intervals."""
    if not isinstance(syn, IntervalSynopsis) or syn.sums is None:
        raise UsageError(f"{args.synopsis} holds no range sums (build it with --sum COLUMN "
                         f"--sum-bounds LO:HI)")
    what = "mean" if args.mean else "sum"
    if args.queries is None:
        if args.lo is None or args.hi is None:
            raise UsageError("give --lo and --hi, or --queries FILE.csv")
        lo, hi = _parse(syn, [args.lo], "--lo"), _parse(syn, [args.hi], "--hi")
        bars = _bars(syn, lo, hi, args.mean, args.confidence)
        if np.isnan(bars.low[0]):
            print(f"{what} {shown_text(bars.answer[0], 4)}: no interval (the count's interval "
                  f"holds 0: the range may hold no row)")
            return 0
        pct = f"{100 * args.confidence:g}%"
        print(f"{what} {shown_text(bars.answer[0], 4)} ± {shown_text(bars.std[0], 4)} (noise "
              f"std); {pct} interval [{shown_text(bars.low[0], 4)}, "
              f"{shown_text(bars.high[0], 4)}] (this query)")
        return 0
    names = ["lo", "hi"]

    def write(fh):
        text = io.StringIO()
        text.write(",".join(names + [what, "std", "low", "high"]) + "\n")
        for before, rows in query_chunks(args.queries, names):
            try:
                lo = _parse(syn, [r["lo"] for r in rows], "lo")
                hi = _parse(syn, [r["hi"] for r in rows], "hi")
            except UsageError as exc:
                raise in_file(InputError(str(exc)), args.queries) from None
            try:
                bars = _bars(syn, lo, hi, args.mean, args.confidence)
            except (SynopsisError, ValueError) as exc:
                raise located(exc, before) from None
            for i, r in enumerate(rows):
                text.write(",".join([r["lo"], r["hi"]] + [full_text(x[i]) for x in (
                    bars.answer, bars.std, bars.low, bars.high)]) + "\n")
            fh.write(text.getvalue().encode())
            text.seek(0)
            text.truncate()
        fh.write(text.getvalue().encode())

    if args.output:
        persist.atomic_write(args.output, write)
    else:
        spooled_stdout(write)
    return 0


def print_sums_info(obj):
    """``info``'s lines about range sums (public: the column, its bounds and unit, epsilon)."""
    sums = getattr(obj, "sums", None)
    if sums is None:
        return
    lo, hi = sums.user_bounds
    print(f"sums of:        {sums.column.name or '(unnamed)'} ({sums.column.describe()}), "
          f"clipped to [{lo}, {hi}]")
    print(f"epsilon_sum:    {sums.epsilon}")
