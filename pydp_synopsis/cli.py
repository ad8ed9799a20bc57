"""The ``pydp-synopsis`` command.

Subcommands::

    pydp-synopsis demo          private synopses of the bundled ZIP-code centroids
    pydp-synopsis build         a synopsis of your table (CSV, .npy/.npz, Parquet, SQLite)
    pydp-synopsis query         answer interval / rectangle counts with error bars
    pydp-synopsis info          what a saved synopsis or checkpoint holds
    pydp-synopsis count-stream  private running counts of a 0/1 stream on stdin
    pydp-synopsis plot          draw a saved synopsis or checkpoint with its error band

Errors print one line naming the problem and the fix and exit with status 2
(``--debug`` shows the traceback); no output file is ever left half-written.
"""
import argparse
import csv
import importlib.resources
import io
import math
import os
import re
import signal
import sys
import threading
import time
import zipfile

import numpy as np

from . import __version__, persist, sources
from .arguments import integer, real
from .budget import Budget
from .checkpoint import StreamCheckpoint
from .counters import BinaryTreeCounter, KaryTreeCounter
from .errors import HorizonError, InputError, ParameterError, SynopsisError, UsageError
from .outputs import OutputError, check_output
from .plot import MAX_BINS, check_bins, new_figure, plot_file, require_matplotlib
from .inputs import parse_scale, to_fixed_point
from .sources import Source, expand_paths, parse_database
from .sources.dask import CLUSTER_TIMEOUT, check_cluster_timeout, check_scheduler, dask_files
from .sources.files import check_delimiter, in_file
from .sparse_counter import SparseStreamCounter
from .intervals import IntervalSynopsis
from .params import check_beta, exact_epsilon
from .queryfiles import located, query_chunks, spooled_stdout
from .rng import Rng
from .rectangles import RectangleSynopsis
from .units import Column, describe_axes

__all__ = ["main", "parse_domain"]

#: Public default domains per integer type, for ``--domain int32`` etc.
DTYPE_DOMAINS = {
    name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
    for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
}

DEMO_LAT = (-90_000_000, 90_000_000)
DEMO_LON = (-180_000_000, 180_000_000)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage too by default)
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class Progress:
    """A tiny progress line on stderr: only on a terminal, only after 2 seconds.

    ``quiet_if`` is another stream (the releases' stdout): when it is the
    terminal too, the line stays off so that it never cuts an output line.
    ``PYDP_SYNOPSIS_PROGRESS_DELAY`` sets the delay in seconds (tests).
    """

    def __init__(self, label, total=None, stream=None, quiet_if=None):
        self.label, self.total = label, total
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = 0.0
        self.done = 0
        self.shown = False
        self.delay = float(os.environ.get("PYDP_SYNOPSIS_PROGRESS_DELAY", "2"))
        self.enabled = (_is_terminal(self.stream)
                        and not (quiet_if is not None and _is_terminal(quiet_if)))

    def update(self, done):
        self.done = done
        now = time.monotonic()
        if not self.enabled or now - self.start < self.delay or now - self.last < 0.1:
            return
        self.last = now
        self._write(done, now)

    def _write(self, done, now):
        if self.total:
            frac = min(1.0, done / self.total)
            bar = "#" * int(30 * frac)
            text = f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}%"
        else:
            text = f"\r{self.label} {done:,} ({now - self.start:.0f} s)"
        self.stream.write(text)
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self._write(self.done, time.monotonic())     # the final count, then end the line
            self.stream.write("\n")
            self.stream.flush()


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def parse_domain(text, dims, scale=None):
    """Parse ``--domain``: ``lo:hi`` per axis, comma separated, or an integer type name.

    With a fixed-point ``scale`` the bounds are decimals converted exactly as
    the data are (:func:`~pydp_synopsis.inputs.to_fixed_point`).

    Examples
    --------
    >>> parse_domain("-90:90,0:359", 2)
    [(-90, 90), (0, 359)]
    >>> parse_domain("uint16", 1)
    [(0, 65535)]
    >>> parse_domain("-90:90", 1, scale="1e6")
    [(-90000000, 90000000)]
    """
    if text is None:
        raise UsageError(
            "--domain is required: a domain taken from the data would leak its minimum and maximum. "
            "Give public bounds per column, e.g. --domain=0:86399 or --domain=-90000000:90000000,"
            "-180000000:180000000, or a type name (int32, uint64, ...) for its full range")
    out = []
    for p in _domain_entries(text, dims):
        if p in DTYPE_DOMAINS:
            out.append(DTYPE_DOMAINS[p])
            continue
        lo, sep, hi = p.rpartition(":")
        if not sep:
            raise UsageError(f"--domain entry {p!r} is not lo:hi or an integer type name")
        try:
            bounds = to_fixed_point([lo.strip(), hi.strip()], scale, "--domain")
        except InputError as exc:
            raise UsageError(f"--domain entry {p!r}: {exc} (integers, or decimals with --scale)") from None
        out.append((int(bounds[0]), int(bounds[1])))
    return out


_INT = re.compile(r"^[+-]?\d+$")


