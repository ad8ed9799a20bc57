"""``pydp-synopsis build``: the arguments checked (all before any data is read),
the source they name, the synopsis built and saved."""
import os

import numpy as np

from .. import sources
from ..errors import InputError, ParameterError, UsageError
from ..inputs import parse_scale, to_fixed_point
from ..intervals import IntervalSynopsis
from ..params import check_beta, exact_epsilon
from ..queryfiles import query_chunks
from ..rectangles import RectangleSynopsis
from ..sources import expand_paths, parse_database
from ..sources.plans import parse_memory
from ..sources.dask import CLUSTER_TIMEOUT, check_cluster_timeout, check_scheduler, dask_files
from ..sources.files import in_file
from ..units import Column, describe_axes
from .categories import build_categories, category_column_of, other_domain
from ..workload import CLASSES, MAX_QUERIES
from .common import check_output_option, delimiter_of, rng_of
from .domains import parse_domain, parse_user_domain, per_column
from .progress import BuildProgress, Observed
from .sums import build_with_sums, check_build_sums, wants_sums

__all__ = ["ENGINES", "cmd_build"]

ENGINES = ("local", "duckdb", "dask")


def _describe_build(args, columns, dims):
    """The columns' descriptions (None: plain integers, today's path) and the
    domain: in user units when described, else the integer pairs."""
    if args.scale is not None and args.resolution is not None:
        raise UsageError("give --scale or --resolution, not both")
    if args.domain is None:
        parse_domain(None, dims)
    pairs = parse_user_domain(args.domain, dims)
    plain = args.scale is None and args.resolution is None and args.tz is None and all(
        isinstance(b, int) for pair in pairs for b in pair)
    if plain:
        return None, parse_domain(args.domain, dims, args.scale)
    resolutions = per_column(args.resolution, dims, "--resolution") or [None] * dims
    units = []
    for a, pair in enumerate(pairs):
        entry = f"{pair[0]}..{pair[1]}" if "T" in f"{pair[0]}" else f"{pair[0]}:{pair[1]}"
        try:
            col, = describe_axes(None, [pair], columns=[columns[a]] if columns else None,
                                 scale=args.scale, resolution=resolutions[a]) or \
                (Column.integer(),)
            if args.tz is not None and col.kind == "datetime":
                col = Column.datetime(col.name, unit=col.unit, tz=args.tz) if col.step == 1 \
                    else Column(col.name, "datetime", unit=col.unit, step=col.step, tz=args.tz)
            lo, hi = (int(col.to_int(b, "a bound", side)) for b, side in zip(pair, ("lo", "hi")))
        except (TypeError, ValueError) as exc:
            text = str(exc).replace("scale=", "--scale").replace("resolution=", "--resolution")
            raise UsageError(f"--domain entry {entry!r}: {text}") from None
        if lo > hi:
            raise UsageError(f"--domain entry {entry!r}: lo must be <= hi")
        units.append(col)
    return tuple(units), pairs


