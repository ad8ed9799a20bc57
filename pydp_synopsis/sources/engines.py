"""The database connections behind :class:`~pydp_synopsis.sources.SqlSource`: SQLite,
DuckDB and PostgreSQL, each with the few calls the source needs, read-only.

How each engine is kept to one reading statement, under a timeout, with
errors that quote no data: :mod:`pydp_synopsis.readonly` and
docs/security-databases.md.

References
----------
.. [PG] PostgreSQL documentation, "COPY" (binary format), "Frontend/Backend
   Protocol" (extended query), "System Information Functions"
   (``has_table_privilege``).
.. [DUCK] DuckDB documentation, "Python DB API" (``fetch_record_batch``,
   ``extract_statements``, ``interrupt``), "Configuration" (``read_only``,
   ``enable_external_access``, ``lock_configuration``).
"""
import contextlib
import os
import sqlite3
import struct
import urllib.parse

import numpy as np

from ..errors import InputError, ParameterError
from ..readonly import (Deadline, SqliteDeadline, check_statement_timeout, database_error,
                        sqlite_one_select, sqlite_read_only)

__all__ = ["quote_identifier", "ENGINES", "Null"]


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


class _Engine:
    """One database connection: the few calls the source needs.

    Every statement runs under the statement timeout; every failure becomes
    :meth:`failed` (the operation and the error's class, never its text).
    """

    def __init__(self, target, shown, options):
        self.target, self.shown, self.options = target, shown, options
        self.timeout = check_statement_timeout(options.get("statement_timeout"))
        self.debug = bool(options.get("debug"))
        self.expired = False
        self.con = None

    def close(self):
        if self.con is not None:
            try:
                self.con.close()
            finally:
                self.con = None

    def failed(self, exc, what):
        """InputError for a failure while ``what``: the engine's class, never its
        message (which may quote a value)."""
        return database_error(self.shown, what, exc, debug=self.debug, timeout=self.timeout,
                              expired=self.expired or self.timed_out(exc))

    @staticmethod
    def timed_out(exc):
        return False

    @contextlib.contextmanager
    def deadline(self, interrupt):
        """The statement timeout around one statement (from its start to its last row)."""
        with Deadline(self.timeout, interrupt) as timer:
            try:
                yield
            except BaseException:
                self.expired = self.expired or timer.expired
                raise

    def check_query(self, sql):
        """InputError unless ``sql`` is one reading statement (the engine's parser decides)."""

    def check_role(self, table):
        """InputError if the connection could write (PostgreSQL roles)."""


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
            raise self.failed(exc, "opening") from None
        # mode=ro alone still lets VACUUM INTO and ATTACH create files
        self.con.set_authorizer(sqlite_read_only)
        self._deadline = SqliteDeadline(self.con, self.timeout)

    def _execute(self, sql, params=()):
        self._deadline.start()
        return self.con.execute(sql, params)

    @property
    def expired(self):
        return getattr(self, "_deadline", None) is not None and self._deadline.expired

    @expired.setter
    def expired(self, value):
        pass                # the progress handler knows

    def check_query(self, sql):
        self._deadline.start()
        try:
            sqlite_one_select(self.con, sql, self.shown)
        except sqlite3.Error as exc:
            raise self.failed(exc, "reading the query") from None

    def describe(self, relation):
        cur = self._execute(f"SELECT * FROM {relation} LIMIT 0")
        return [(d[0], None) for d in cur.description]

    @staticmethod
    def is_integer(type_code):
        return None     # dynamic types: the check query counts storage classes

    def one_row(self, sql, params=()):
        return self._execute(sql, params).fetchone()

    def int_chunks(self, sql, width, chunk_rows, params=()):
        cur = self._execute(sql, params)
        while True:
            rows = cur.fetchmany(chunk_rows)
            if not rows:
                return
            arr = np.array(rows, dtype=np.int64).reshape(len(rows), width)
            yield [arr[:, j] for j in range(width)]

    def row_chunks(self, sql, width, chunk_rows):
        cur = self._execute(sql)
        while True:
            rows = cur.fetchmany(chunk_rows)
            if not rows:
                return
            yield [_python_column([r[j] for r in rows], j) for j in range(width)]


