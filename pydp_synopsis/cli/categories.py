"""``build --categories a,b,c`` / ``--levels FILE`` / ``--other NAME``: the category
column of a build (the first of ``--columns``), checked before any data is read,
and the synopsis over it (a flat histogram or a tree, by the public rule)."""
import csv
import io
import os

from .. import persist
from ..errors import DomainError, ParameterError, UsageError
from ..categories import MAX_LEVELS_JSON
from ..intervals import IntervalSynopsis
from ..level_histogram import LevelHistogram, uses_flat
from ..rectangles import RectangleSynopsis
from ..units import Column
from .common import full_text

__all__ = ["MAX_LEVELS_FILE", "SHOWN_LEVELS", "category_column_of", "read_levels_file",
           "other_domain", "build_categories", "levels_lines", "by_level", "count_levels"]

#: How many levels ``info`` lists (they are public; the rest are counted).
SHOWN_LEVELS = 100
#: The largest ``--levels`` file read (bytes): the levels' own limit, as JSON.
MAX_LEVELS_FILE = MAX_LEVELS_JSON


def read_levels_file(path):
    """The levels of a ``--levels`` file: one per line (UTF-8), blank lines skipped."""
    try:
        size = os.stat(path).st_size
        if size > MAX_LEVELS_FILE:
            raise UsageError(f"--levels {path}: a levels file is at most {MAX_LEVELS_FILE} bytes")
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_LEVELS_FILE + 1)
    except UnicodeDecodeError:
        raise UsageError(f"--levels {path}: not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"--levels {path}: cannot read it ({exc.strerror or 'error'})") from None
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def category_column_of(args, columns):
    """The category :class:`Column` the arguments describe (the first of
    ``--columns``), or None without ``--categories``/``--levels``."""
    if args.categories is None and args.levels is None:
        for name in ("other", "structure"):
            if getattr(args, name) is not None and (name, args.structure) != (
                    "structure", "quadtree"):       # --structure quadtree: two columns
                raise UsageError(f"--{name} needs --categories or --levels")
        return None
    if args.categories is not None and args.levels is not None:
        raise UsageError("give --categories a,b,c or --levels FILE, not both")
    if not columns:
        raise UsageError("--categories/--levels describe the first of --columns: give --columns")
    if args.scale is not None or args.resolution is not None or args.tz is not None \
            or args.clip:
        raise UsageError("--scale, --resolution, --tz and --clip do not apply with "
                         "--categories/--levels (a category column's levels are its domain)")
    levels = ([p.strip() for p in args.categories.split(",") if p.strip()]
              if args.categories is not None else read_levels_file(args.levels))
    try:
        return Column.category(levels, other=args.other, name=columns[0])
    except (ParameterError, TypeError) as exc:
        raise UsageError(f"--{'categories' if args.categories is not None else 'levels'}: "
                         f"{exc}") from None


def other_domain(args, dims):
    """``--domain`` of the columns after the category column (None for one column)."""
    if dims == 1:
        if args.domain is not None:
            raise UsageError("--domain: a category column's domain is its levels; drop --domain")
        return None
    if args.domain is None:
        raise UsageError(f"--domain is required for the {dims - 1} column(s) after the "
                         f"category column (its own domain is its levels)")
    return args.domain


def build_categories(observed, cat, units, domain, args, rng):
    """The synopsis of a build with a category column: ``(synopsis, what)``."""
    every = cat.all_levels
    if len(units) == 1:
        if args.partition is not None and uses_flat(cat, args.structure or "auto"):
            raise UsageError("--partition applies to a tree (--structure tree, or more than "
                             "the flat histogram's levels)")
        if uses_flat(cat, args.structure or "auto"):
            syn = LevelHistogram.build(observed, levels=cat, epsilon=args.epsilon, rng=rng)
            return syn, f"counts of {len(every)} levels (flat histogram)"
        syn = IntervalSynopsis.build(observed, domain=(every[0], every[-1]), columns=cat,
                                     epsilon=args.epsilon, beta=args.beta, rng=rng,
                                     partition=args.partition)
        return syn, f"interval synopsis over {len(every)} levels: {len(syn):,} segments"
    if args.structure not in (None, "tree", "quadtree"):
        raise UsageError("--structure applies to one category column")
    syn = RectangleSynopsis.build(observed, domain=[(every[0], every[-1])] + list(domain),
                                  epsilon=args.epsilon, beta=args.beta, rng=rng,
                                  columns=units,
                                  structure="quadtree" if args.structure == "quadtree" else "auto")
    return syn, f"rectangle synopsis over {len(units)} columns: {syn.num_nodes:,} nodes"


def levels_lines(column):
    """``info``'s lines for a category column: its public levels (the first
    :data:`SHOWN_LEVELS`), and ``other``."""
    if column.kind != "category":
        return []
    shown = ", ".join(str(v) for v in column.levels[:SHOWN_LEVELS])
    more = len(column.levels) - SHOWN_LEVELS
    lines = [f"{'levels:':<15} {shown}" + (f", ... ({more} more)" if more > 0 else "")]
    if column.other is not None:
        lines.append(f"{'other:':<15} {column.other} (values outside the levels)")
    return lines


def by_level(syn, args, delimiter):
    """``query --by-level``: one CSV row per level (level, answer, std, low, high),
    to ``--output`` (written whole or not at all) or stdout."""
    if isinstance(syn, RectangleSynopsis):         # its other axes within --lo/--hi
        if args.queries is not None:
            raise UsageError("--by-level answers every level: drop --queries")
        bounds = _other_bounds(syn, args)
        try:
            levels, _, bars = syn.counts_by_level(*bounds, confidence=args.confidence,
                                                  nonnegative=args.nonnegative)
        except (ParameterError, DomainError, TypeError) as exc:
            raise UsageError(f"--by-level: {exc}") from None
        return _write_levels(levels, bars, args, delimiter)
    if args.lo is not None or args.hi is not None or args.queries is not None:
        raise UsageError("--by-level answers every level: drop --lo/--hi/--queries")
    column = getattr(syn, "column", None)
    if column is None or column.kind != "category":
        raise UsageError(f"--by-level needs a synopsis of one category column; "
                         f"{args.synopsis} is not one")
    levels, _, bars = syn.counts_by_level(args.confidence, nonnegative=args.nonnegative)
    return _write_levels(levels, bars, args, delimiter)


def _write_levels(levels, bars, args, delimiter):
    """``--by-level``'s CSV, to ``--output`` (whole or not at all) or stdout."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n", delimiter=delimiter)
    writer.writerow(["level", "answer", "std", "low", "high"])
    for i, level in enumerate(levels):
        writer.writerow([level] + [full_text(x[i]) for x in
                                   (bars.answer, bars.std, bars.low, bars.high)])
    if args.output:
        persist.atomic_write(args.output, lambda fh: fh.write(text.getvalue().encode()))
    else:
        print(text.getvalue(), end="")
    return 0


def _other_bounds(syn, args):
    """``--lo``/``--hi`` of a rectangle's axes other than its category axis (None: whole)."""
    others = syn.dims - 1
    bounds = [None if text is None else [p.strip() for p in str(text).split(",")]
              for text in (args.lo, args.hi)]
    for name, parts in zip(("--lo", "--hi"), bounds):
        if parts is not None and len(parts) != others:
            raise UsageError(f"{name} with --levels or --by-level gives the {others} axes "
                             f"other than the category axis, got {','.join(parts)!r}")
    return bounds


def count_levels(syn, args):
    """``query --levels A,B``: the count of a set of levels with its noise std (a flat
    histogram or tree of one category column; a rectangle synopsis's category axis, its
    other axes within ``--lo``/``--hi``, whole by default)."""
    if args.queries is not None or args.by_level:
        raise UsageError("--levels answers one set of levels: drop --queries/--by-level")
    levels = [p.strip() for p in args.count_levels.split(",") if p.strip()]
    bounds = ()
    if isinstance(syn, RectangleSynopsis):
        bounds = _other_bounds(syn, args)
    elif getattr(syn, "column", None) is None or syn.column.kind != "category":
        raise UsageError(f"--levels needs a synopsis with a category column; "
                         f"{args.synopsis} has none")
    elif args.lo is not None or args.hi is not None:
        raise UsageError("--levels of one category column: drop --lo/--hi")
    try:
        answer, std = syn.count_levels(levels, *bounds, return_std=True)
    except (ParameterError, DomainError, TypeError) as exc:
        raise UsageError(f"--levels: {exc}") from None
    print(f"{full_text(answer)} ± {full_text(std)} (noise std"
          f"{'' if len(levels) == 1 else '; an upper bound unless the levels are consecutive'})")
    return 0
