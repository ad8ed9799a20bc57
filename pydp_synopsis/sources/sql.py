"""SQL sources: the aggregation runs in the database (pushdown), read-only.

Engines: SQLite (the standard library, the embedded default), DuckDB
(``pip install 'pydp-synopsis[duckdb]'``; also the engine for large
Parquet and CSV files, :func:`duckdb_files`) and PostgreSQL
(``pip install 'pydp-synopsis[postgresql]'``, psycopg 3).

For integer columns nothing but aggregates leaves the database:

1. one query checks the data before anything is released: the number of
   rows, NULLs and the minimum and maximum of every column (compared with
   the public domain; messages name the column, never a value), and in
   SQLite the values' storage classes;
2. per axis, ``SELECT col, count(*) FROM ... GROUP BY col ORDER BY col``,
   streamed in chunks (a server-side cursor and binary ``COPY`` in
   PostgreSQL, Arrow record batches in DuckDB, ``fetchmany`` in SQLite)
   into the private partition;
3. for rectangles, the cell counts: PostgreSQL computes each row's segment
   with ``width_bucket(col, thresholds)`` (a binary search over the released
   segment starts) and groups by cell (once: the groups are spilled for the
   structure's second pass); DuckDB and SQLite, which have no
   such function, stream the columns once and the segments are found with
   numpy and spilled (4 bytes per row and axis, under ``temp_directory``) for
   the structure's second pass: memory O(chunk) whatever the rows.

Each pass is reported to a progress object that has a ``step`` method
(:func:`~pydp_synopsis.sources.base.report`); nothing is printed here.

Columns that are not integers (decimals with ``scale``, SQLite values of
other storage classes) are streamed as rows and converted exactly in Python
(:func:`pydp_synopsis.inputs.to_fixed_point`), except with a category column:
then the database counts the distinct tuples of the columns (``GROUP BY``) and
only those are converted here (:mod:`pydp_synopsis.sources.grouped`).

Read-only (:mod:`pydp_synopsis.readonly`, docs/security-databases.md).
SQLite opens the file with ``mode=ro`` and an authorizer that allows reading
only, and CPython refuses whatever SQLite's parser leaves after the first
statement; DuckDB opens databases with ``read_only=True`` and external
access (``COPY``, reading other files) disabled and locked, and every
statement must be one ``SELECT`` by DuckDB's parser; PostgreSQL sends every
statement through the extended protocol (one statement per Parse; the text
of a ``COPY`` is parsed by the server before it runs), in a session whose
default transaction is read-only and in one ``READ ONLY`` ``REPEATABLE
READ`` transaction, so every pass sees the same snapshot; a superuser or a
role that may write is refused unless ``allow_writable_role``.  Every
statement has a timeout.  Identifiers (``table``, ``columns``) are quoted;
``sql`` is the user's own query, wrapped as a subquery.  Errors name the
operation and the error class, never the database's text (it may quote a
value) unless ``debug``.

References
----------
.. [PG] PostgreSQL documentation, "Mathematical Functions"
   (``width_bucket(operand, thresholds)``) and "COPY" (binary format).
.. [DUCK] DuckDB documentation, "Python DB API" (``fetch_record_batch``),
   "Configuration" (``read_only``, ``enable_external_access``).
"""
import os
import shutil

import numpy as np

from ..errors import InputError
from ..inputs import parse_scale, to_fixed_point
from ..readonly import check_statement_timeout, redact, strip_query
from ..units import convert_chunk, missing_message, needs_conversion
from ..spill import private_directory
from .base import (CHUNK_ROWS, Prepared, RowPrepared, RowSource, column_offsets, prefetch,
                   replayed_cells, report, reported_merge, spilled_cells)
from .engines import ENGINES, Null, quote_identifier
from .grouped import GroupedPrepared, groups_categories
from .plans import (check_plan, memory_budget, prefers_sort, run_entries, sample_query,
                    sorted_aggregate)

