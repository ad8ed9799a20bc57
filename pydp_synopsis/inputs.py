"""Reading integer columns exactly: the conversions every source uses, and whole-file reads.

The streaming readers (files, databases, clusters) are in
:mod:`pydp_synopsis.sources`; they convert values with :func:`to_fixed_point`
and guard databases with :mod:`pydp_synopsis.readonly`.  :func:`read_columns`
reads a whole file (or a SQLite query) into memory.

The synopses take integers.  This module turns a user's table into int64
columns without floating-point surprises:

- CSV (numpy's C parser), ``.npy``, ``.npz`` (headers and sizes checked
  before reading, :mod:`pydp_synopsis.npyfiles`), Parquet (needs the optional
  ``pyarrow``), or a SQL query on a SQLite database (standard library,
  opened read-only);
- ``scale=10**k`` turns decimals into integers *exactly*: a decimal string
  ``"12.3456785"`` with ``scale=10**6`` becomes ``12345678`` or ``12345679``
  by rounding to the nearest integer, **ties to even** (12345678 here),
  computed on the digits themselves, never through a float.  A binary
  floating-point input (a Parquet or SQL double, a float array) stands for
  its shortest decimal form (``repr``: the double nearest to ``"12.3456785"``
  is read as ``12.3456785``), rounded with the same rule -- the rule of every
  float in the package -- so a decimal column of at most 15 significant
  digits releases the same from CSV text as from a double-typed source;
- without ``scale``, a non-integer value is an error, never silently
  truncated.

All work is vectorised; only values whose rounding a float product cannot
decide (within one unit in the last place of a tie) are settled one by one
with exact rational arithmetic.
"""
import csv
import re
import warnings
import os
import sqlite3
import urllib.parse
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np

from .errors import InputError, ParameterError
from .npyfiles import read_npy, read_npz
from .params import dtype_name
from .readonly import (SqliteDeadline, check_statement_timeout, database_error, redact,
                       sqlite_one_select, sqlite_read_only, strip_query)

__all__ = ["csv_header", "parse_scale", "read_columns", "to_fixed_point", "clip_integers"]


def parse_scale(scale):
    """Exponent k of a fixed-point scale 10**k (0 <= k <= 18), from '1e6', 1000000, ...

    Raises ParameterError for anything that is not a power of ten.
    """
    if scale is None:
        return 0
    try:
        d = Decimal(str(scale))
    except InvalidOperation:
        raise ParameterError(f"scale must be a power of ten such as 1e6, got {scale!r}") from None
    for k in range(19):
        if d == Decimal(10) ** k:
            return k
    raise ParameterError(f"scale must be a power of ten between 1 and 1e18, got {scale!r}")


def _decimal_strings_to_fixed(values, k, column, clip=None):
    """Exact round-half-even of decimal strings times 10**k, vectorised.  With ``clip``,
    values of more than 18 digits (after scaling) are converted one by one, exactly, and
    returned beside the others for :func:`clip_integers`."""
    s = np.char.strip(np.asarray(values, dtype=str))
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    if clip is not None:
        whole = np.char.partition(_unsigned(s), ".")[..., 0] if s.ndim == 1 else None
        long = np.char.str_len(whole) + k > 18
        if long.any():
            out = np.empty(s.shape, dtype=object)
            out[~long] = _decimal_strings_to_fixed(s[~long], k, column).astype(object)
            out[long] = [_exact_decimal(v, k, column) for v in s[long].tolist()]
            return out
    neg = np.char.startswith(s, "-")
    body = _unsigned(s)
    whole, dot, frac = np.char.partition(body, ".").T if body.ndim == 1 else (None, None, None)
    whole = np.where(whole == "", "0", whole)
    good = np.char.isdigit(whole) & ((frac == "") | np.char.isdigit(frac)) & ~((dot == ".") & (body == "."))
    good &= np.char.str_len(body) > 0
    if not good.all():
        raise InputError(f"column {column!r}: a value is not a decimal number "
                         f"(plain digits with an optional sign and point; no exponents)")
    if int(np.char.str_len(whole).max()) + k > 18:
        if k == 0 and not (dot == ".").any():
            return _long_integers(whole, neg, column)
        raise InputError(f"column {column!r}: a value is too large for int64 after scaling by 1e{k}")
    width = max(int(np.char.str_len(frac).max()), k + 1)
    digits = np.char.ljust(frac, width, "0")
    grid = np.frombuffer(digits.astype(f"U{width}").tobytes(), dtype="U1").reshape(-1, width)
    grid = grid.astype(np.int64)
    kept = grid[:, :k] @ (10 ** np.arange(k - 1, -1, -1, dtype=np.int64)) if k else np.zeros(len(s), np.int64)
    result = whole.astype(np.int64) * 10**k + kept
    first = grid[:, k]
    rest_nonzero = grid[:, k + 1:].any(axis=1) if width > k + 1 else np.zeros(len(s), bool)
    up = (first > 5) | ((first == 5) & (rest_nonzero | (result % 2 == 1)))
    result = result + up
    return np.where(neg, -result, result)


