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
   segment starts) and groups by cell; DuckDB and SQLite, which have no
   such function, stream the columns once and the segments are found with
   numpy and spilled to a temporary file for the structure's second pass.

Columns that are not integers (decimals with ``scale``, SQLite values of
other storage classes) are streamed as rows and converted exactly in Python
(:func:`pydp_synopsis.inputs.to_fixed_point`).

Read-only.  SQLite opens the file with ``mode=ro`` and an authorizer that
allows reading statements only (:func:`pydp_synopsis.inputs._read_only`);
DuckDB opens databases with ``read_only=True`` and external access
(``COPY``, reading other files) disabled and locked; PostgreSQL runs one
``READ ONLY`` ``REPEATABLE READ`` transaction, so every pass sees the same
snapshot.  Identifiers (``table``, ``columns``) are quoted; ``sql`` is the
user's own query, wrapped as a subquery.

References
----------
.. [PG] PostgreSQL documentation, "Mathematical Functions"
   (``width_bucket(operand, thresholds)``) and "COPY" (binary format).
.. [DUCK] DuckDB documentation, "Python DB API" (``fetch_record_batch``),
   "Configuration" (``read_only``, ``enable_external_access``).
"""
import os
import sqlite3
import struct
import urllib.parse

import numpy as np

from ..errors import InputError, ParameterError
from ..inputs import _read_only, parse_scale, to_fixed_point
from ..units import convert_chunk, missing_message, needs_conversion
from ..rectangles.axes import Cells
from ..spill import private_directory
from .base import CHUNK_ROWS, Prepared, RowSource, _column_offsets, prefetch, spilled_cells

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
        raise InputError("--database must be sqlite:///file.db, duckdb:///file.duckdb, "
                         "postgresql://... or the path of a .db/.sqlite/.duckdb file")
    for scheme, engine in (("sqlite:///", "sqlite"), ("duckdb:///", "duckdb")):
        if database.startswith(scheme):
            return engine, database[len(scheme):], database
    if database.startswith(("postgresql://", "postgres://")):
        return "postgresql", database, _redact(database)
    if "://" in database:
        raise InputError(f"--database: unknown scheme in {_redact(database)!r} (sqlite:///, "
                         "duckdb:/// or postgresql://)")
    ext = os.path.splitext(database)[1].lower()
    if ext in _SQLITE_EXT:
        return "sqlite", database, database
    if ext == ".duckdb":
        return "duckdb", database, database
    raise InputError(f"--database {database!r}: a plain path must end in .db, .sqlite or "
                     ".duckdb (or give a URL: sqlite:///, duckdb:///, postgresql://)")


def _redact(url):
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def quote_identifier(name):
    """``name`` as a quoted SQL identifier (SQLite, DuckDB and PostgreSQL alike).

    A dotted name is a schema-qualified table: each part is quoted.

    Examples
    --------
    >>> quote_identifier('my "odd" col')
    '"my ""odd"" col"'
    >>> quote_identifier("sales.orders")
    '"sales"."orders"'
    """
    if not isinstance(name, str) or not name or "\0" in name:
        raise ParameterError(f"not a usable SQL name: {name!r}")
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# ------------------------------------------------------------------ engines

class _Engine:
    """One database connection: the few calls the source needs."""

    def __init__(self, target, shown, options):
        self.target, self.shown, self.options = target, shown, options
        self.con = None

    def close(self):
        if self.con is not None:
            try:
                self.con.close()
            finally:
                self.con = None

    def failed(self, exc, what):
        """InputError for a failure while reading data: the engine's class, never its
        message (which may quote a value)."""
        return InputError(f"{self.shown}: the database failed while {what} "
                          f"({type(exc).__name__})")


class _SQLite(_Engine):
    name = "sqlite"
    errors = (sqlite3.Error,)

    def connect(self):
        if not os.path.isfile(self.target):
            raise InputError(f"database file {self.target!r} does not exist")
        try:
            # one thread at a time, but not always the same: streams are prefetched
            self.con = sqlite3.connect(f"file:{urllib.parse.quote(self.target)}?mode=ro",
                                       uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise InputError(f"cannot open {self.shown}: {_first_line(exc)}") from None
        # mode=ro alone still lets VACUUM INTO and ATTACH create files
        self.con.set_authorizer(_read_only)

    def describe(self, relation):
        cur = self.con.execute(f"SELECT * FROM {relation} LIMIT 0")
        return [(d[0], None) for d in cur.description]

    @staticmethod
    def is_integer(type_code):
        return None     # dynamic types: the check query counts storage classes

    def one_row(self, sql, params=()):
        return self.con.execute(sql, params).fetchone()

    def int_chunks(self, sql, width, chunk_rows, params=()):
        cur = self.con.execute(sql, params)
        while True:
            rows = cur.fetchmany(chunk_rows)
            if not rows:
                return
            arr = np.array(rows, dtype=np.int64).reshape(len(rows), width)
            yield [arr[:, j] for j in range(width)]

    def row_chunks(self, sql, width, chunk_rows):
        cur = self.con.execute(sql)
        while True:
            rows = cur.fetchmany(chunk_rows)
            if not rows:
                return
            yield [_python_column([r[j] for r in rows], j) for j in range(width)]


class _Null(Exception):
    """Column ``index`` of a row chunk holds a NULL."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