class Null(Exception):
    """Column ``index`` of a row chunk holds a NULL."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


def _python_column(values, index):
    """A column of Python values (ints, floats, strings, Decimals) as a numpy array
    :func:`~pydp_synopsis.inputs.to_fixed_point` reads exactly; _Null for a NULL."""
    if None in values:
        raise Null(index)
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

        # a corrupt file may fail in the bindings (nanobind's RuntimeError) or in Arrow
        extra = ()
        try:
            import pyarrow as pa

            extra = (pa.ArrowException,)
        except ImportError:
            pass
        return (duckdb.Error, RuntimeError) + extra

    def connect(self):
        try:
            import duckdb
        except ImportError:
            raise InputError("DuckDB is not installed: pip install 'pydp-synopsis[duckdb]'") \
                from None
        config = {}
        files = self.options.get("files")
        if files is None:
            if not os.path.isfile(self.target):
                raise InputError(f"database file {self.target!r} does not exist")
            # the user's SQL may name other files or write them: neither is allowed.  First:
            # DuckDB refuses a temp_directory set before it ("Modifying the temp_directory
            # has been disabled"), not one set after it.
            config["enable_external_access"] = False
        config["preserve_insertion_order"] = False
        for key in ("memory_limit", "threads", "temp_directory"):
            if self.options.get(key) is not None:
                config[key] = self.options[key]
        try:
            if files is None:
                self.con = duckdb.connect(self.target, read_only=True, config=config)
            else:
                self.con = duckdb.connect(":memory:", config=config)
            # no progress bar on stdout; then nothing may change the settings
            self.con.execute("SET enable_progress_bar = false")
            self.con.execute("SET lock_configuration = true")
        except self.errors as exc:
            raise self.failed(exc, "opening") from None

    def _one_select(self, sql, what):
        """Exactly one SELECT, by DuckDB's parser: every statement runs through here (DuckDB's
        ``execute`` would run each of several statements, CHECKPOINT included)."""
        import duckdb

        try:
            statements = self.con.extract_statements(sql)
        except self.errors as exc:
            raise self.failed(exc, what) from None
        if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
            found = ", ".join(st.type.name for st in statements) or "nothing"
            raise InputError(f"{self.shown}: sql= must be one SELECT statement (DuckDB's parser "
                             f"found: {found})")

    def check_query(self, sql):
        self._one_select(sql, "parsing the query")

    def describe(self, relation):
        sql = f"SELECT * FROM {relation} LIMIT 0"
        self._one_select(sql, "parsing the query")
        with self.deadline(self.con.interrupt):
            rel = self.con.sql(sql)
            return list(zip(rel.columns, [str(t) for t in rel.types]))

    @staticmethod
    def is_integer(type_code):
        return type_code.upper() in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
                                     "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")

    @staticmethod
    def timed_out(exc):
        import duckdb

        return isinstance(exc, duckdb.InterruptException)

    def one_row(self, sql, params=()):
        self._one_select(sql, "parsing the query")
        with self.deadline(self.con.interrupt):
            return self.con.execute(sql, list(params)).fetchall()[0]

    def _batches(self, sql, chunk_rows):
        self._one_select(sql, "parsing the query")
        # one cursor per stream: an abandoned stream never blocks the next query
        cursor = self.con.cursor()
        try:
            with self.deadline(cursor.interrupt):
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
                    raise Null(j)
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
    """Every statement through the extended query protocol (one statement per Parse),
    in one READ ONLY REPEATABLE READ transaction of a session whose default is read-only,
    with ``statement_timeout`` set by the server and enforced by a client-side cancel
    (a query may reset the setting with ``set_config``, not the timer)."""

    name = "postgresql"

    @property
    def errors(self):
        import psycopg

        return (psycopg.Error,)

    def connect(self):
        try:
            import psycopg
            from psycopg.conninfo import conninfo_to_dict
        except ImportError:
            raise InputError("psycopg is not installed: pip install "
                             "'pydp-synopsis[postgresql]'") from None
        try:
            given = conninfo_to_dict(self.target).get("options") or ""
            options = (f"{given} -c default_transaction_read_only=on "
                       f"-c statement_timeout={max(1, round(self.timeout * 1000))}").strip()
            self.con = psycopg.connect(self.target, connect_timeout=10, options=options)
            self.con.read_only = True
            self.con.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        except psycopg.Error as exc:
            raise self.failed(exc, "connecting") from None

    @staticmethod
    def timed_out(exc):
        import psycopg

        return isinstance(exc, psycopg.errors.QueryCanceled)

    def _cancel(self):
        self.con.cancel_safe(timeout=10)

    def _execute(self, cur, sql, params=None):
        # prepare=True: Parse/Bind/Execute, so the server refuses a second statement
        with self.deadline(self._cancel):
            cur.execute(sql, params or None, prepare=True)

    def check_role(self, table):
        """Refuse a superuser, or a role that may write the table (any table for ``--sql``),
        unless ``allow_writable_role``."""
        if self.options.get("allow_writable_role"):
            return
        try:
            superuser, writable = self._privileges(table)
        except self.errors as exc:
            raise self.failed(exc, "checking the role's privileges") from None
        if superuser or writable:
            what = ("a superuser" if superuser else
                    f"a role that may write table {table!r}" if table is not None else
                    "a role that may write tables of this database")
            raise InputError(f"{self.shown}: refused to read as {what}: connect as a role that "
                             f"may only read (GRANT SELECT), or pass allow_writable_role=True")

    def _privileges(self, table):
        """(superuser, may write ``table`` -- or any table when None)."""
        with self.con.cursor() as cur:
            self._execute(cur, "SELECT current_setting('is_superuser') = 'on'")
            superuser = cur.fetchone()[0]
            if table is not None:
                self._execute(cur, "SELECT has_table_privilege(r, 'INSERT, UPDATE, DELETE, "
                              "TRUNCATE') OR has_any_column_privilege(r, 'INSERT, UPDATE') "
                              "FROM (SELECT to_regclass(%s) AS r) AS t", [quote_identifier(table)])
            else:
                self._execute(cur, "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n "
                              "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p', 'v', "
                              "'m', 'f') AND n.nspname NOT IN ('pg_catalog', "
                              "'information_schema') AND n.nspname NOT LIKE 'pg\\_%%' AND "
                              "(has_table_privilege(c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE') "
                              "OR has_any_column_privilege(c.oid, 'INSERT, UPDATE')))", [])
            return superuser, bool(cur.fetchone()[0])     # NULL: no such table (describe says)

    def describe(self, relation):
        with self.con.cursor() as cur:
            self._execute(cur, f"SELECT * FROM {relation} LIMIT 0")
            return [(d.name, d.type_code) for d in cur.description]

    @staticmethod
    def is_integer(type_code):
        return type_code in _PG_INTEGERS

    def one_row(self, sql, params=()):
        with self.con.cursor() as cur:
            self._execute(cur, sql, params)
            return cur.fetchone()

    def _one_statement(self, sql):
        """psycopg sends COPY by the simple query protocol, which runs several statements:
        the server's parser checks the exact text first (Parse of the unnamed statement,
        nothing executed)."""
        import psycopg
        from psycopg import pq

        with self.con.lock:
            result = self.con.pgconn.prepare(b"", sql.encode(self.con.info.encoding))
        if result.status != pq.ExecStatus.COMMAND_OK:
            raise psycopg.errors.error_from_result(result, encoding=self.con.info.encoding)

    def int_chunks(self, sql, width, chunk_rows, params=()):
        """All-int8 results by binary COPY, parsed by numpy (no Python object per value).

        The binary format: a 19-byte header (plus an extension area), then per
        row an int16 field count and per field an int32 length and the value
        (big-endian), then the int16 trailer -1.
        """
        import psycopg

        row = 2 + 12 * width
        dtype = np.dtype([("n", ">i2")] + [pair for j in range(width)
                                           for pair in ((f"l{j}", ">i4"), (f"v{j}", ">i8"))])
        statement = f"COPY ({sql}) TO STDOUT (FORMAT BINARY)"
        if params:
            statement = psycopg.ClientCursor(self.con).mogrify(statement, params)
        self._one_statement(statement)
        with self.deadline(self._cancel), self.con.cursor() as cur, \
                cur.copy(statement) as copy:
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
        with self.deadline(self._cancel), self.con.cursor(name="pydp_rows") as cur:
            cur.itersize = chunk_rows
            cur.execute(sql)        # DECLARE: always the extended protocol
            while True:
                rows = cur.fetchmany(chunk_rows)
                if not rows:
                    return
                yield [_python_column([r[j] for r in rows], j) for j in range(width)]


#: The engine class of each ``parse_database`` engine name.
ENGINES = {"sqlite": _SQLite, "duckdb": _DuckDB, "postgresql": _Postgres}