__all__ = ["parse_database", "quote_identifier", "SqlSource", "duckdb_files"]

_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_SQLITE_EXT = (".db", ".sqlite", ".sqlite3")


def parse_database(database):
    """``(engine, target, shown)`` of a ``--database`` value.

    ``sqlite:///path``, ``duckdb:///path``, ``postgresql://...`` (also
    ``postgres://``), or a plain path: ``.db``/``.sqlite``/``.sqlite3`` is
    SQLite, ``.duckdb`` DuckDB.  ``shown`` is the value with any password
    replaced by ``***`` (for messages).

    Examples
    --------
    >>> parse_database("sqlite:///data/t.db")[:2]
    ('sqlite', 'data/t.db')
    >>> parse_database("postgresql://me:secret@db.example/sales")[2]
    'postgresql://me:***@db.example/sales'
    >>> parse_database("t.duckdb")[:2]
    ('duckdb', 't.duckdb')
    """
    if not isinstance(database, str) or not database:
        raise InputError("database= must be sqlite:///file.db, duckdb:///file.duckdb, "
                         "postgresql://... or the path of a .db/.sqlite/.duckdb file")
    for scheme, engine in (("sqlite:///", "sqlite"), ("duckdb:///", "duckdb")):
        if database.startswith(scheme):
            return engine, database[len(scheme):], database
    if database.startswith(("postgresql://", "postgres://")):
        return "postgresql", database, redact(database)
    if "://" in database:
        raise InputError(f"database=: unknown scheme in {redact(database)!r} (sqlite:///, "
                         "duckdb:/// or postgresql://)")
    ext = os.path.splitext(database)[1].lower()
    if ext in _SQLITE_EXT:
        return "sqlite", database, database
    if ext == ".duckdb":
        return "duckdb", database, database
    raise InputError(f"database= {database!r}: a plain path must end in .db, .sqlite or "
                     ".duckdb (or give a URL: sqlite:///, duckdb:///, postgresql://)")


# ------------------------------------------------------------------ the source