def _python_column(values, index):
    """A column of Python values (ints, floats, strings, Decimals) as a numpy array
    :func:`~pydp_synopsis.inputs.to_fixed_point` reads exactly; _Null for a NULL."""
    if None in values:
        raise _Null(index)
    kinds = {type(v) for v in values}
    if kinds <= {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:
            return np.array(values, dtype=object)
    if kinds <= {int, float}:
        return np.array(values, dtype=np.float64)
    return np.array([str(v) for v in values])


class _DuckDB(_Engine):
    name = "duckdb"

    @property
    def errors(self):
        import duckdb

        return (duckdb.Error,)

    def connect(self):
        try:
            import duckdb
        except ImportError:
            raise InputError("DuckDB is not installed: pip install 'pydp-synopsis[duckdb]'") \
                from None
        config = {"preserve_insertion_order": False}
        for key in ("memory_limit", "threads", "temp_directory"):
            if self.options.get(key) is not None:
                config[key] = self.options[key]
        files = self.options.get("files")
        if files is None:
            if not os.path.isfile(self.target):
                raise InputError(f"database file {self.target!r} does not exist")
            # the user's SQL may name other files or write them: neither is allowed
            config.update(enable_external_access=False)
        try:
            if files is None:
                self.con = duckdb.connect(self.target, read_only=True, config=config)
            else:
                self.con = duckdb.connect(":memory:", config=config)
            # no progress bar on stdout; then nothing may change the settings
            self.con.execute("SET enable_progress_bar = false")
            self.con.execute("SET lock_configuration = true")
        except duckdb.Error as exc:
            raise InputError(f"cannot open {self.shown}: {_first_line(exc)}") from None

    def describe(self, relation):
        rel = self.con.sql(f"SELECT * FROM {relation} LIMIT 0")
        return list(zip(rel.columns, [str(t) for t in rel.types]))

    @staticmethod
    def is_integer(type_code):
        return type_code.upper() in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                                     "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")

    def one_row(self, sql, params=()):
        return self.con.execute(sql, list(params)).fetchall()[0]

    def _batches(self, sql, chunk_rows):
        # one cursor per stream: an abandoned stream never blocks the next query
        cursor = self.con.cursor()
        try:
            relation = cursor.sql(sql)
            # DuckDB >= 1.4 names it to_arrow_reader; older releases fetch_record_batch
            fetch = getattr(relation, "to_arrow_reader", None) or relation.fetch_record_batch
            for batch in fetch(chunk_rows):
                if batch.num_rows:
                    yield batch
        finally:
            cursor.close()

    def int_chunks(self, sql, width, chunk_rows, params=()):
        for batch in self._batches(sql, chunk_rows):
            yield [batch.column(j).to_numpy() for j in range(width)]

    def row_chunks(self, sql, width, chunk_rows):
        import pyarrow as pa

        for batch in self._batches(sql, chunk_rows):
            cols = []
            for j in range(width):
                col = batch.column(j)
                if col.null_count:
                    raise _Null(j)
                if pa.types.is_decimal(col.type):
                    col = col.cast(pa.string())
                if pa.types.is_timestamp(col.type) and col.type.tz is not None:
                    # aware datetimes: numpy would drop the zone (units.Column converts)
                    cols.append(np.array(col.to_pylist(), dtype=object))
                    continue
                cols.append(col.to_numpy(zero_copy_only=False))
            yield cols


