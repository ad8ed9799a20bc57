"""Read-only database access: one statement, a deadline, and errors that quote no data.

Every database path (:class:`~pydp_synopsis.sources.SqlSource` and
:func:`~pydp_synopsis.inputs.read_columns` with ``sql=``) goes through these
rules:

- **one reading statement, decided by the engine's own parser**: SQLite
  prepares the statement and CPython refuses a non-empty tail (the text after
  the first complete statement that SQLite's parser returns), while an
  authorizer denies every action but reading; DuckDB's
  ``extract_statements`` must return exactly one ``SELECT``; PostgreSQL
  receives every statement through the extended query protocol, whose Parse
  message refuses several commands;
- **a statement timeout** (:data:`DEFAULT_STATEMENT_TIMEOUT` seconds unless
  the caller gives one): a SQLite progress handler, a timer that interrupts
  DuckDB or cancels the PostgreSQL statement;
- **messages without data**: a database error becomes one line naming the
  operation and the error's class (:func:`database_error`), because the
  database's own text may quote a value (``Could not convert string
  'TOPSECRET'``) or a file (``pg_read_file``).  The text is added only with
  ``debug=True`` (``--debug``), whose output is unsafe to share;
- **no password in a message** (:func:`redact`).

References
----------
.. [SQLITE] SQLite C interface, "Compiling An SQL Statement" (``pzTail``) and
   "Compile-Time Authorization Callbacks"; "Query Progress Callbacks".
.. [PGPROTO] PostgreSQL documentation, "Frontend/Backend Protocol", Extended
   Query ("the query string contained in a Parse message cannot include more
   than one SQL statement").
"""
import math
import re
import sqlite3
import threading
import time
import urllib.parse

from .errors import InputError, ParameterError

__all__ = ["DEFAULT_STATEMENT_TIMEOUT", "check_statement_timeout", "redact", "database_error",
           "Deadline", "SqliteDeadline", "sqlite_read_only", "sqlite_one_select",
           "strip_query"]

#: Seconds one statement may run (from its start to its last row) unless the caller says.
DEFAULT_STATEMENT_TIMEOUT = 600.0
_MAX_STATEMENT_TIMEOUT = 7 * 86400.0
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?")

_READ_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                           getattr(sqlite3, "SQLITE_RECURSIVE", 33)})


def sqlite_read_only(action, arg1, arg2, database, trigger):
    """SQLite authorizer: SELECT, column reads, functions and recursive CTEs only
    (no PRAGMA, ATTACH, write, transaction or schema action)."""
    return sqlite3.SQLITE_OK if action in _READ_ACTIONS else sqlite3.SQLITE_DENY


def check_statement_timeout(seconds):
    """``seconds`` as a float in (0, 7 days]; None gives :data:`DEFAULT_STATEMENT_TIMEOUT`.

    Examples
    --------
    >>> check_statement_timeout(None)
    600.0
    >>> check_statement_timeout(0)
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.ParameterError: statement_timeout= must be seconds in (0, 604800], got 0
    """
    if seconds is None:
        return DEFAULT_STATEMENT_TIMEOUT
    if isinstance(seconds, bool):
        raise ParameterError(f"statement_timeout= must be a number of "
                             f"seconds, got {seconds!r}")
    if isinstance(seconds, str) and not _DECIMAL.fullmatch(seconds.strip()):
        raise ParameterError(f"statement_timeout= must be a number of "
                             f"seconds, got {seconds!r}")
    try:
        value = float(seconds)
    except (TypeError, ValueError):
        raise ParameterError(f"statement_timeout= must be a number of "
                             f"seconds, got {seconds!r}") from None
    if not (math.isfinite(value) and 0 < value <= _MAX_STATEMENT_TIMEOUT):
        raise ParameterError(f"statement_timeout= must be seconds in "
                             f"(0, {_MAX_STATEMENT_TIMEOUT:.0f}], got {seconds!r}")
    return value


_SECRET_KEYS = ("password", "passfile", "sslpassword", "sslkey")
_KEY_VALUE = re.compile(r"\b(" + "|".join(_SECRET_KEYS) + r")(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)",
                        re.IGNORECASE)