def _exact_decimal(text, k, column):
    """One decimal string times 10**k, rounded half to even, as a Python int."""
    if not _PLAIN_DECIMAL.fullmatch(text):
        raise InputError(f"column {column!r}: a value is not a decimal number "
                         f"(plain digits with an optional sign and point; no exponents)")
    whole, _, frac = text.lstrip("+-").partition(".")
    digits = int((whole or "0") + frac[:k].ljust(k, "0"))
    rest = frac[k:]
    if rest and (rest[0] > "5" or (rest[0] == "5" and (rest[1:].strip("0") or digits % 2))):
        digits += 1                         # half to even, on the digits themselves
    return -digits if text.startswith("-") else digits


_PLAIN_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")


_U64_MAX = "18446744073709551615"
_I64_NEG_MAX = "09223372036854775808"


def _long_integers(whole, neg, column):
    """Exact integers of up to 20 digits (the int64 and uint64 extremes), vectorised:
    digit strings padded to 20 compare like the numbers they write."""
    padded = np.char.rjust(whole, 20, "0")
    if (np.char.str_len(whole) > 20).any() or (padded > _U64_MAX).any() \
            or (neg & (padded > _I64_NEG_MAX)).any():
        raise InputError(f"column {column!r}: a value is outside [-2**63, 2**64 - 1]")
    grid = np.frombuffer(padded.astype("U20").tobytes(), dtype="U1").reshape(-1, 20).astype(np.uint64)
    mag = grid @ (np.uint64(10) ** np.arange(19, -1, -1, dtype=np.uint64))
    if not neg.any():
        return mag if (mag > np.uint64(2**63 - 1)).any() else mag.astype(np.int64)
    if not (mag[~neg] > np.uint64(2**63 - 1)).any():
        return np.where(neg, (0 - mag).view(np.int64), mag.view(np.int64))  # exact mod 2**64
    # negatives beside values above 2**63: only Python ints hold both
    return np.array([-int(m) if n else int(m) for m, n in zip(mag.tolist(), neg.tolist())], dtype=object)


def _floats_to_fixed(values, k, column):
    """Round-half-even of binary floats times 10**k, each float standing for its shortest
    decimal form (``repr``), exactly: the same integers as the decimal text it was
    parsed from whenever that text has at most 15 significant digits."""
    x = np.asarray(values, dtype=np.float64)
    if not np.isfinite(x).all():
        raise InputError(f"column {column!r} holds NaN or infinity")
    p = x * float(10**k)
    if np.abs(p).max(initial=0) >= 2.0**62:
        raise InputError(f"column {column!r}: a value is too large for int64 after scaling by 1e{k}")
    r = np.rint(p)
    # The float product is within one ulp of the exact one, and the shortest
    # decimal's product within about one more: only products that near a
    # half-integer can round the wrong way, so those are redone exactly.
    frac = np.abs(p - np.floor(p) - 0.5)
    doubtful = np.flatnonzero(frac <= 4 * np.spacing(np.abs(p)) + 1e-300)
    out = r.astype(np.int64)
    scale = 10**k
    for i in doubtful:  # rare: values within a few ulps of a tie
        # Fraction rounding is half-even; repr is the shortest decimal that reads back as x
        out[i] = round(Fraction(repr(float(x[i]))) * scale)
    return out