#: PostgreSQL type OIDs of the integer types (int2, int4, int8).
_PG_INTEGERS = (21, 23, 20)


class _Postgres(_Engine):
    name = "postgresql"

    @property
    def errors(self):
        import psycopg

        return (psycopg.Error,)

    def connect(self):
        try:
            import psycopg
        except ImportError:
            raise InputError("psycopg is not installed: pip install "
                             "'pydp-synopsis[postgresql]'") from None
        try:
            self.con = psycopg.connect(self.target, connect_timeout=10)
            self.con.read_only = True
            self.con.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        except psycopg.Error as exc:
            raise InputError(f"cannot connect to {self.shown}: {_first_line(exc)}") from None

    def describe(self, relation):
        with self.con.cursor() as cur:
            cur.execute(f"SELECT * FROM {relation} LIMIT 0")
            return [(d.name, d.type_code) for d in cur.description]

    @staticmethod
    def is_integer(type_code):
        return type_code in _PG_INTEGERS

    def one_row(self, sql, params=()):
        with self.con.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchone()

    def int_chunks(self, sql, width, chunk_rows, params=()):
        """All-int8 results by binary COPY, parsed by numpy (no Python object per value).

        The binary format: a 19-byte header (plus an extension area), then per
        row an int16 field count and per field an int32 length and the value
        (big-endian), then the int16 trailer -1.
        """
        row = 2 + 12 * width
        dtype = np.dtype([("n", ">i2")] + [pair for j in range(width)
                                           for pair in ((f"l{j}", ">i4"), (f"v{j}", ">i8"))])
        with self.con.cursor() as cur, cur.copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)",
                                                params or None) as copy:
            pending, started = bytearray(), False
            for block in copy:
                pending += block
                if not started:
                    if len(pending) < 19 or len(pending) < 19 + struct.unpack(
                            ">i", pending[15:19])[0]:
                        continue
                    del pending[:19 + struct.unpack(">i", pending[15:19])[0]]
                    started = True
                n = len(pending) // row
                if n >= chunk_rows:
                    yield self._parse(pending[:n * row], dtype, width)
                    del pending[:n * row]
            n = len(pending) // row      # the 2-byte trailer is shorter than a row
            if n:
                yield self._parse(pending[:n * row], dtype, width)
                del pending[:n * row]
            if bytes(pending) not in (b"", b"\xff\xff"):
                raise InputError(f"{self.shown}: unexpected data in the COPY stream")

    @staticmethod
    def _parse(buf, dtype, width):
        rec = np.frombuffer(bytes(buf), dtype=dtype)
        if np.any(rec["n"] != width) or any(np.any(rec[f"l{j}"] != 8) for j in range(width)):
            raise InputError("unexpected field in the COPY stream (NULL or not int8)")
        return [rec[f"v{j}"].astype(np.int64) for j in range(width)]

    def row_chunks(self, sql, width, chunk_rows):
        with self.con.cursor(name="pydp_rows") as cur:
            cur.itersize = chunk_rows
            cur.execute(sql)
            while True:
                rows = cur.fetchmany(chunk_rows)
                if not rows:
                    return
                yield [_python_column([r[j] for r in rows], j) for j in range(width)]