class SqlSource(RowSource):
    """A table or query of a database, aggregated in the database where it can be.

    Parameters
    ----------
    database : str
        ``sqlite:///file.db``, ``duckdb:///file.duckdb``,
        ``postgresql://user@host/db`` or a ``.db``/``.sqlite``/``.duckdb``
        path (:func:`parse_database`).
    columns : sequence of str
        The integer columns, in axis order.
    table : str, optional
        A table (``schema.table`` allowed); the query is built here with
        quoted identifiers.
    sql : str, optional
        Instead of ``table``: any reading query (it becomes a subquery;
        ``columns`` name its result columns, all of them by default).
    scale : str or number, optional
        Fixed-point scale for decimal columns (those are streamed as rows).
    units : sequence of Column, optional
        One :class:`~pydp_synopsis.units.Column` per column (dates, times,
        decimals); such columns are streamed as rows and converted exactly.
    dropna : bool
        Drop rows with a NULL in any used column: ``WHERE col IS NOT NULL``
        pushed down to the database (a per-row filter).  False: a NULL is
        refused, naming its column.
    chunk_rows : int
        Rows fetched per chunk.
    memory_limit : str, optional
        The build's memory budget, e.g. ``"1GB"`` or ``"512MiB"`` (default:
        a quarter of the machine's memory, at most 1 GiB;
        :func:`~pydp_synopsis.sources.plans.memory_budget`).  DuckDB, which
        runs inside this process, gets a quarter of it (beyond it DuckDB spills to
        ``temp_directory``), the ``"sort"`` plan's in-memory runs a quarter.
    threads : int, optional
        DuckDB's threads.
    temp_directory : str, optional
        Where DuckDB, the ``"sort"`` plan and the cell pass spill (default: the
        system's temporary directory); spill files are 0600 in a private 0700
        directory, removed on success, failure and interruption.
    plan : {"auto", "group", "sort"}
        How each integer column's sorted aggregate is computed
        (:mod:`~pydp_synopsis.sources.plans`): ``"group"`` by the database
        (``GROUP BY``: fast for few distinct values), ``"sort"`` here by an
        external merge sort of the streamed column (memory independent of the
        rows: for timestamps, identifiers and other columns with about as many
        distinct values as rows), ``"auto"`` (default) by the distinct values
        of the first rows.  The release is the same whichever plan runs.
        With a category column (``units``), ``"group"`` counts the columns'
        distinct tuples in the database, ``"sort"`` streams the rows
        (:mod:`~pydp_synopsis.sources.grouped`).
    statement_timeout : float, optional
        Seconds each statement may run, from its start to its last row
        (default :data:`~pydp_synopsis.readonly.DEFAULT_STATEMENT_TIMEOUT`,
        600); past it the statement is interrupted and one line is raised.
    allow_writable_role : bool
        PostgreSQL: read even as a superuser or as a role that may write the
        table (for ``sql``: any table of the database).  Refused by default:
        such a role's query can call server functions that write files.
    debug : bool
        Add the database's own error text to error messages.  **Unsafe to
        share**: the text may quote data values or files.

    Notes
    -----
    Nothing is opened here: :meth:`prepare` connects, checks and reads.
    ``sql`` is for the data steward: exactly one ``SELECT`` (the engine's
    parser decides), but an arbitrary query can fail on a secret value, so
    whether a build raises may depend on the data (docs/security-databases.md).

    Examples
    --------
    >>> import sqlite3, tempfile, os, pydp_synopsis as ps
    >>> path = os.path.join(tempfile.mkdtemp(), "t.db")
    >>> con = sqlite3.connect(path)
    >>> _ = con.execute("CREATE TABLE t (x INTEGER)")
    >>> _ = con.executemany("INSERT INTO t VALUES (?)", [(3,), (5,), (5,), (9,)])
    >>> con.commit(); con.close()
    >>> src = SqlSource(f"sqlite:///{path}", ["x"], table="t")
    >>> s = ps.IntervalSynopsis.build(src, domain=(0, 15), epsilon=1e6, rng=ps.Rng(seed=1))
    >>> round(s.count(0, 15))
    4
    """

    def __init__(self, database, columns=(), *, table=None, sql=None, scale=None,
                 chunk_rows=CHUNK_ROWS, memory_limit=None, threads=None, temp_directory=None,
                 units=None, dropna=False, statement_timeout=None, allow_writable_role=False,
                 debug=False, plan="auto"):
        self.engine_name, self._target, self.shown = parse_database(database)
        statement_timeout = check_statement_timeout(statement_timeout)
        plan = check_plan(plan)
        budget = memory_budget(memory_limit)
        if (table is None) == (sql is None):
            raise InputError("give a table (table=) or a query (sql=), not both")
        if table is not None:
            if not columns:
                raise InputError("name the columns to use (columns=['a', 'b'])")
            relation = quote_identifier(table)
        else:
            sql = strip_query(sql)
            # new lines: a trailing -- comment cannot swallow the closing parenthesis
            relation = f"(\n{sql}\n) AS pydp_query"
        self._setup(relation, table, columns, scale, chunk_rows,
                    dict(memory_limit=f"{budget // 4 // 2**20}MiB", threads=threads,
                         temp_directory=temp_directory, statement_timeout=statement_timeout,
                         allow_writable_role=bool(allow_writable_role), debug=bool(debug),
                         plan=plan, budget=budget),
                    units, dropna)
        self.sql = sql

    def _setup(self, relation, table, columns, scale, chunk_rows, options, units=None,
               dropna=False):
        parse_scale(scale)            # a bad scale is refused before connecting
        self.units = tuple(units) if needs_conversion(units) else None
        self.dropna = bool(dropna)
        self._relation, self.table, self.sql = relation, table, None
        self.columns = tuple(c.strip() for c in columns if c.strip())
        self.scale, self.chunk_rows = scale, int(chunk_rows)
        self._options = options
        self._engine = None

    @classmethod
    def _over_files(cls, relation, shown, columns, scale, chunk_rows, options, units=None,
                    dropna=False):
        """An in-memory DuckDB reading files through ``relation`` (:func:`duckdb_files`)."""
        self = cls.__new__(cls)
        self.engine_name, self._target, self.shown = "duckdb", ":memory:", shown
        self._setup(relation, None, columns, scale, chunk_rows, dict(options, files=True),
                    units, dropna)
        return self

    # -- the row path (RowSource): values converted in Python
    def chunks(self):
        width = len(self.columns)
        cols = ", ".join(quote_identifier(c) for c in self.columns)
        sql = f"SELECT {cols} FROM {self._relation}"
        engine = self._engine
        try:
            for chunk in engine.row_chunks(sql, width, self.chunk_rows):
                if self.units is not None:
                    out, _ = convert_chunk(chunk, self.units, self.columns,
                                           where=f"{self.shown}: ", clip=self._clip_bounds)
                    yield out
                    continue
                out = []
                for a, (col, name) in enumerate(zip(chunk, self.columns)):
                    try:
                        out.append(to_fixed_point(col, self.scale, name, self.clip_bounds(a)))
                    except InputError as exc:
                        # rows of a query have no order: no row number in the message
                        raise InputError(f"{self.shown}: {exc}") from None
                yield out
        except Null as null:
            raise InputError(missing_message(f"{self.shown}: ", self.columns[null.index])) \
                from None
        except engine.errors as exc:
            raise engine.failed(exc, "reading rows") from None

    # -- prepare: connect, check, decide pushdown or rows
    def prepare(self, domains, progress=None, clip=False):
        if self.columns:
            self.check_dims(domains)
        engine = ENGINES[self.engine_name](self._target, self.shown, self._options)
        engine.connect()
        self._engine = engine
        try:
            # the role before any of the user's SQL reaches the server
            engine.check_role(self.table)
            if self.sql is not None:
                engine.check_query(self.sql)
            described = self._describe(engine)
            self.check_dims(domains)
            self._clip_bounds = tuple(domains) if clip else None
            if self.dropna and not getattr(self, "_filtered", False):
                # the per-row filter, pushed down: rows with a NULL in a used column
                kept = " AND ".join(f"{quote_identifier(c)} IS NOT NULL" for c in self.columns)
                self._relation = f"(SELECT * FROM {self._relation} WHERE {kept}) AS pydp_notnull"
                self._filtered = True
            if self.scale is None and self.units is None and all(t is None or engine.is_integer(t)
                                          for t in described):
                prepared = _PushdownPrepared(self, engine, tuple(domains), clip, described,
                                             progress)
                if prepared.pushdown:
                    return prepared
                prepared.close(keep_engine=True)
            if groups_categories(self, engine):     # category columns: GROUP BY, then mapped
                return GroupedPrepared(self, engine, domains, progress, clip)
            return _SqlRowPrepared(self, engine, domains, progress, clip)
        except BaseException:
            engine.close()
            self._engine = None
            raise

    def _describe(self, engine):
        """Column names and types of the relation (no row is read)."""
        try:
            described = engine.describe(self._relation)
        except engine.errors as exc:
            what = (f"reading table {self.table!r}" if self.table else "reading the query"
                    if self.sql else "reading the files")
            raise engine.failed(exc, what) from None
        names = [d[0] for d in described]
        if not self.columns:
            self.columns = tuple(names)
        types = []
        for c in self.columns:
            if c not in names:
                where = (f"table {self.table!r}" if self.table else "the query" if self.sql
                         else "the files (as DuckDB's CSV sniffer reads them)")
                # a table's column names are its schema; a query's (PIVOT) or a sniffed
                # CSV header's may be data values
                listing = f" (columns: {', '.join(names)[:200]})" if self.table else ""
                raise InputError(f"{self.shown}: {where} has no column {c!r}{listing}")
            if names.count(c) > 1:
                raise InputError(f"{self.shown}: the query returns column {c!r} more than once")
            types.append(described[names.index(c)][1])
        return types