def to_fixed_point(values, scale=None, column="values", clip=None):
    """Integers from a column of numbers or numeric strings (see module docstring).

    Parameters
    ----------
    values : array_like
        Integers, floats or decimal strings.
    scale : None, str or number
        A power of ten; ``None`` means 1 and requires integer values.
    column : str
        Name used in error messages.
    clip : (int, int), optional
        Clip to these inclusive bounds (the column's domain on the integer
        grid) instead of refusing what does not fit: a value beyond int64
        (or uint64) after scaling, an infinity, becomes ``lo`` or ``hi`` by
        its sign, and every value is clipped to ``[lo, hi]`` (int64, or
        uint64 for a domain above 2**63).  NaN and non-numbers are still
        refused.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> to_fixed_point(["1.5", "2.5", "-0.0000015"], scale="1e6").tolist()
    [1500000, 2500000, -2]
    >>> to_fixed_point([3, 4]).tolist()
    [3, 4]
    >>> to_fixed_point(["-1e99".replace("e99", "0" * 99), "7", "1" * 30], clip=(0, 10)).tolist()
    [0, 7, 10]
    """
    if clip is None:
        return _to_fixed_point(values, scale, column, None)
    return clip_integers(_to_fixed_point(values, scale, column, clip), clip)


def clip_integers(ints, bounds):
    """``min(max(v, lo), hi)`` of integers (int64, uint64 or Python ints), as int64, or
    uint64 when ``hi`` is above 2**63 (then ``lo >= 0``)."""
    lo, hi = bounds
    arr = np.asarray(ints)
    dtype = np.uint64 if hi > _I64_MAX else np.int64
    if arr.dtype == object:
        return np.array([min(max(int(v), lo), hi) for v in arr.ravel().tolist()],
                        dtype=dtype).reshape(arr.shape)
    out = np.empty(arr.shape, dtype=dtype)
    below, above = arr < lo, arr > hi        # numpy compares with Python ints exactly
    inside = ~(below | above)
    out[inside] = arr[inside]
    out[below], out[above] = lo, hi
    return out


_I64_MAX = (1 << 63) - 1


def _to_fixed_point(values, scale, column, clip):
    k = parse_scale(scale)
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            if k:
                if clip is None:
                    raise InputError(f"column {column!r}: values above 2**63 cannot be scaled")
                return _saturated(arr, arr > np.uint64(_I64_MAX),
                                  lambda x: x.astype(np.int64) * 10**k, clip)
            return arr
        out = arr.astype(np.int64)
        if k:
            lim = np.iinfo(np.int64).max // 10**k
            if arr.size and np.abs(out).max() > lim:
                if clip is None:
                    raise InputError(f"column {column!r}: a value is too large for int64 after "
                                     f"scaling by 1e{k}")
                return _saturated(out, (out > lim) | (out < -lim), lambda x: x * 10**k, clip)
            out = out * 10**k
        return out
    if arr.dtype.kind == "b":
        raise InputError(f"column {column!r} is boolean, not numeric")
    if arr.dtype.kind == "f":
        if np.isnan(arr).any() or (clip is None and not np.isfinite(arr).all()):
            raise InputError(f"column {column!r} holds NaN or infinity")
        if not k:
            finite = np.isfinite(arr)
            if not (arr[finite] == np.rint(arr[finite])).all() or \
                    (clip is None and (np.abs(arr) >= 2.0**53).any()):
                raise InputError(f"column {column!r} holds non-integer numbers: give scale= "
                                 f"(e.g. 1e6) to turn decimals into integers exactly")
            if clip is not None:     # whole floats: exact below 2**63, saturated beyond
                return _saturated(arr, np.abs(arr) >= 2.0**63, lambda x: x.astype(np.int64),
                                  clip)
            return arr.astype(np.int64)
        if clip is not None:
            p = np.abs(arr) * float(10**k)
            return _saturated(arr, ~(p < 2.0**62), lambda x: _floats_to_fixed(x, k, column),
                              clip)
        return _floats_to_fixed(arr, k, column)
    if arr.dtype.kind in "UO":
        strings = arr.astype(str)
        if not k:
            try:
                return _decimal_strings_to_fixed(strings, 0, column, clip) \
                    if _all_integers(strings) else _raise_non_integer(column, strings)
            except ValueError as exc:
                raise InputError(str(exc)) from None
        return _decimal_strings_to_fixed(strings, k, column, clip)
    raise InputError(f"column {column!r} has unsupported type {dtype_name(arr.dtype)}")