def _domain_entries(text, dims):
    """``--domain``'s comma-separated entries, one per column (one entry serves all)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1 and dims > 1:
        parts = parts * dims
    if len(parts) != dims:
        raise UsageError(f"--domain gives {len(parts)} ranges for {dims} columns")
    return parts


def parse_user_domain(text, dims):
    """Parse ``--domain`` in user units: ``lo:hi`` or ``lo..hi`` per axis
    (``..`` for ISO datetimes, which hold colons), or an integer type name.

    Integer bounds become ints; anything else (dates, datetimes, decimals)
    stays text for the column's description to convert.

    Examples
    --------
    >>> parse_user_domain("2001-01-01:2001-12-31,0:9", 2)
    [('2001-01-01', '2001-12-31'), (0, 9)]
    >>> parse_user_domain("2001-01-01T00:00..2001-12-31T23:59", 1)
    [('2001-01-01T00:00', '2001-12-31T23:59')]
    """
    if text is None:
        parse_domain(None, dims)
    out = []
    for p in _domain_entries(text, dims):
        if p in DTYPE_DOMAINS:
            out.append(DTYPE_DOMAINS[p])
            continue
        lo, sep, hi = p.partition("..")
        if not sep:
            if re.match(r"^\s*[+-]?\d{4}-\d{2}-\d{2}[T ]", p):
                raise UsageError(f"--domain entry {p!r}: separate datetimes with .. "
                                 f"(2001-01-01T00:00..2001-12-31T23:59)")
            lo, sep, hi = p.rpartition(":")
        if not sep:
            raise UsageError(f"--domain entry {p!r} is not lo:hi (or lo..hi) or an integer "
                             f"type name")
        out.append(tuple(int(b) if _INT.match(b.strip()) else b.strip() for b in (lo, hi)))
    return out


def _per_column(text, dims, name):
    """``--resolution`` (or another per-column option): one value or one per column."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        return parts * dims
    if len(parts) != dims:
        raise UsageError(f"{name} gives {len(parts)} values for {dims} columns")
    return [p or None for p in parts]


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
    resolutions = _per_column(args.resolution, dims, "--resolution") or [None] * dims
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


def _rng(args):
    """A seeded Rng for tests only when --seed is given, else OS entropy."""
    return Rng(seed=args.seed) if getattr(args, "seed", None) is not None else None


def _check_output(path, *inputs, option="--output"):
    """Refuse, before any work, an output that exists and is not a regular file, that is
    one of the inputs, or whose directory is missing or not writable
    (:func:`pydp_synopsis.outputs.check_output`)."""
    try:
        check_output(path, inputs, option)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


def _database_file(database):
    """The file behind a --database URL or path (None for a server)."""
    if not database:
        return None
    for prefix in ("sqlite:///", "duckdb:///"):
        if database.startswith(prefix):
            return database[len(prefix):]
    return None if "://" in database else database


# ------------------------------------------------------------------ build
ENGINES = ("local", "duckdb", "dask")


class _BuildProgress:
    """A progress line for ``build``: the phase, the rows read, the seconds elapsed.

    Only on a terminal, and only once the work has run ~2 s (the environment
    variable ``PYDP_SYNOPSIS_PROGRESS_DELAY`` sets the delay, for tests); a
    background thread keeps it ticking while a database works.  The row count
    is shown to the operator on their terminal only, never written to stdout
    or to a file.
    """

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = _is_terminal(self.stream)
        self.delay = float(os.environ.get("PYDP_SYNOPSIS_PROGRESS_DELAY", "2"))
        self.start = time.monotonic()
        self.phase, self.rows, self.shown = "reading", None, False
        self._stop = None
        self._lock = threading.Lock()
        if self.enabled:
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _tick(self):
        while not self._stop.wait(0.2):
            self.show()

    def show(self):
        now = time.monotonic()
        if not self.enabled or now - self.start < self.delay:
            return
        with self._lock:
            rows = f": {self.rows:,} rows" if self.rows is not None else ""
            self.stream.write(f"\rpydp-synopsis build: {self.phase}{rows} "
                              f"({now - self.start:.0f} s)  ")
            self.stream.flush()
            self.shown = True

    def read(self, rows):
        self.rows = rows

    def enter(self, phase):
        self.phase, self.rows = phase, None
        self.show()

    def close(self):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class _Observed(Source):
    """A source whose reading is reported to a :class:`_BuildProgress`."""

    def __init__(self, source, progress):
        self._source, self._progress = source, progress
        self.columns = source.columns

    def prepare(self, domains, progress=None, clip=False):
        self._progress.enter("reading")
        prepared = self._source.prepare(domains, progress=self._progress.read, clip=clip)
        self._progress.enter("partitioning and counting")
        return prepared


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
                                 units=units, dropna=args.dropna,
                                 statement_timeout=args.statement_timeout,
                                 allow_writable_role=args.allow_writable_role, debug=args.debug)
    if args.input is None:
        raise UsageError("give an input (--input FILE, GLOB or DIRECTORY) or a database "
                         "(--database with --table or --sql)")
    engine = args.engine or "local"
    if engine == "dask":
        if units is not None and any(col.kind in ("date", "datetime") or col.resolution
                                     is not None for col in units):
            raise UsageError("--engine dask reads integer and --scale decimal columns; dates "
                             "and --resolution need --engine local or duckdb")
        return dask_files(args.input, columns, scale=args.scale, scheduler=args.scheduler,
                          dropna=args.dropna, timeout=_cluster_timeout(args))
    if args.allow_writable_role:
        raise UsageError("--allow-writable-role applies to a postgresql:// --database")
    if args.statement_timeout is not None and engine != "duckdb":
        raise UsageError("--statement-timeout applies to a --database or --engine duckdb")
    options = {"memory_limit": args.memory_limit, "statement_timeout": args.statement_timeout,
               "debug": args.debug} if engine == "duckdb" else {}
    if args.delimiter is not None:
        options["delimiter"] = _delimiter(args)
    return sources.files(args.input, columns, scale=args.scale, engine=engine, units=units,
                         dropna=args.dropna, **options)


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
    _delimiter(args)
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
    if args.domain is None:
        parse_domain(None, 1)
    dims = len(columns) or len(args.domain.split(","))
    if args.partition is not None and dims != 1:
        raise UsageError("--partition applies to one column (an interval synopsis)")
    units, domain = _describe_build(args, columns, dims)
    if units is None and columns:
        units = describe_axes(None, domain, columns=columns)     # named integer columns
    _check_output(args.output, *_input_paths(args))
    source = _build_source(args, columns, units)
    rng = _rng(args)
    progress = _BuildProgress()
    try:
        observed = _Observed(source, progress)
        if len(domain) == 1:
            syn = IntervalSynopsis.build(observed, domain=domain[0], epsilon=args.epsilon,
                                         beta=args.beta, rng=rng, shards=args.shards,
                                         columns=units, partition=args.partition,
                                         clip=args.clip)
            what = f"interval synopsis: {len(syn):,} segments"
        else:
            syn = RectangleSynopsis.build(observed, domain=domain, epsilon=args.epsilon,
                                          beta=args.beta, rng=rng, shards=args.shards,
                                          columns=units, clip=args.clip)
            what = f"rectangle synopsis over {len(domain)} columns: {syn.num_nodes:,} nodes"
    finally:
        progress.close()
    syn.save(args.output)
    # the true number of rows is not private: it is never printed
    print(f"wrote {args.output}: {what}, epsilon={syn.epsilon}")
    return 0