def redact(text):
    """``text`` with every password (``user:pw@``, ``?password=``, ``passfile=``, a
    conninfo's ``password=...``) replaced by ``***``.

    Examples
    --------
    >>> redact("postgresql://me:s3@db/x")
    'postgresql://me:***@db/x'
    >>> redact("postgresql://db/x?user=me&password=s3&passfile=/p")
    'postgresql://db/x?user=me&password=***&passfile=***'
    >>> redact("host=db password='a b' user=me")
    'host=db password=*** user=me'
    """
    text = str(text)
    masked = _KEY_VALUE.sub(lambda m: m.group(1) + m.group(2) + "***", text)
    if "://" in masked:
        try:
            parts = urllib.parse.urlsplit(masked)
            password = parts.password
        except ValueError:
            password = None
        if password is not None:
            netloc = parts.netloc.replace(f":{password}@", ":***@", 1)
            masked = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return masked


def strip_query(sql):
    """The user's query without surrounding blanks and trailing semicolons; checked
    non-empty (a ParameterError naming ``sql``/``--sql``)."""
    if not isinstance(sql, str) or not sql.strip() or "\0" in sql:
        raise ParameterError("sql= must be one SELECT statement")
    return sql.strip().rstrip(";").rstrip()


def database_error(shown, operation, exc, *, debug=False, timeout=None, expired=False):
    """InputError: ``shown``, the operation and the class of ``exc``; never its text
    unless ``debug``.  ``expired`` (or a cancellation): the statement timeout."""
    if expired:
        line = (f"{shown}: {operation}: the statement ran past the statement timeout of "
                f"{timeout:g} s (statement_timeout=)")
    else:
        line = (f"{shown}: the database failed while {operation} ({type(exc).__name__}; "
                f"debug=True shows its message, which may quote data)")
    if debug:
        text = " | ".join(s.strip() for s in str(exc).splitlines() if s.strip())
        line += f" [debug, unsafe to share: {redact(text)}]"
    return InputError(line)


class Deadline:
    """A timer that calls ``interrupt`` after ``seconds`` unless stopped first.

    ``with Deadline(30, con.interrupt) as d: ...``; ``d.expired`` tells whether it fired.
    """

    def __init__(self, seconds, interrupt):
        self.expired = False
        self._interrupt = interrupt
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self):
        self.expired = True
        try:
            self._interrupt()
        except Exception:       # the connection may already be closed: nothing to stop
            pass

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()


class SqliteDeadline:
    """A progress handler that aborts a SQLite statement past its deadline.

    :meth:`start` before each statement; SQLite calls the handler every 1000
    virtual-machine instructions, so even a recursive CTE that never returns
    a row stops (``sqlite3.OperationalError: interrupted``).
    """

    def __init__(self, con, seconds):
        self.seconds, self.expired = seconds, False
        self._deadline = math.inf
        con.set_progress_handler(self._tick, 1000)

    def start(self):
        self.expired = False
        self._deadline = time.monotonic() + self.seconds

    def _tick(self):
        if time.monotonic() > self._deadline:
            self.expired = True
            return 1
        return 0


def sqlite_one_select(con, sql, shown):
    """Compile ``sql`` alone (``EXPLAIN``) and as a subquery on ``con``: InputError unless
    SQLite's parser finds one statement and its authorizer only reading actions.

    Returns the result's column names (``LIMIT 0``: no row is read).  Other SQLite
    errors propagate."""
    denied = []

    def recording(action, *args):
        verdict = sqlite_read_only(action, *args)
        if verdict != sqlite3.SQLITE_OK:
            denied.append(action)
        return verdict

    con.set_authorizer(recording)
    try:
        # EXPLAIN compiles the first statement (the authorizer sees it) and lists its
        # program without running it; CPython refuses a tail
        con.execute(f"EXPLAIN {sql}").close()
        cur = con.execute(f"SELECT * FROM (\n{sql}\n) LIMIT 0")
    except sqlite3.ProgrammingError:
        # CPython refuses the tail SQLite's parser left after the first statement
        raise InputError(f"{shown}: sql= must be one SELECT statement (SQLite's parser "
                         f"found more than one)") from None
    except sqlite3.DatabaseError:
        if denied:
            raise InputError(f"{shown}: sql= may only read (SQLite's authorizer denied a "
                             f"non-reading action)") from None
        raise
    finally:
        con.set_authorizer(sqlite_read_only)
    return [d[0] for d in cur.description or []]