def _saturated(values, big, convert, clip):
    """``convert`` of the values that fit; ``lo`` / ``hi`` (by sign) for those marked ``big``.
    Returns an array that :func:`clip_integers` takes."""
    lo, hi = clip
    values = np.asarray(values)
    out = np.empty(values.shape, dtype=object)
    out[~big] = np.asarray(convert(values[~big])).astype(object)
    out[big & (values > 0)] = hi
    out[big & ~(values > 0)] = lo
    return out


def _unsigned(s):
    """``s`` without one leading sign ("--5" keeps a "-" and is then no number)."""
    neg, pos = np.char.startswith(s, "-"), np.char.startswith(s, "+")
    return np.where(neg, np.char.partition(s, "-")[..., 2],
                    np.where(pos, np.char.partition(s, "+")[..., 2], s))


def _all_integers(strings):
    return bool(np.char.isdigit(_unsigned(np.char.strip(strings))).all())


def _raise_non_integer(column, strings):
    s = _unsigned(np.char.strip(strings))
    i = int(np.flatnonzero(~np.char.isdigit(s))[0])
    try:
        Decimal(strings[i].strip())
        ok = True
    except InvalidOperation:
        ok = False
    # the column and the rule, never the row (its position is data) nor the value
    if ok:
        raise InputError(f"column {column!r} holds non-integer numbers: give scale= "
                         f"(e.g. 1e6) to turn decimals into integers exactly")
    raise InputError(f"column {column!r}: a value is not a number")