def _columns(text):
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _build_source(args, columns, units=None):
    """The source the arguments name (files are expanded, nothing is opened)."""
    if args.database is not None or args.table is not None or args.sql is not None:
        if args.input is not None:
            raise UsageError("give --input files or --database with --table/--sql, not both")
        if args.database is None:
            raise UsageError("--table and --sql need --database (sqlite:///file.db, "
                             "duckdb:///file.duckdb, postgresql://...)")
        if (args.table is None) == (args.sql is None):
            raise UsageError("give --table (with --columns) or --sql, not both")
        if args.table is not None and not columns:
            raise UsageError("--table needs --columns a,b (the integer columns to read)")
        if args.engine not in (None, "local"):
            raise UsageError("--engine applies to --input files; a --database runs its own")
        return sources.SqlSource(args.database, columns, table=args.table, sql=args.sql,
                                 scale=args.scale, memory_limit=args.memory_limit,
                                 plan=args.plan, temp_directory=_temp_directory(args),
                                 units=units, dropna=args.dropna,
                                 statement_timeout=args.statement_timeout,
                                 allow_writable_role=args.allow_writable_role, debug=args.debug)
    if args.input is None:
        raise UsageError("give an input (--input FILE, GLOB or DIRECTORY) or a database "
                         "(--database with --table or --sql)")
    engine = args.engine or "local"
    if engine == "dask":
        if units is not None and any(col.kind == "category" for col in units):
            raise UsageError("--engine dask does not read category columns: use --engine local "
                             "or duckdb")
        return dask_files(args.input, columns, scale=args.scale, scheduler=args.scheduler,
                          dropna=args.dropna, timeout=_cluster_timeout(args), units=units)
    if args.allow_writable_role:
        raise UsageError("--allow-writable-role applies to a postgresql:// --database")
    if (args.plan != "auto" or args.temp_directory is not None) and engine != "duckdb":
        raise UsageError("--plan and --temp-directory apply to a --database or --engine duckdb")
    if args.statement_timeout is not None and engine != "duckdb":
        raise UsageError("--statement-timeout applies to a --database or --engine duckdb")
    options = {"memory_limit": args.memory_limit, "statement_timeout": args.statement_timeout,
               "debug": args.debug, "plan": args.plan,
               "temp_directory": _temp_directory(args)} if engine == "duckdb" else {}
    if args.delimiter is not None:
        options["delimiter"] = delimiter_of(args)
    return sources.files(args.input, columns, scale=args.scale, engine=engine, units=units,
                         dropna=args.dropna, **options)


def _temp_directory(args):
    """``--temp-directory``: an existing directory, and ``--memory-limit`` a size (both
    checked before anything is read)."""
    if args.memory_limit is not None:
        parse_memory(args.memory_limit, "--memory-limit")
    path = args.temp_directory
    if path is not None and not os.path.isdir(path):
        raise UsageError(f"--temp-directory {path!r} is not an existing directory")
    return path


def _workload(args, dims, units):
    """``--workload``: a class name, or the ``(lo, hi)`` corners of a query file (in the
    columns' units; integers or ``--scale`` decimals for plain columns), read before any
    data; None without it."""
    if args.workload is None or args.workload in CLASSES:
        return args.workload
    if not os.path.isfile(args.workload):
        raise UsageError(f"--workload must be a CSV file of queries or one of "
                         f"{', '.join(CLASSES)}, got {args.workload!r}")
    names = (["lo", "hi"] if dims == 1 else [f"lo_{a}" for a in range(dims)]
             + [f"hi_{a}" for a in range(dims)])
    plain = units is None or all(c.is_plain for c in units)
    parts = {n: [] for n in names}
    rows = 0
    for _, chunk in query_chunks(args.workload, names, delimiter_of(args) or ","):
        rows += len(chunk)
        if rows > MAX_QUERIES:
            raise UsageError(f"--workload {args.workload}: at most {MAX_QUERIES} queries")
        for n in names:
            texts = [r[n] for r in chunk]
            try:
                parts[n].append(np.array(texts, dtype=object) if not plain
                                else to_fixed_point(texts, args.scale, n))
            except InputError as exc:
                raise in_file(exc, args.workload) from None
    if rows == 0:
        raise UsageError(f"--workload {args.workload}: no queries (a header lo,hi and one row "
                         f"per query)")
    cols = [np.concatenate(parts[n]) for n in names]
    if dims == 1:
        return cols[0], cols[1]
    return np.column_stack(cols[:dims]), np.column_stack(cols[dims:])


def _cluster_timeout(args):
    """``--cluster-timeout`` in seconds (default :data:`~pydp_synopsis.sources.dask.CLUSTER_TIMEOUT`)."""
    return CLUSTER_TIMEOUT if args.cluster_timeout is None else args.cluster_timeout


def _input_paths(args):
    """The files a build reads (for the output-is-an-input check), globs expanded."""
    paths = []
    if args.input is not None:
        try:
            paths += expand_paths(args.input)[0]
        except InputError:
            paths.append(args.input)
    if args.database is not None:
        try:
            engine, target, _ = parse_database(args.database)
        except InputError:
            target, engine = None, None
        if engine in ("sqlite", "duckdb"):
            paths.append(target)
    return paths