_ENGINES = {"sqlite": _SQLite, "duckdb": _DuckDB, "postgresql": _Postgres}


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
    memory_limit, threads, temp_directory : optional
        DuckDB settings (e.g. ``memory_limit="1GB"``: DuckDB runs inside
        this process, and spills to ``temp_directory`` beyond its limit).

    Notes
    -----
    Nothing is opened here: :meth:`prepare` connects, checks and reads.

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
                 units=None, dropna=False):
        self.engine_name, self._target, self.shown = parse_database(database)
        if (table is None) == (sql is None):
            raise InputError("give a table (--table) or a query (--sql), not both")
        if table is not None:
            if not columns:
                raise InputError("name the columns to use (--columns a,b)")
            relation = quote_identifier(table)
        else:
            if not isinstance(sql, str) or not sql.strip():
                raise InputError("--sql must be a query")
            relation = f"({sql.strip().rstrip(';')}) AS pydp_query"
        self._setup(relation, table, columns, scale, chunk_rows,
                    dict(memory_limit=memory_limit, threads=threads,
                         temp_directory=temp_directory), units, dropna)

    def _setup(self, relation, table, columns, scale, chunk_rows, options, units=None,
               dropna=False):
        parse_scale(scale)            # a bad scale is refused before connecting
        self.units = tuple(units) if needs_conversion(units) else None
        self.dropna = bool(dropna)
        self._relation, self.table = relation, table
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
        before = 0
        try:
            for chunk in engine.row_chunks(sql, width, self.chunk_rows):
                if self.units is not None:
                    out, _ = convert_chunk(chunk, self.units, self.columns,
                                           where=f"{self.shown}: ", before=before)
                    before += len(chunk[0])
                    yield out
                    continue
                out = []
                for col, name in zip(chunk, self.columns):
                    try:
                        out.append(to_fixed_point(col, self.scale, name))
                    except InputError as exc:
                        from .files import _shift_rows

                        raise _shift_rows(exc, self.shown, before) from None
                before += len(chunk[0])
                yield out
        except _Null as null:
            raise InputError(missing_message(f"{self.shown}: ", self.columns[null.index])) \
                from None
        except engine.errors as exc:
            raise engine.failed(exc, "reading rows") from None

    # -- prepare: connect, check, decide pushdown or rows
    def prepare(self, domains, progress=None):
        if self.columns:
            self.check_dims(domains)
        engine = _ENGINES[self.engine_name](self._target, self.shown, self._options)
        engine.connect()
        self._engine = engine
        try:
            described = self._describe(engine)
            self.check_dims(domains)
            if self.dropna and not getattr(self, "_filtered", False):
                # the per-row filter, pushed down: rows with a NULL in a used column
                kept = " AND ".join(f"{quote_identifier(c)} IS NOT NULL" for c in self.columns)
                self._relation = f"(SELECT * FROM {self._relation} WHERE {kept}) AS pydp_notnull"
                self._filtered = True
            if self.scale is None and self.units is None and all(t is None or engine.is_integer(t)
                                          for t in described):
                prepared = _PushdownPrepared(self, engine, tuple(domains))
                if prepared.pushdown:
                    return prepared
                prepared.close(keep_engine=True)
            return _SqlRowPrepared(self, engine, domains, progress)
        except BaseException:
            engine.close()
            self._engine = None
            raise

    def _describe(self, engine):
        """Column names and types of the relation (no row is read)."""
        try:
            described = engine.describe(self._relation)
        except engine.errors as exc:
            what = f"table {self.table!r}" if self.table else "the query"
            raise InputError(f"{self.shown}: cannot read {what}: {_first_line(exc)}") from None
        names = [d[0] for d in described]
        if not self.columns:
            self.columns = tuple(names)
        types = []
        for c in self.columns:
            if c not in names:
                listing = ", ".join(names)
                where = f"table {self.table!r}" if self.table else "the query"
                raise InputError(f"{self.shown}: {where} has no column {c!r} (columns: "
                                 f"{listing[:200]})")
            if names.count(c) > 1:
                raise InputError(f"{self.shown}: the query returns column {c!r} more than once")
            types.append(described[names.index(c)][1])
        return types