def csv_header(path, delimiter=","):
    """The header row's names (a UTF-8 byte order mark dropped).  Bytes that are not
    UTF-8 are kept undecoded (``surrogateescape``) while the header is parsed, so a
    data row that is not UTF-8 is no longer reported as the header: only the
    header's own fields are checked here.

    Raises
    ------
    InputError
        No header, a header that is not valid CSV or not UTF-8 text, or an
        unreadable file (errors name the file, never a value).
    """
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="surrogateescape") as fh:
            header = next(csv.reader(fh, delimiter=delimiter), None)
    except csv.Error as exc:
        raise InputError(f"{path}: the header row is not valid CSV ({exc})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    if not header:
        raise InputError(f"{path}: empty CSV file (a header row naming the columns is required)")
    try:
        "".join(header).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{path}: the header row is not UTF-8 text") from None
    return [h.strip() for h in header]


def _read_csv(path, columns):
    """Strict CSV: a header row naming distinct columns, every row with as many
    fields as the header (errors name the file and the column: never a value,
    nor a row number, which is data too).  Tolerated
    where the meaning is clear: a UTF-8 byte order mark, CRLF line ends,
    blank lines, a header with no rows (an empty table).  Nothing is a
    comment: a row starting with ``#`` is data (and not a number)."""
    header = csv_header(path)
    idx = []
    for c in columns:
        if c not in header:
            raise InputError(f"{path}: no column {c!r} (columns: {', '.join(header)})")
        if header.count(c) > 1:
            raise InputError(f"{path}: the header names column {c!r} more than once")
        idx.append(header.index(c))
    with open(path, newline="", encoding="utf-8-sig") as fh, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # blank lines, header-only files
        try:
            raw = np.loadtxt(fh, delimiter=",", skiprows=1, dtype=str, ndmin=2, quotechar='"',
                             comments=None)
        except UnicodeDecodeError:
            raise InputError(f"{path}: a data row is not UTF-8 text") from None
        except ValueError:
            raise InputError(f"{path}: a row has a different number of fields than the header "
                             f"({len(header)})") from None
    if raw.shape[0] == 0:
        return [np.zeros(0, dtype=np.int64) for _ in columns]
    if raw.shape[1] != len(header):
        raise InputError(f"{path}: the rows have {raw.shape[1]} fields but the header names "
                         f"{len(header)} columns")
    return [raw[:, j] for j in idx]


def _read_npz(path, columns):
    return read_npz(path, columns)


def _read_npy(path, columns):
    return read_npy(path, columns)


def _read_parquet(path, columns):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install 'pydp-synopsis[parquet]'") from None
    try:
        table = pq.read_table(path, columns=columns)
    except (KeyError, ValueError) as exc:
        raise InputError(f"{path}: {exc}") from None
    return [table.column(c).to_numpy(zero_copy_only=False) for c in columns]


def _read_sql(sql, database, columns, statement_timeout=None):
    """A query's columns from ``sqlite:///file.db``, read-only (:mod:`pydp_synopsis.readonly`):
    one SELECT by SQLite's parser, an authorizer that allows reading only, a timeout,
    and errors that name the SQLite error's class, never its text."""
    prefix = "sqlite:///"
    if not database or not database.startswith(prefix):
        raise InputError(f"database= must look like sqlite:///path/to/file.db, got "
                         f"{redact(database)!r}")
    timeout = check_statement_timeout(statement_timeout)
    sql = strip_query(sql)
    path = database[len(prefix):]
    if not os.path.isfile(path):
        raise InputError(f"database file {path!r} does not exist")
    conn = sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro", uri=True)
    # mode=ro alone still lets VACUUM INTO and ATTACH create files: only
    # reading statements are authorised.
    conn.set_authorizer(sqlite_read_only)
    deadline = SqliteDeadline(conn, timeout)
    try:
        deadline.start()
        names = sqlite_one_select(conn, sql, database)
        deadline.start()
        rows = conn.execute(f"SELECT * FROM (\n{sql}\n)").fetchall()
    except sqlite3.Error as exc:
        raise database_error(database, "reading the query", exc, timeout=timeout,
                             expired=deadline.expired) from None
    finally:
        conn.close()
    wanted = columns or names
    out = []
    for c in wanted:
        if c not in names:
            raise InputError(f"the query returns no column {c!r}")
        j = names.index(c)
        col = [r[j] for r in rows]
        if any(v is None for v in col):
            raise InputError(f"column {c!r} holds NULL values")
        kinds = {type(v) for v in col}
        if kinds <= {int}:
            out.append(np.array(col, dtype=np.int64) if col else np.zeros(0, np.int64))
        elif kinds <= {int, float}:
            out.append(np.array(col, dtype=np.float64))
        else:
            out.append(np.array([str(v) for v in col]))
    return out


def read_columns(path=None, columns=(), *, sql=None, database=None, scale=None, clip=None,
                 statement_timeout=None):
    """Read named columns as int64 arrays.

    Parameters
    ----------
    path : str, optional
        ``.csv`` (header row required), ``.npy``, ``.npz`` or ``.parquet``.
    columns : sequence of str
        Column names (array names for ``.npz``, indices for 2-D ``.npy``).
    sql, database : str, optional
        Instead of ``path``: one SELECT statement run on ``sqlite:///file.db``
        (read-only; :mod:`pydp_synopsis.readonly`).
    statement_timeout : float, optional
        Seconds the query may run (default 600).
    scale : optional
        Power of ten for fixed-point decimals (see :func:`to_fixed_point`).
    clip : sequence of (int, int), optional
        Per column, the bounds values are clipped to (see :func:`to_fixed_point`).

    Returns
    -------
    list of numpy.ndarray (int64, or uint64 for values above 2**63)

    Raises
    ------
    InputError
        Missing file or column, unreadable or non-numeric values.
    """
    columns = [c.strip() for c in columns if c.strip()]
    if sql is not None:
        raw = _read_sql(sql, database, columns, statement_timeout)
        names = columns or [str(i) for i in range(len(raw))]
    else:
        if path is None:
            raise InputError("give an input file (path) or a query (sql= with database=)")
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise InputError(f"input file {path!r} does not exist")
        ext = os.path.splitext(path)[1].lower()
        if ext != ".npy" and not columns:
            raise InputError("name the columns to use (columns=['a', 'b'])")
        readers = {".csv": _read_csv, ".npz": _read_npz, ".npy": _read_npy, ".parquet": _read_parquet}
        if ext not in readers:
            raise InputError(f"{path}: unknown input format {ext!r} (use .csv, .npy, .npz or .parquet)")
        try:
            raw = readers[ext](path, columns)
        except InputError:
            raise
        except (OSError, ValueError, EOFError) as exc:
            raise InputError(f"{path}: cannot read ({exc})") from None
        names = columns or [str(i) for i in range(len(raw))]
    clip = clip or [None] * len(raw)
    return [to_fixed_point(col, scale, name, bounds) for col, name, bounds in zip(raw, names, clip)]