class _SqlRowPrepared(Prepared):
    """Rows streamed and converted in Python (decimals, SQLite's other storage classes)."""

    def __init__(self, source, engine, domains, progress, clip=False):
        self._engine = engine
        self._inner = RowPrepared(source, domains, progress, clip)
        self.rows = self._inner.rows

    def axis(self, a):
        return self._inner.axis(a)

    def cells(self, ends):
        return self._inner.cells(ends)

    def close(self):
        self._inner.close()
        self._engine.close()


class _PushdownPrepared(Prepared):
    """Integer columns: every aggregate computed by the database."""

    def __init__(self, source, engine, domains, clip=False, types=None, progress=None):
        self._source, self._engine, self._domains = source, engine, domains
        self._clip, self._types = clip, types
        self._progress = progress           # hears each pass (base.report); never prints
        self._cols = [quote_identifier(c) for c in source.columns]
        self._rel = source._relation
        self._tmp = None
        self.pushdown = self._check()
        self.plans = self._choose_plans() if self.pushdown else None

    def _check(self):
        """One query: rows, NULLs, min, max (and SQLite's storage classes).  False when a
        SQLite column holds non-integers (they are converted in Python instead).  With
        clip, values outside the domain are not refused: the aggregates clip them."""
        engine, parts = self._engine, ["count(*)"]
        for col in self._cols:
            parts += [f"count({col})", f"min({col})", f"max({col})"]
            if engine.name == "sqlite":
                parts.append(f"sum(typeof({col}) NOT IN ('integer', 'null'))")
        report(self._progress, "checking the columns")
        try:
            row = engine.one_row(f"SELECT {', '.join(parts)} FROM {self._rel}")
        except engine.errors as exc:
            raise engine.failed(exc, "checking the columns") from None
        self.rows = int(row[0])
        step = 4 if engine.name == "sqlite" else 3
        for a, (name, (lo, hi)) in enumerate(zip(self._source.columns, self._domains)):
            count, low, high = row[1 + step * a: 4 + step * a]
            if engine.name == "sqlite" and row[4 + step * a]:
                return False
            if int(count) != self.rows:
                raise InputError(missing_message(f"{self._source.shown}: ", name))
            if self.rows and not self._clip and (int(low) < lo or int(high) > hi):
                raise InputError(f"column {name!r} must lie in the domain [{lo}, {hi}]: some "
                                 f"value is outside it")
        return True

    def _choose_plans(self):
        """``"group"`` or ``"sort"`` per axis (:mod:`~pydp_synopsis.sources.plans`)."""
        plan = self._source._options.get("plan", "auto")
        if plan != "auto":
            return [plan] * len(self._cols)
        engine, plans = self._engine, []
        for a, name in enumerate(self._source.columns):
            report(self._progress, f"sampling column {name!r}")
            try:
                rows, distinct = engine.one_row(sample_query(self._cols[a], self._rel))
            except engine.errors as exc:
                raise engine.failed(exc, f"sampling column {name!r}") from None
            plans.append("sort" if prefers_sort(rows, distinct) else "group")
        return plans

    def _value(self, a):
        """Column a, clipped to its domain when clipping: ``LEAST(GREATEST(col, lo), hi)``
        before any cast (a negative value cast to DuckDB's UBIGINT would fail).  Bounds
        beyond the engine's int8 are dropped for SQLite and PostgreSQL, whose integers
        never pass them; DuckDB compares exactly in HUGEINT, or UHUGEINT for such a column
        (their common type would be DOUBLE)."""
        col = self._cols[a]
        if not self._clip:
            return col
        lo, hi = self._domains[a]
        engine = self._engine.name
        if engine == "duckdb":
            wide = "HUGEINT"
            if self._types and str(self._types[a]).upper() == "UHUGEINT":
                wide, lo = "UHUGEINT", max(lo, 0)     # its values are >= 0 anyway
            low, high = f"CAST({lo} AS {wide})", f"CAST({hi} AS {wide})"
            return f"LEAST(GREATEST({col}, {low}), {high})"
        # int8 columns: bounds beyond int8 clip nothing more here (the offsets clip the rest)
        lo, hi = min(lo, _I64_MAX), min(hi, _I64_MAX)
        if engine == "sqlite":
            return f"min(max({col}, {lo}), {hi})"
        return f"LEAST(GREATEST({col}, {lo}::int8), {hi}::int8)"

    def _cast(self, a):
        """Column a (clipped: :meth:`_value`) as the engine's 64-bit integer (the domain
        decides signedness)."""
        col, hi = self._value(a), self._domains[a][1]
        if self._engine.name == "postgresql":
            return f"{col}::int8"
        if self._engine.name == "duckdb":
            return f"CAST({col} AS {'UBIGINT' if hi > _I64_MAX else 'BIGINT'})"
        return col

    def axis(self, a):
        return prefetch(self._axis(a))

    def _axis(self, a):
        if self.plans[a] == "sort":
            return self._sorted_axis(a)
        return self._grouped_axis(a)

    def _sorted_axis(self, a):
        """The sort plan: the column streamed, each chunk's offsets sorted here and
        spilled as runs, the runs merged (memory independent of the rows)."""
        engine, domain, name = self._engine, self._domains[a], self._source.columns[a]
        sql = f"SELECT {self._cast(a)} FROM {self._rel}"

        def offsets():
            read = 0
            report(self._progress, f"reading column {name!r}", 0, self.rows)
            try:
                for (values,) in engine.int_chunks(sql, 1, self._source.chunk_rows):
                    read += len(values)
                    report(self._progress, f"reading column {name!r}", read, self.rows)
                    yield column_offsets(values, domain, name, self._clip)
            except engine.errors as exc:
                raise engine.failed(exc, f"reading column {name!r}") from None

        options = self._source._options
        yield from reported_merge(sorted_aggregate(offsets(), run_entries(options["budget"]),
                                                   options.get("temp_directory")),
                                  self._progress, name)

    def _grouped_axis(self, a):
        engine, domain, name = self._engine, self._domains[a], self._source.columns[a]
        # grouped by the (clipped) value, by position: an alias could name a column of
        # the user's table (a column "n" was ordered by the count alias "n")
        sql = (f"SELECT {self._cast(a)}, count(*) FROM {self._rel} GROUP BY 1 ORDER BY 1")
        report(self._progress, f"grouping column {name!r} in the database")
        groups = 0
        try:
            for values, counts in engine.int_chunks(sql, 2, self._source.chunk_rows):
                groups += len(values)
                report(self._progress, f"grouping column {name!r}", groups,
                       unit="distinct values")
                yield (column_offsets(values, domain, name, self._clip),
                       np.ascontiguousarray(counts, dtype=np.int64))
        except engine.errors as exc:
            raise engine.failed(exc, f"aggregating column {name!r}") from None

    def cells(self, ends):
        if self._tmp is None:       # 0700, files 0600; where DuckDB and the sort plan spill
            self._tmp = private_directory("pydp-source-",
                                          self._source._options.get("temp_directory"))
        if self._engine.name == "postgresql":
            return self._pg_cells(ends)
        width = len(self._cols)
        sql = f"SELECT {', '.join(self._cast(a) for a in range(width))} FROM {self._rel}"
        engine = self._engine

        def chunks():
            try:
                yield from engine.int_chunks(sql, width, self._source.chunk_rows)
            except engine.errors as exc:
                raise engine.failed(exc, "reading the columns") from None

        return spilled_cells(self._tmp, chunks, ends, self._domains, self._source.columns,
                             self.rows, self._clip, self._progress)

    def _pg_cells(self, ends):
        """GROUP BY cell in PostgreSQL: a row's segment on axis a is the number of
        segment starts ``lo + end + 1`` at or below its value (``width_bucket``)."""
        width, names = len(self._cols), []
        for a, (lo, hi) in enumerate(self._domains):
            starts = [lo + int(e) + 1 for e in ends[a][:-1].tolist()]
            starts = [s for s in starts if s <= _I64_MAX]   # never at or below an int8
            # the released starts as an array literal of integers: no parameter, so no
            # placeholder processing of the user's query text ("LIKE 'a%'")
            array = "'{" + ",".join(map(str, starts)) + "}'::int8[]"
            names.append(f"width_bucket({self._value(a)}, {array})::int8" if starts
                         else "0::int8")
        seg = ", ".join(f"{expr} AS s{a}" for a, expr in enumerate(names))
        keys = ", ".join(f"s{a}" for a in range(width))
        sql = (f"SELECT {keys}, count(*)::int8 FROM (SELECT {seg} FROM {self._rel}) AS cells "
               f"GROUP BY {keys}")
        engine = self._engine

        def chunks():
            cells = 0
            report(self._progress, "counting cells in the database")
            try:
                for cols in engine.int_chunks(sql, width + 1, self._source.chunk_rows):
                    cells += len(cols[width])
                    report(self._progress, "counting cells in the database", cells, unit="cells")
                    yield np.stack(cols[:width], axis=1), cols[width]
            except engine.errors as exc:
                raise engine.failed(exc, "counting the cells") from None

        # the structure reads the cells twice (the grid's two levels): the server's
        # GROUP BY runs once, the second pass reads its result back from a spill
        return replayed_cells(self._tmp, chunks, width, self._progress)

    def close(self, keep_engine=False):
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if not keep_engine:
            self._engine.close()