# ------------------------------------------------------------------ query
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
    cols = (syn.column,) if isinstance(syn, IntervalSynopsis) else syn.columns
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
    return 1 if isinstance(syn, IntervalSynopsis) else len(syn.domain)


def _error_bars(syn, lo, hi, confidence, nonnegative):
    """Per-query :class:`~pydp_synopsis.errorbars.ErrorBars` of (q, dims) corners."""
    if isinstance(syn, IntervalSynopsis):
        return syn.confidence_intervals(lo[:, 0], hi[:, 0], confidence, nonnegative=nonnegative)
    return syn.confidence_intervals(lo, hi, confidence, nonnegative=nonnegative)


def _full(x):
    """A float written in full (the shortest text that reads back the same), never ``-0.0``.

    >>> _full(4998554.3), _full(-0.0), _full(1e-300)
    ('4998554.3', '0.0', '1e-300')
    """
    return repr(float(x) + 0.0)


def _shown(x, digits=1):
    """A float for people: fixed ``digits`` decimals, never ``-0.0``.

    >>> _shown(-0.04), _shown(4998554.34)
    ('0.0', '4998554.3')
    """
    text = f"{float(x):.{digits}f}"
    return text[1:] if re.fullmatch(r"-0\.?0*", text) else text


def _print_one_answer(bars, bound, confidence):
    pct = f"{100 * confidence:g}%"
    print(f"{_shown(bars.answer[0])} ± {_shown(bars.std[0])} (noise std); "
          f"{pct} interval [{_shown(bars.low[0])}, {_shown(bars.high[0])}] (this query)")
    print(f"simultaneous {pct} bound (all queries at once): ± {_shown(bound)}")


def _bars_checked(syn, lo, hi, confidence, nonnegative):
    """:func:`_error_bars`; a value that is no date/decimal of its column is a usage error."""
    try:
        return _error_bars(syn, lo, hi, confidence, nonnegative)
    except TypeError as exc:
        raise UsageError(str(exc)) from None


def cmd_query(args):
    if args.output:
        _check_output(args.output, args.synopsis, args.queries)
    delimiter = _delimiter(args)
    syn = persist.load(args.synopsis)
    if not isinstance(syn, (IntervalSynopsis, RectangleSynopsis)):
        raise UsageError(f"{args.synopsis} is a {type(syn).__name__} checkpoint, not a synopsis")
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
        bars = _bars_checked(syn, lo, hi, args.confidence, args.nonnegative)
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
                bars = _bars_checked(syn, lo, hi, args.confidence, args.nonnegative)
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
                        + [_full(x[i]) for x in (bars.answer, bars.std, bars.low, bars.high)]
                        + [_full(bound)])


# ------------------------------------------------------------------- info
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
    else:
        keys += ("horizon", "k", "time")
    for key in keys:
        value = getattr(obj, key, None)
        if value is not None:
            print(f"{key + ':':<15} {value}")
    if getattr(obj, "clipped", False):
        print("clipped:        yes (values outside the domain counted at its nearest end)")
    cols = _columns_of(obj) if isinstance(obj, (IntervalSynopsis, RectangleSynopsis)) else None
    if cols is not None:
        doms = [obj.domain] if isinstance(obj, IntervalSynopsis) else obj.domain
        for a, (c, (lo, hi)) in enumerate(zip(cols, doms)):
            label = c.name if c.name is not None else str(a)
            print(f"{'column ' + label + ':':<15} {c.describe()}, domain "
                  f"{c.format(lo)} .. {c.format(hi)}")
    if isinstance(obj, IntervalSynopsis):
        print(f"segments:       {len(obj):,}")
    elif isinstance(obj, RectangleSynopsis):
        print(f"nodes:          {obj.num_nodes:,}")
        print(f"segments/axis:  {', '.join(str(len(p)) for p in obj.partitions)}")
        if obj.seal_shares is not None:       # released shares (post-processing)
            print(f"seal shares:    {', '.join(f'{r:.3f}' for r in obj.seal_shares)}")
        if obj.fine_constant is not None:     # a public rule of released counts
            print(f"fine constant:  {obj.fine_constant:g}")
    return 0


# ----------------------------------------------------------- count-stream
COUNTERS = {"kary": KaryTreeCounter, "binary": BinaryTreeCounter, "sparse": SparseStreamCounter}


def _new_counter(args):
    if args.horizon is None or args.epsilon is None:
        raise UsageError("--horizon and --epsilon are required to start a stream "
                         "(or --checkpoint FILE of an existing one)")
    name = args.counter or "kary"
    kwargs = dict(horizon=args.horizon, epsilon=args.epsilon, rng=_rng(args))
    if name == "kary":
        kwargs["k"] = 19 if args.k is None else args.k
    if name == "sparse":
        kwargs["beta"] = args.beta
    return COUNTERS[name](**kwargs)