def cmd_build(args):
    # Every argument is checked before any data is read: a typo costs nothing.
    if args.epsilon is None:
        raise UsageError("--epsilon is required (the privacy loss of this release, e.g. --epsilon 1)")
    exact_epsilon(args.epsilon)
    check_beta(args.beta)
    parse_scale(args.scale)
    delimiter_of(args)
    if args.delimiter is not None and (args.database is not None or args.engine == "dask"):
        raise UsageError("--delimiter applies to CSV --input files (local or duckdb engine)")
    if args.scheduler is not None and args.engine != "dask":
        raise UsageError("--scheduler needs --engine dask")
    if args.cluster_timeout is not None and args.engine != "dask":
        raise UsageError("--cluster-timeout needs --engine dask")
    if args.engine == "dask":
        try:
            check_cluster_timeout(_cluster_timeout(args))
            if args.scheduler is not None:
                check_scheduler(args.scheduler)
        except ParameterError as exc:
            raise UsageError(str(exc)) from None
    if args.shards is not None and args.engine != "dask":
        raise UsageError("--shards needs --engine dask")
    columns = _columns(args.columns)
    cat = category_column_of(args, columns)
    if args.domain is None and cat is None:
        parse_domain(None, 1)
    dims = len(columns) or len(args.domain.split(","))
    if args.partition is not None and dims != 1:
        raise UsageError("--partition applies to one column (an interval synopsis)")
    if args.structure == "quadtree" and dims != 2:
        raise UsageError("--structure quadtree applies to two columns (a rectangle synopsis)")
    if (args.privtree_fanout is not None or args.privtree_merge is not None) and dims != 1:
        raise UsageError("--privtree-fanout and --privtree-merge apply to one column "
                         "(an interval synopsis)")
    if cat is not None:       # the category column first, its domain is its levels
        args.domain = other_domain(args, dims)
        units, domain = _describe_build(args, columns[1:], dims - 1) if dims > 1 else (None, [])
        units = (cat,) + tuple(units or describe_axes(None, domain, columns=columns[1:]) or ())
    else:
        units, domain = _describe_build(args, columns, dims)
    if units is None and columns:
        units = describe_axes(None, domain, columns=columns)     # named integer columns
    if wants_sums(args):                        # range sums: both columns in memory
        check_build_sums(args, columns, units, dims)
    check_output_option(args.output, *_input_paths(args))
    workload = _workload(args, dims, units)
    if wants_sums(args):
        if workload is not None:
            raise UsageError("--workload does not apply with --sum")
        syn = build_with_sums(args, columns, domain, rng_of(args))
        syn.save(args.output)
        print(f"wrote {args.output}: interval synopsis with range sums of {args.sum}: "
              f"{len(syn):,} segments, epsilon={syn.epsilon}")
        return 0
    source = _build_source(args, columns, units)
    rng = rng_of(args)
    progress = BuildProgress()
    try:
        observed = Observed(source, progress)
        if cat is not None:
            syn, what = build_categories(observed, cat, units, domain, args, rng)
        elif len(domain) == 1:
            syn = IntervalSynopsis.build(observed, domain=domain[0], epsilon=args.epsilon,
                                         beta=args.beta, rng=rng, shards=args.shards,
                                         columns=units, partition=args.partition,
                                         clip=args.clip, workload=workload,
                                         privtree_fanout=args.privtree_fanout,
                                         privtree_merge=args.privtree_merge)
            what = f"interval synopsis: {len(syn):,} segments"
        else:
            syn = RectangleSynopsis.build(observed, domain=domain, epsilon=args.epsilon,
                                          beta=args.beta, rng=rng, shards=args.shards,
                                          columns=units, clip=args.clip, workload=workload,
                                          structure="quadtree" if args.structure == "quadtree"
                                          else "auto")
            what = f"rectangle synopsis over {len(domain)} columns: {syn.num_nodes:,} nodes"
    finally:
        progress.close()
    syn.save(args.output)
    # the true number of rows is not private: it is never printed
    print(f"wrote {args.output}: {what}, epsilon={syn.epsilon}")
    return 0