class _SqlRowPrepared(Prepared):
    """Rows streamed and converted in Python (decimals, SQLite's other storage classes)."""

    def __init__(self, source, engine, domains, progress):
        from .base import _RowPrepared

        self._engine = engine
        self._inner = _RowPrepared(source, domains, progress)
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

    def __init__(self, source, engine, domains):
        self._source, self._engine, self._domains = source, engine, domains
        self._cols = [quote_identifier(c) for c in source.columns]
        self._rel = source._relation
        self._tmp = None
        self.pushdown = self._check()

    def _check(self):
        """One query: rows, NULLs, min, max (and SQLite's storage classes).  False when a
        SQLite column holds non-integers (they are converted in Python instead)."""
        engine, parts = self._engine, ["count(*)"]
        for col in self._cols:
            parts += [f"count({col})", f"min({col})", f"max({col})"]
            if engine.name == "sqlite":
                parts.append(f"sum(typeof({col}) NOT IN ('integer', 'null'))")
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
            if self.rows and (int(low) < lo or int(high) > hi):
                raise InputError(f"column {name!r} must lie in the domain [{lo}, {hi}]: some "
                                 f"value is outside it")
        return True

    def _cast(self, a):
        """Column a as the engine's 64-bit integer (the domain decides signedness)."""
        col, hi = self._cols[a], self._domains[a][1]
        if self._engine.name == "postgresql":
            return f"{col}::int8"
        if self._engine.name == "duckdb":
            return f"CAST({col} AS {'UBIGINT' if hi > _I64_MAX else 'BIGINT'})"
        return col

    def axis(self, a):
        return prefetch(self._axis(a))

    def _axis(self, a):
        engine, domain, name = self._engine, self._domains[a], self._source.columns[a]
        sql = (f"SELECT {self._cast(a)} AS v, count(*) AS n FROM {self._rel} "
               f"GROUP BY {self._cols[a]} ORDER BY {self._cols[a]}")
        try:
            for values, counts in engine.int_chunks(sql, 2, self._source.chunk_rows):
                yield (_column_offsets(values, domain, name),
                       np.ascontiguousarray(counts, dtype=np.int64))
        except engine.errors as exc:
            raise engine.failed(exc, f"aggregating column {name!r}") from None

    def cells(self, ends):
        if self._engine.name == "postgresql":
            return self._pg_cells(ends)
        if self._tmp is None:
            self._tmp = private_directory("pydp-source-")      # 0700, files 0600
        width = len(self._cols)
        sql = f"SELECT {', '.join(self._cast(a) for a in range(width))} FROM {self._rel}"
        engine = self._engine

        def chunks():
            try:
                yield from engine.int_chunks(sql, width, self._source.chunk_rows)
            except engine.errors as exc:
                raise engine.failed(exc, "reading the columns") from None

        return spilled_cells(self._tmp, chunks, ends, self._domains, self._source.columns,
                             self.rows)

    def _pg_cells(self, ends):
        """GROUP BY cell in PostgreSQL: a row's segment on axis a is the number of
        segment starts ``lo + end + 1`` at or below its value (``width_bucket``)."""
        width, names, params = len(self._cols), [], []
        for a, (lo, hi) in enumerate(self._domains):
            starts = [lo + int(e) + 1 for e in ends[a][:-1].tolist()]
            starts = [s for s in starts if s <= _I64_MAX]   # never at or below an int8
            params.append(starts)
            names.append(f"width_bucket({self._cols[a]}, %s::int8[])::int8" if starts
                         else "0::int8")
        params = [p for p in params if p]
        seg = ", ".join(f"{expr} AS s{a}" for a, expr in enumerate(names))
        keys = ", ".join(f"s{a}" for a in range(width))
        sql = (f"SELECT {keys}, count(*)::int8 FROM (SELECT {seg} FROM {self._rel}) AS cells "
               f"GROUP BY {keys}")
        engine = self._engine

        def chunks():
            try:
                for cols in engine.int_chunks(sql, width + 1, self._source.chunk_rows,
                                              params):
                    yield np.stack(cols[:width], axis=1), cols[width]
            except engine.errors as exc:
                raise engine.failed(exc, "counting the cells") from None

        return Cells(chunks)

    def close(self, keep_engine=False):
        if self._tmp is not None:
            import shutil

            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        if not keep_engine:
            self._engine.close()


def duckdb_files(paths, fmt, columns, *, scale=None, chunk_rows=CHUNK_ROWS, memory_limit=None,
                 threads=None, temp_directory=None, delimiter=None, units=None, dropna=False):
    """DuckDB reading CSV or Parquet files and aggregating them (``engine="duckdb"``).

    The files become ``read_parquet([...])`` or ``read_csv([...], header =
    true)`` in an in-memory DuckDB, then everything is as for a database
    table (:class:`SqlSource`): validation query, ``GROUP BY`` per axis,
    streamed cell columns.  CSV column types are DuckDB's sniffed ones.
    """
    files = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
    reader = "read_parquet" if fmt == "parquet" else "read_csv"
    extra = "" if fmt == "parquet" else ", header = true"
    if delimiter is not None and fmt == "csv":      # checked by files(): one safe character
        extra += ", delim = '" + delimiter.replace("'", "''") + "'"
    if not columns:
        raise InputError("name the columns to use (--columns a,b)")
    shown = f"duckdb reading {paths[0]}" + (f" and {len(paths) - 1} more" if len(paths) > 1
                                             else "")
    return SqlSource._over_files(f"{reader}({files}{extra}) AS pydp_files", shown, columns,
                                 scale, chunk_rows, dict(memory_limit=memory_limit,
                                                         threads=threads,
                                                         temp_directory=temp_directory),
                                 units, dropna)