def _resume_counter(args, ckpt):
    """The counter of an existing checkpoint and the releases it still owes.

    ``ckpt`` (:class:`~pydp_synopsis.checkpoint.StreamCheckpoint`) has
    verified the checkpoint against its journal, its noise and its pending
    releases.  Every option given on the command line must agree with it:
    a mismatch is refused before anything is read from the stream.
    """
    counter = ckpt.counter
    names = {cls: name for name, cls in COUNTERS.items()}
    name = names.get(type(counter))
    if name is None:
        raise UsageError(f"{args.checkpoint} is not a counter checkpoint")
    given = {"--counter": (args.counter, name),
             "--horizon": (args.horizon, counter.horizon),
             "--epsilon": (None if args.epsilon is None else exact_epsilon(args.epsilon), counter.epsilon),
             "--k": (args.k, getattr(counter, "k", None) if name == "kary" else None)}
    for flag, (value, saved) in given.items():
        if value is not None and value != saved:
            raise UsageError(f"{flag} {value} differs from the checkpoint's {saved} "
                             f"(omit it to continue the saved stream)")
    return counter, ckpt.pending


_INTEGERS = re.compile(r"\s*(?:-?[0-9]+\s+)*(?:-?[0-9]+)?\s*")


def _stream_chunks(fd, reading, size=1 << 16):
    """Integers from whitespace-separated text on a file descriptor, an array per chunk.

    ``os.read`` returns what is available, so a live stream is answered as it
    arrives.  ``reading["now"]`` is True only while blocked in ``read``: the
    signal handler interrupts there, never in the middle of an update.
    """
    pending = b""
    done = 0
    while True:
        reading["now"] = True
        try:
            # A signal that came before "now" was set is seen here; one that
            # comes after raises from the handler: no window to block in.
            if reading["stop"]:
                raise KeyboardInterrupt
            data = os.read(fd, size)
        finally:
            reading["now"] = False
        if not data:
            break
        data = pending + data
        cut = max(data.rfind(b"\n"), data.rfind(b" "))
        if cut < 0:
            pending = data
            continue
        pending = data[cut + 1:]
        chunk = _parse_ints(data[:cut].decode("ascii", "replace"), done)
        done += len(chunk)
        yield chunk
    if pending.strip():
        yield _parse_ints(pending.decode("ascii", "replace"), done)


def _parse_ints(text, before=0):
    """The integers of ``text``; InputError naming the item (never its text) otherwise."""
    if _INTEGERS.fullmatch(text) is None:
        bad = next(i for i, t in enumerate(text.split()) if re.fullmatch(r"-?[0-9]+", t) is None)
        raise InputError(f"stream item {before + bad + 1:,} of this run is not an integer "
                         f"(expected one integer per line, such as 0 or 1)")
    tokens = text.split()
    try:
        return np.array(tokens, dtype=np.int64) if tokens else np.zeros(0, dtype=np.int64)
    except OverflowError:
        bad = next(i for i, t in enumerate(tokens) if not -2**63 <= int(t) < 2**63)
        raise InputError(f"stream item {before + bad + 1:,} of this run is outside the int64 range") from None


class CheckpointError(SynopsisError, OSError):
    """A checkpoint could not be saved: the stream stops releasing."""


def _save_checkpoint(ckpt, counter, pending):
    try:
        ckpt.save(counter, pending)
    except OSError as exc:
        raise CheckpointError(f"could not save the checkpoint {ckpt.path} ({exc.strerror or exc}): "
                              f"stopped; nothing after the last saved state was released") from None


def _open_checkpoint(args):
    """The locked, verified checkpoint files of ``--checkpoint`` (None without it)."""
    if not args.checkpoint:
        for flag, on in (("--adopt-checkpoint", args.adopt_checkpoint), ("--new-stream", args.new_stream)):
            if on:
                raise UsageError(f"{flag} needs --checkpoint FILE")
        return None
    if not os.path.lexists(args.checkpoint):
        _check_output(args.checkpoint)
    return StreamCheckpoint(args.checkpoint, adopt=args.adopt_checkpoint, new_stream=args.new_stream)


def cmd_count_stream(args):
    """Private running counts of a stream on stdin, write-ahead checkpointed.

    With ``--checkpoint``, every batch goes: update the counter in memory,
    save the new state *with the batch's releases* atomically, then print the
    releases.  A release is never printed before the state that drew its
    noise is durable, so a crash, a kill or a full disk can never make a
    resumed run draw fresh noise for a position already released.  After an
    unclean stop (SIGKILL, power loss) between the save and the print, the
    resumed run first prints that batch's releases again -- the very same
    values, which costs no privacy -- and says so on stderr.

    The checkpoint is locked for the run, journaled and verified before
    anything is read (:mod:`pydp_synopsis.checkpoint`): an older copy,
    another stream's checkpoint, an edited one or a second run at the same
    time is refused in one line (docs/security-checkpoints.md).
    """
    if args.checkpoint:     # read and replaced: a regular file (never a FIFO to block on)
        _check_output(args.checkpoint, option="--checkpoint")
    ckpt = _open_checkpoint(args)
    try:
        return _count_stream(args, ckpt)
    finally:
        if ckpt is not None:
            ckpt.close()