def duckdb_files(paths, fmt, columns, *, scale=None, chunk_rows=CHUNK_ROWS, memory_limit=None,
                 threads=None, temp_directory=None, delimiter=None, units=None, dropna=False,
                 statement_timeout=None, debug=False, plan="auto"):
    """DuckDB reading CSV or Parquet files and aggregating them (``engine="duckdb"``).

    The files become ``read_parquet([...])`` or ``read_csv([...], header =
    true, skip = 0, delim = ',')`` (the first line is the header; a ragged
    file is refused in one line) in an in-memory DuckDB, then everything is
    as for a database table (:class:`SqlSource`): validation query, ``GROUP BY`` or the
    sort plan per axis (``plan``, ``memory_limit``: as there), streamed cell columns.  CSV
    column types are DuckDB's sniffed ones.
    """
    plan = check_plan(plan)
    budget = memory_budget(memory_limit)
    files = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
    reader = "read_parquet" if fmt == "parquet" else "read_csv"
    extra = ""
    if fmt == "csv":
        # the header is the first line and the delimiter is given (default ","): DuckDB's
        # sniffer would otherwise skip lines and take a ragged data row for the header,
        # whose values then name the columns; a ragged file fails in one line instead
        delim = (delimiter or ",").replace("'", "''")
        extra = f", header = true, skip = 0, delim = '{delim}'"
    if not columns:
        raise InputError("name the columns to use (columns=['a', 'b'])")
    shown = f"duckdb reading {paths[0]}" + (f" and {len(paths) - 1} more" if len(paths) > 1
                                             else "")
    return SqlSource._over_files(f"{reader}({files}{extra}) AS pydp_files", shown, columns,
                                 scale, chunk_rows, dict(memory_limit=f"{budget // 4 // 2**20}MiB",
                                                         plan=plan, budget=budget,
                                                         threads=threads,
                                                         temp_directory=temp_directory,
                                                         statement_timeout=check_statement_timeout(
                                                             statement_timeout),
                                                         debug=bool(debug)),
                                 units, dropna)