def _count_stream(args, ckpt):
    """The stream of :func:`cmd_count_stream`, ``ckpt`` held (or None)."""
    if ckpt is not None and ckpt.counter is not None:
        counter, pending = _resume_counter(args, ckpt)
        resumed = True
    else:
        counter, pending, resumed = _new_counter(args), "", False
    if args.positions and not isinstance(counter, SparseStreamCounter):
        raise UsageError("--positions needs --counter sparse (the positions of the 1s of a sparse stream)")
    err = sys.stderr
    start = counter.time
    out = sys.stdout
    if pending:
        print(f"pydp-synopsis: printing again the {pending.count(chr(10)):,} release lines of the last "
              f"batch, which an unclean stop may have cut (the same values: no new noise)", file=err)
        out.write(pending)
        out.flush()
    # SIGINT, SIGTERM and SIGHUP stop the stream between updates: every item
    # read is either fully processed (saved, then printed) or not at all.
    reading = {"now": False, "stop": False}

    def on_signal(signum, frame):
        reading["stop"] = True
        if reading["now"]:
            raise KeyboardInterrupt

    stops = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {sig: signal.signal(sig, on_signal) for sig in stops}
    progress = Progress("pydp-synopsis count-stream: items", total=None, quiet_if=out)
    done = 0
    unprinted = ""            # releases saved in the checkpoint but not yet printed whole
    saved = True              # False once a save failed: then nothing more is written
    clean = True              # no error: say where the stream stopped
    try:
        for chunk in _stream_chunks(sys.stdin.fileno(), reading):
            if counter.time + (0 if args.positions else len(chunk)) > counter.horizon:
                raise HorizonError(
                    f"the stream reached its horizon of {counter.horizon:,} positions"
                    + (f" (this run resumed after {start:,}: feed a resumed run only the items "
                       f"after the saved position)" if resumed else ""))
            if args.positions:
                times, values = counter.update_sparse(chunk, monotone=args.monotone)
                text = "".join(f"{t},{v}\n" for t, v in zip(times.tolist(), values.tolist()))
            else:
                released = counter.update_many(chunk, monotone=args.monotone)
                text = "\n".join(map(str, released.tolist())) + ("\n" if len(released) else "")
            if args.checkpoint:
                saved = False
                _save_checkpoint(ckpt, counter, text)
                saved, unprinted = True, text
            out.write(text)
            out.flush()
            unprinted = ""
            done += len(chunk)
            progress.update(done)
    except KeyboardInterrupt:
        pass
    except BaseException:
        clean = False
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        progress.close()
        # Whatever ended the run (end of input, a signal, an error, a broken
        # pipe), the in-memory state is the last saved one (counters change
        # nothing on a refused update): record whether its batch was printed.
        # Not after a failed save: the process stops releasing at once.
        if args.checkpoint and saved:
            _save_checkpoint(ckpt, counter, unprinted)
            if clean:
                resumed_from = f" (resumed after {start:,})" if resumed else ""
                print(f"pydp-synopsis: saved after {counter.time:,} positions{resumed_from} to "
                      f"{args.checkpoint}; resume with: pydp-synopsis count-stream --checkpoint "
                      f"{args.checkpoint} < rest", file=err)
    return 130 if reading["stop"] else 0


# ------------------------------------------------------------------- demo
def _demo_data():
    ref = importlib.resources.files("pydp_synopsis") / "data" / "zipcodes.npz"
    with ref.open("rb") as fh:
        data = np.load(io.BytesIO(fh.read()))
        return data["latitude_e6"], data["longitude_e6"]


DEMO_INTERVALS = [
    ("south of 25°N (Hawaii, Keys, P. Rico)", -90.0, 25.0),
    ("between 30°N and 35°N", 30.0, 35.0),
    ("between 40°N and 41°N", 40.0, 41.0),
    ("north of 55°N (Alaska)", 55.0, 90.0),
]
DEMO_RECTANGLES = [
    ("New York City area", (40.49, -74.26), (40.92, -73.70)),
    ("Los Angeles area", (33.70, -118.67), (34.34, -117.65)),
    ("State of Colorado (box)", (36.99, -109.06), (41.00, -102.04)),
    ("Florida peninsula (box)", (24.50, -82.90), (30.80, -79.90)),
]


def _write_demo_data(path):
    """The bundled ZIP-code centroids as a CSV file ``lat,lon`` (decimal degrees)."""
    _check_output(path, option="--write-data")
    lat, lon = _demo_data()

    def degrees(v):
        sign = np.where(v < 0, "-", "")
        a = np.abs(v)
        return np.char.add(np.char.add(np.char.add(sign, (a // 1_000_000).astype(str)), "."),
                           np.char.zfill((a % 1_000_000).astype(str), 6))

    text = "lat,lon\n" + "".join(f"{a},{b}\n" for a, b in zip(degrees(lat), degrees(lon)))
    persist.atomic_write(path, lambda fh: fh.write(text.encode()))
    print(f"wrote {path}: {len(lat):,} US ZIP code centroids (GeoNames, CC-BY-4.0), "
          f"columns lat,lon in degrees")
    return 0


def cmd_demo(args):
    if args.write_data:
        return _write_demo_data(args.write_data)
    if args.plot:
        require_matplotlib("--plot")
        _check_output(args.plot, option="--plot")
    lat, lon = _demo_data()
    rng = _rng(args)
    eps = args.epsilon
    budget = Budget(2 * exact_epsilon(eps))
    start = time.perf_counter()
    syn1 = IntervalSynopsis.build(lat, domain=DEMO_LAT, epsilon=eps, rng=rng, budget=budget)
    syn2 = RectangleSynopsis.build(np.column_stack([lat, lon]), domain=[DEMO_LAT, DEMO_LON],
                                   epsilon=eps, rng=rng, budget=budget)
    built = time.perf_counter() - start
    e6 = 1_000_000
    print(f"pydp-synopsis demo: {len(lat):,} US ZIP code centroids (GeoNames, CC-BY-4.0)")
    print(f"two releases at epsilon = {eps} each: total privacy loss {budget.spent} "
          f"(sequential composition); built in {built:.2f} s")
    print(f"  interval synopsis on latitude: {len(syn1):,} segments; "
          f"rectangle synopsis on latitude x longitude: {syn2.num_nodes:,} nodes\n")
    b1, b2 = syn1.error_bound(0.95), syn2.error_bound(0.95)
    header = (f"{'query':<48} {'true':>6} {'private':>9} {'± std':>7}  "
              f"{'95% interval (this query)':>25}")
    print(header)
    print("-" * len(header))

    def row(name, true, bars):
        a, s, low, high = (float(np.ravel(x)[0]) for x in (bars.answer, bars.std, bars.low, bars.high))
        interval = f"[{_shown(low)}, {_shown(high)}]"
        print(f"{name:<48} {true:>6,} {_shown(a):>9} {_shown(s):>7}  {interval:>25}")

    for name, a, b in DEMO_INTERVALS:
        lo, hi = max(int(a * e6), DEMO_LAT[0]), min(int(b * e6), DEMO_LAT[1])
        true = int(np.count_nonzero((lat >= lo) & (lat <= hi)))
        row("latitude " + name, true, syn1.confidence_intervals(lo, hi, 0.95, nonnegative=True))
    for name, (la0, lo0), (la1, lo1) in DEMO_RECTANGLES:
        lo = [int(la0 * e6), int(lo0 * e6)]
        hi = [int(la1 * e6), int(lo1 * e6)]
        true = int(np.count_nonzero((lat >= lo[0]) & (lat <= hi[0]) & (lon >= lo[1]) & (lon <= hi[1])))
        row(name, true, syn2.confidence_intervals([lo], [hi], 0.95, nonnegative=True))
    print(f"simultaneous 95% bounds (every query at once): intervals ± {_shown(b1)}, "
          f"rectangles ± {_shown(b2)}")
    # 1000 random queries with endpoints drawn from the data's bounding region
    # (public knowledge: the continental US plus territories), for a summary.
    q = args.queries
    gen = Rng(seed=12345)  # the query workload only (fixed so runs compare), not noise
    la = np.sort(gen.integers(-15 * e6, 72 * e6, size=(q, 2)), axis=1)
    lo_ = np.sort(gen.integers(-180 * e6, -60 * e6, size=(q, 2)), axis=1)
    bars1 = syn1.confidence_intervals(la[:, 0], la[:, 1], 0.95)
    ans1 = bars1.answer
    s_lat = np.sort(lat)
    true1 = np.searchsorted(s_lat, la[:, 1], side="right") - np.searchsorted(s_lat, la[:, 0], side="left")
    lo2 = np.column_stack([la[:, 0], lo_[:, 0]])
    hi2 = np.column_stack([la[:, 1], lo_[:, 1]])
    bars2 = syn2.confidence_intervals(lo2, hi2, 0.95)
    ans2 = bars2.answer
    true2 = np.array([np.count_nonzero((lat >= a) & (lat <= b) & (lon >= c) & (lon <= d))
                      for a, c, b, d in zip(lo2[:, 0], lo2[:, 1], hi2[:, 0], hi2[:, 1])])
    print(f"\n{q} random queries:{'':<10} {'RMSE':>6} {'median |err|':>13} {'median std':>11} "
          f"{'max |err|':>10} {'in 95% interval':>16} {'in sim. bound':>14}")
    for label, bars, true, bound in (("intervals (latitude)", bars1, true1, b1),
                                     ("rectangles (lat x lon)", bars2, true2, b2)):
        err = bars.answer - true
        inside = np.mean((bars.low <= true) & (true <= bars.high))
        print(f"  {label:<26} {math.sqrt(np.mean(err ** 2)):>6.1f} {np.median(np.abs(err)):>13.1f} "
              f"{np.median(bars.std):>11.1f} {np.abs(err).max():>10.1f} {inside:>16.1%} "
              f"{np.mean(np.abs(err) <= bound):>14.1%}")
    if args.plot:
        _plot(args.plot, true1, ans1, true2, ans2)
        print(f"\nwrote {args.plot}")
    return 0


def _plot(path, true1, ans1, true2, ans2):
    fig = new_figure((10, 4.5))
    axes = fig.subplots(1, 2)
    for ax, t, a, title in ((axes[0], true1, ans1, "intervals (latitude)"),
                            (axes[1], true2, ans2, "rectangles (lat × lon)")):
        ax.scatter(t, a, s=4, alpha=0.5)
        top = max(t.max(initial=1), a.max(initial=1))
        ax.plot([0, top], [0, top], color="gray", lw=1)
        ax.set_xlabel("true count")
        ax.set_ylabel("private answer")
        ax.set_title(title)
    fig.tight_layout()
    persist.atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=100))


# ------------------------------------------------------------------- plot
def cmd_plot(args):
    require_matplotlib("plot")             # before anything is read or drawn
    if args.bins is not None:
        check_bins(args.bins, MAX_BINS, "--bins")
    _check_output(args.output, args.path, args.releases)
    window = None
    if args.range is not None:
        obj_dims = len(args.range.split(","))
        window = parse_domain(args.range, obj_dims, args.scale)
    kind = plot_file(args.path, args.output, releases=args.releases, confidence=args.confidence,
                     scale=args.scale, bins=args.bins, window=window)
    print(f"wrote {args.output}: {kind}")
    return 0


def _add_plot_parser(sub):
    g = sub.add_parser("plot", help="draw a saved synopsis or counter checkpoint (needs matplotlib)",
                       description="Draw what a saved file releases, with its error band: an "
                                   "interval synopsis as the private distribution over its "
                                   "domain, a 2-D rectangle synopsis as a heat map, a counter "
                                   "checkpoint as its running count.  Only released numbers "
                                   "are drawn.")
    g.add_argument("path", metavar="FILE", help="a saved synopsis or counter checkpoint")
    g.add_argument("-o", "--output", required=True, metavar="FILE.png", help="the image to write")
    g.add_argument("--confidence", type=real, default=0.95,
                   help="confidence of the per-bin error band (default: %(default)s)")
    g.add_argument("--bins", type=integer, default=None,
                   help="bins per axis (default: 200 for 1-D, 60 per axis for 2-D; at most "
                        "10000 for 1-D, 500 per axis for 2-D)")
    g.add_argument("--scale", help="fixed-point scale used when building (e.g. 1e6): axes in "
                                   "user units")
    g.add_argument("--range", metavar="LO:HI",
                   help="the part of the domain to draw, lo:hi per axis (default: where the "
                        "private counts lie)")
    g.add_argument("--releases", metavar="FILE",
                   help="for a counter checkpoint: the releases count-stream printed")
    g.set_defaults(func=cmd_plot)


#: Options whose value may start with '-' (a negative number): ``--domain -5:5``.
_SIGNED_VALUE_OPTIONS = ("--domain", "--lo", "--hi", "--range")
_SIGNED_VALUE = re.compile(r"-[0-9.][-0-9.:,eE+ ]*")


def _attach_negative_values(argv):
    """``--domain -5:5`` -> ``--domain=-5:5``: argparse takes ``-5:5`` for an option.

    Only for the options above and only for a value made of digits, signs,
    dots, colons and commas; everything after ``--`` is left alone.

    >>> _attach_negative_values(["build", "--domain", "-5:5,-90:90", "--lo", "3"])
    ['build', '--domain=-5:5,-90:90', '--lo', '3']
    """
    out, i = [], 0
    argv = list(argv)
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        if arg in _SIGNED_VALUE_OPTIONS and i + 1 < len(argv) \
                and _SIGNED_VALUE.fullmatch(str(argv[i + 1])):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def _delimiter(args):
    """The checked ``--delimiter`` (one character), or ``","``."""
    if getattr(args, "delimiter", None) is None:
        return ","
    try:
        return check_delimiter(args.delimiter)
    except InputError as exc:
        raise UsageError(str(exc)) from None


# ----------------------------------------------------------------- parser
def _version():
    return __version__


def build_parser():
    p = _Parser(prog="pydp-synopsis", description="Pure epsilon-differentially-private synopses.")
    p.add_argument("--debug", action="store_true",
                   help="show tracebacks and databases' own error text (UNSAFE TO SHARE: it "
                        "may quote data values)")
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.required = True
    seed_help = "fixed seed: reproducible noise FOR TESTS ONLY (no privacy against whoever knows it)"

    d = sub.add_parser("demo", help="private synopses of the bundled ZIP-code data",
                       description="Build an interval and a rectangle synopsis of the 42,049 US "
                                   "ZIP-code centroids shipped with the package, answer example "
                                   "queries and compare 1000 random queries with the truth.")
    d.add_argument("--epsilon", type=real, default=1.0,
                   help="privacy loss of each of the two releases (default: %(default)s)")
    d.add_argument("--queries", type=integer, default=1000,
                   help="random queries in the summary (default: %(default)s)")
    d.add_argument("--plot", metavar="FILE.png",
                   help="draw true vs private answers (needs matplotlib; checked before the demo runs)")
    d.add_argument("--write-data", dest="write_data", metavar="FILE.csv",
                   help="write the bundled data (lat,lon in degrees) as CSV and stop: the "
                        "input of the examples in docs/guide/cli.md")
    d.add_argument("--seed", type=integer, help=seed_help)
    d.set_defaults(func=cmd_demo)

    b = sub.add_parser("build", help="build a synopsis of a table",
                       description="Build a private synopsis of one integer column (an interval "
                                   "synopsis: counts over any range) or of several (a rectangle "
                                   "synopsis: counts over any box) and save it.  The result is "
                                   "epsilon-differentially private with respect to adding or "
                                   "removing one row; every argument is checked before any data "
                                   "is read.")
    b.add_argument("--input", metavar="PATH",
                   help="a .csv, .parquet, .npy or .npz file, a glob ('data/*.parquet') or a directory")
    b.add_argument("--engine", choices=ENGINES, default=None,
                   help="who reads --input: local (pyarrow, default), duckdb, or dask (a cluster)")
    b.add_argument("--scheduler", metavar="ADDRESS",
                   help="dask scheduler address, tcp://HOST:PORT, tls://HOST:PORT or HOST:PORT "
                        "(with --engine dask; default: a local cluster)")
    b.add_argument("--cluster-timeout", dest="cluster_timeout", type=real,
                   metavar="SECONDS",
                   help=f"dask: seconds to wait for the scheduler to connect and to acknowledge "
                        f"each message, 1 to 86400 (default: {CLUSTER_TIMEOUT:g})")
    b.add_argument("--shards", type=integer, metavar="N",
                   help="dask: cut the domain at N-1 public points (equal widths) into N shards "
                        "partitioned in parallel")
    b.add_argument("--partition", choices=("privtree", "dnrr"), default=None,
                   help="one column: the private partition (default privtree; dnrr: the "
                        "paper's Fig. 1)")
    b.add_argument("--database", metavar="URL",
                   help="sqlite:///file.db, duckdb:///file.duckdb, postgresql://user@host/db, "
                        "or a .db/.sqlite/.duckdb path (opened read-only)")
    b.add_argument("--table", help="table to read (with --database and --columns); "
                                   "the GROUP BY queries are built with quoted names")
    b.add_argument("--sql", help="a custom query instead of --table (with --database): one "
                                 "SELECT statement, for the data steward (a query can fail on a "
                                 "secret value; docs/security-databases.md)")
    b.add_argument("--statement-timeout", dest="statement_timeout", metavar="SECONDS",
                   help="stop any database statement running longer (--database or --engine "
                        "duckdb; default 600)")
    b.add_argument("--allow-writable-role", dest="allow_writable_role", action="store_true",
                   help="PostgreSQL: read even as a superuser or a role that may write the "
                        "tables (refused by default)")
    b.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="as the global --debug: tracebacks and the database's own error text "
                        "(UNSAFE TO SHARE: it may quote data values)")
    b.add_argument("--memory-limit", dest="memory_limit", metavar="SIZE",
                   help="DuckDB's memory limit, e.g. 1GB (it spills to disk beyond it)")
    b.add_argument("--columns", help="comma-separated column names (one: intervals; several: rectangles)")
    b.add_argument("--domain", help="public bounds lo:hi per column, comma separated, or a type name "
                                    "(int32, uint64, ...); never taken from the data")
    b.add_argument("--epsilon", type=real,
                   help="privacy loss of this release (required): smaller is more private and "
                        "noisier; 1 is a common choice, 0.1 strong, 5 weak (see "
                        "docs/guide/choosing.md)")
    b.add_argument("--beta", type=real, default=0.05,
                   help="failure probability of the accuracy guarantees, never of privacy "
                        "(default: %(default)s)")
    b.add_argument("--delimiter", metavar="CHAR",
                   help="field separator of CSV input, one character, 'tab' for tabs (default: ,)")
    b.add_argument("--scale", help="power of ten turning decimals into integers exactly (e.g. 1e6); "
                                   "rounds to nearest, ties to even")
    b.add_argument("--resolution", metavar="R",
                   help="bin real values (0.01: floor(v / 0.01)) or dates and times (1h, 15min, "
                        "7d); one value or one per column, comma separated")
    b.add_argument("--tz", metavar="ZONE",
                   help="time zone of datetime columns (e.g. UTC, Europe/Paris): --domain and "
                        "queries are wall times there; needed for time-zone-aware timestamps")
    b.add_argument("--dropna", action="store_true",
                   help="drop rows with a missing value (empty, NA, NaN, NULL) in a used column "
                        "(a per-row filter); without it such a row is an error")
    b.add_argument("--clip", action="store_true",
                   help="clip values outside --domain to its nearest end (per column, in the "
                        "column's units; a per-row map: the same epsilon) instead of refusing "
                        "them; the synopsis records it")
    b.add_argument("--output", required=True, metavar="SYN", help="where to save the synopsis")
    b.add_argument("--seed", type=integer, help=seed_help)
    b.set_defaults(func=cmd_build)

    q = sub.add_parser("query", help="answer counting queries from a saved synopsis",
                       description="Answer counts from a saved synopsis: each answer with its "
                                   "exact noise standard deviation and a per-query interval "
                                   "holding the true count with the confidence asked; the "
                                   "simultaneous bound (all queries at once) is given apart.  "
                                   "Queries cost no privacy.")
    q.add_argument("synopsis", metavar="SYN")
    q.add_argument("--lo", help="lower corner, inclusive (comma separated for rectangles)")
    q.add_argument("--hi", help="upper corner, inclusive")
    q.add_argument("--queries", metavar="FILE.csv", help="CSV with lo,hi (or lo_0..,hi_0..) columns")
    q.add_argument("--output", metavar="FILE.csv", help="where to write answers (default stdout)")
    q.add_argument("--confidence", type=real, default=0.95,
                   help="confidence of the per-query intervals and of the simultaneous bound "
                        "(default: %(default)s)")
    q.add_argument("--nonnegative", action="store_true",
                   help="clip answers and intervals at 0 (post-processing: true counts are "
                        "never negative)")
    q.add_argument("--delimiter", metavar="CHAR",
                   help="field separator of the query and answer CSV files (default: ,)")
    q.add_argument("--scale", help="fixed-point scale used when building (e.g. 1e6); only for "
                                   "files without column descriptions (the file says its units)")
    q.set_defaults(func=cmd_query)

    i = sub.add_parser("info", help="describe a saved synopsis or counter checkpoint",
                       description="Print the public parameters of a saved synopsis or "
                                   "checkpoint (never the data).")
    i.add_argument("path", metavar="FILE")
    i.set_defaults(func=cmd_info)

    c = sub.add_parser("count-stream", help="private running counts of a 0/1 stream on stdin",
                       description="Read 0/1 items (one per line) on stdin and print a private "
                                   "running count after each; --checkpoint saves the state to "
                                   "resume later.")
    c.add_argument("--horizon", type=integer, help="maximum stream length (public, required for a "
                                               "new stream)")
    c.add_argument("--epsilon", type=real, help="privacy loss of the whole stream of releases")
    c.add_argument("--counter", choices=sorted(COUNTERS), default=None,
                   help="kary (default for a new stream), binary or sparse")
    c.add_argument("--k", type=integer, default=None, help="fanout of the k-ary counter (default 19)")
    c.add_argument("--beta", type=real, default=0.05, help="failure probability (sparse counter)")
    c.add_argument("--positions", action="store_true",
                   help="stdin holds the increasing positions of the 1s (sparse counter); "
                        "output is 'time,value' lines where the release changes")
    c.add_argument("--checkpoint", metavar="FILE",
                   help="resume from / save state to FILE (mode 0600), journaled in FILE.journal and "
                        "locked for the run (see docs/security-checkpoints.md)")
    c.add_argument("--adopt-checkpoint", dest="adopt_checkpoint", action="store_true",
                   help="resume a checkpoint that has no journal (release 0.2 and older) and start "
                        "its journal: only for the one copy of its stream")
    c.add_argument("--new-stream", dest="new_stream", action="store_true",
                   help="start a new stream at --checkpoint FILE although its journal records an "
                        "earlier stream whose checkpoint is gone")
    c.add_argument("--monotone", action="store_true",
                   help="print the running maximum of the releases, floored at 0 (never "
                        "decreases, never negative; post-processing, biased upward)")
    c.add_argument("--seed", type=integer, help=seed_help)
    c.set_defaults(func=cmd_count_stream)
    _add_plot_parser(sub)
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwound like Ctrl-C, so that every ``finally`` runs
    (spill files and temporary outputs are removed) and nothing half-done is kept."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def _stop_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` (SIGINT already raises
    KeyboardInterrupt); returns the handlers to restore."""
    stops = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    try:
        return {sig: signal.signal(sig, _raise_terminated) for sig in stops}
    except ValueError:           # not the main thread (main() called from a thread)
        return {}


def main(argv=None):
    """Entry point of the ``pydp-synopsis`` command; returns the exit status.

    SIGINT, SIGTERM and SIGHUP stop any command cleanly (temporary and spill files
    removed, no output written) with status 128 + the signal's number.
    """
    parser = build_parser()
    args = parser.parse_args(_attach_negative_values(sys.argv[1:] if argv is None else argv))
    previous = _stop_signals()
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except MemoryError:
        if args.debug:
            raise
        # numpy's text names the size it tried: never shown (it may follow the data)
        print("pydp-synopsis: error: out of memory: an input declares or holds more than "
              "this machine can allocate", file=sys.stderr)
        return 2
    except (SynopsisError, ValueError, TypeError, OSError, ArithmeticError, csv.Error,
            zipfile.BadZipFile, EOFError) as exc:
        if args.debug:
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.filename}: {exc.strerror}"
        print(f"pydp-synopsis: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        print(f"pydp-synopsis: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        return 128 + signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
