"""File sources: CSV and Parquet files (one file, a glob, a directory), read in chunks.

Readers: pyarrow's streaming readers (``pyarrow.csv.open_csv``,
``pyarrow.parquet.ParquetFile.iter_batches``; the optional extra
``pip install 'pydp-synopsis[parquet]'``), chunk by chunk, so memory does
not grow with the file.  Without pyarrow a CSV file is read whole by
:func:`pydp_synopsis.inputs.read_columns` (memory O(rows)).  ``.npy`` files
are memory-mapped and ``.npz`` members streamed, in chunks, after their
headers' sizes are checked against the file (:mod:`pydp_synopsis.npyfiles`).
``engine="duckdb"`` (:func:`duckdb_files`) lets DuckDB read and aggregate
the files instead (:mod:`pydp_synopsis.sources.sql`).

Every value becomes an exact integer as in :mod:`pydp_synopsis.inputs`:
integer columns as they are, decimals (strings, doubles) only with
``scale=10**k``, rounded half to even on their exact value.  Errors name the
file and the column, never a value nor a row number (docs/security-messages.md).

References
----------
.. [ARROW] Apache Arrow, ``pyarrow.csv.open_csv`` and
   ``pyarrow.parquet.ParquetFile.iter_batches`` (streaming readers).
"""
import glob
import os
import re

import numpy as np

from ..errors import InputError
from ..inputs import csv_header, parse_scale, read_columns, to_fixed_point
from ..npyfiles import npy_array, npy_chunks, npy_column_indices, npz_chunks
from ..units import convert_chunk, missing_mask, missing_message, needs_conversion
from .base import CHUNK_ROWS, ArraySource, RowSource, column_offsets
from .sql import duckdb_files

__all__ = ["FORMATS", "expand_paths", "CsvSource", "ParquetSource", "files"]

#: File formats by extension.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy", ".npz": "npz"}
_GLOB = re.compile(r"[*?\[]")
_I64_MAX = (1 << 63) - 1


def expand_paths(spec):
    """The input files of ``spec`` and their format, without opening any of them.

    Parameters
    ----------
    spec : str, os.PathLike, or a sequence of them
        A file, a glob (``data/*.parquet``, ``**`` recursive), or a
        directory (every file of a known format below it, hidden files and
        names starting with ``_`` skipped, as Spark and Hive write them).

    Returns
    -------
    (list of str, str)
        Sorted paths and the format (``"csv"``, ``"parquet"``, ``"npy"``,
        ``"npz"``).

    Raises
    ------
    InputError
        Nothing matches, a format is unknown, or the files mix formats.

    Examples
    --------
    >>> expand_paths("no/such/*.csv")
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.InputError: no input file matches 'no/such/*.csv'
    """
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    paths = []
    for item in specs:
        item = os.fspath(item)
        if os.path.isdir(item):
            found = []
            for root, dirs, names in os.walk(item):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                found += [os.path.join(root, n) for n in names
                          if not n.startswith((".", "_")) and _format(n) is not None]
            if not found:
                raise InputError(f"directory {item!r} holds no .csv, .parquet, .npy or .npz file")
            paths += sorted(found)
        elif _GLOB.search(item):
            found = sorted(p for p in glob.glob(item, recursive=True) if not os.path.isdir(p))
            if not found:
                raise InputError(f"no input file matches {item!r}")
            paths += found
        elif os.path.exists(item):
            paths.append(item)
        else:
            raise InputError(f"input file {item!r} does not exist")
    formats = {_format(p) for p in paths}
    if None in formats:
        bad = next(p for p in paths if _format(p) is None)
        raise InputError(f"{bad}: unknown input format (use .csv, .parquet, .npy or .npz)")
    if len(formats) != 1:
        raise InputError(f"the input files mix formats ({', '.join(sorted(formats))}): "
                         "give one format at a time")
    return paths, formats.pop()


def _format(path):
    return FORMATS.get(os.path.splitext(path)[1].lower())


def _arrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _column_type(domain):
    """The integer type a column is parsed as: uint64 only for domains above int64."""
    import pyarrow as pa

    return pa.uint64() if domain[1] > _I64_MAX else pa.int64()


def in_file(exc, path):
    """``exc``'s message (the column and the rule) prefixed by the file it is about."""
    return InputError(f"{path}: {exc}")


def _exact(values, scale, column, path, clip=None):
    """Integers of a chunk of one column (to_fixed_point), errors naming the file."""
    try:
        return to_fixed_point(values, scale, column, clip)
    except InputError as exc:
        raise in_file(exc, path) from None


class _FileSource(RowSource):
    """Shared by the file sources: paths, columns, scale."""

    def __init__(self, paths, columns, scale=None, chunk_rows=CHUNK_ROWS, units=None,
                 dropna=False):
        self.paths = list(paths)
        self.columns = tuple(columns)
        if not self.columns:
            raise InputError("name the columns to use (columns=['a', 'b'])")
        parse_scale(scale)                      # a bad scale is refused before reading
        self.scale = scale
        # units: one Column per column (dates, decimals, ...); dropna: drop rows
        # with a missing value in any column (a per-row filter)
        self.units = tuple(units) if needs_conversion(units) else None
        if self.units is not None and len(self.units) != len(self.columns):
            raise InputError("units= must describe every column")
        self.dropna = bool(dropna)
        self.chunk_rows = int(chunk_rows)
        self._domains = None

    def prepare(self, domains, progress=None, clip=False):
        self.check_dims(domains)
        self._domains = tuple(domains)
        self.check()
        return super().prepare(domains, progress, clip)

    def check(self):
        """Check every file's columns (its header or schema) before reading data."""


class CsvSource(_FileSource):
    """CSV files with a header row, streamed by ``pyarrow.csv.open_csv``.

    Strict as :func:`pydp_synopsis.inputs.read_columns`: every named column
    present once in every file's header, every row with as many fields as
    the header (errors name the file, never the row); a UTF-8 byte order
    mark, CRLF line ends and blank lines are tolerated; nothing is a comment.

    Parameters
    ----------
    paths : sequence of str
        As returned by :func:`expand_paths`.
    columns : sequence of str
        The columns to read, in axis order.
    scale : str or number, optional
        Fixed-point scale (a power of ten) for decimal columns.
    chunk_rows : int
        Rows per chunk (pyarrow's block size adapts to it).
    delimiter : str
        The one-character field separator (default ``","``).
    """

    def __init__(self, paths, columns, scale=None, chunk_rows=CHUNK_ROWS, units=None,
                 dropna=False, delimiter=","):
        super().__init__(paths, columns, scale=scale, chunk_rows=chunk_rows, units=units,
                         dropna=dropna)
        self.delimiter = check_delimiter(delimiter)

    #: parsing text costs more than storing 8 bytes a value: the cells read a spill
    spill_offsets = True

    def check(self):
        for path in self.paths:
            header = csv_header(path, self.delimiter)
            for c in self.columns:
                if c not in header:
                    names = ", ".join(header)
                    raise InputError(f"{path}: no column {c!r} in the header (columns: "
                                     f"{names[:200]}{'...' if len(names) > 200 else ''})")
                if header.count(c) > 1:
                    raise InputError(f"{path}: the header names column {c!r} more than once")

    def chunks(self):
        for path in self.paths:
            yield from self._file_chunks(path)

    def _file_chunks(self, path):
        import pyarrow as pa

        text = {c: pa.string() for c in self.columns}
        if self.units is not None or self.dropna:   # user units, missing values: as text
            for cols, _ in self._batches(path, text, nulls=True):
                out, _ = convert_chunk(cols, self.units, self.columns, dropna=self.dropna,
                                       where=f"{path}: ", scale=self.scale,
                                       clip=self._clip_bounds)
                yield out
            return
        if self.scale is not None:      # decimals: parsed exactly from their digits
            for cols, _ in self._batches(path, text):
                yield [_exact(col, self.scale, name, path, self.clip_bounds(a))
                       for a, (col, name) in enumerate(zip(cols, self.columns))]
            return
        types = {c: _column_type(d) for c, d in zip(self.columns, self._domains)}
        done = 0
        try:
            for cols, n in self._batches(path, types):
                yield cols
                done += n
        except _Conversion:
            if self._clip_bounds is None:
                self._diagnose(path, text)
            # clip: a value beyond the 64-bit type is clipped too; the rows not yet
            # yielded are read again as text and converted exactly
            before = 0
            for cols, n in self._batches(path, text):
                skip = min(max(done - before, 0), n)
                if skip < n:
                    yield [_exact(col[skip:], None, name, path, self.clip_bounds(a))
                           for a, (col, name) in enumerate(zip(cols, self.columns))]
                before += n

    def _diagnose(self, path, text):
        """A value is no integer of its column's type: find it, reading the file as text,
        and raise the error naming its column (never the value nor its row)."""
        for cols, _ in self._batches(path, text):
            for col, name, dom in zip(cols, self.columns, self._domains):
                if missing_mask(col).any():          # NA, NaN: the missing-value message
                    raise InputError(missing_message(f"{path}: ", name))
                exact = _exact(col, None, name, path)
                column_offsets(exact, dom, name)
        raise InputError(f"{path}: a column is not readable as integers")

    def _batches(self, path, types, nulls=False):
        """``(columns, rows)`` per batch; NULL (empty) fields (unless ``nulls``: left
        as None for the caller) and ragged rows refused."""
        import pyarrow as pa
        import pyarrow.csv as pacsv

        read = pacsv.ReadOptions(block_size=max(1 << 16, self.chunk_rows * 16))
        convert = pacsv.ConvertOptions(include_columns=list(self.columns), column_types=types,
                                       strings_can_be_null=True)
        parse = pacsv.ParseOptions(delimiter=self.delimiter)
        try:
            reader = pacsv.open_csv(path, read_options=read, parse_options=parse,
                                    convert_options=convert)
            for batch in reader:
                cols = [batch.column(name) for name in self.columns]
                held = [a for a, col in enumerate(cols) if col.null_count and not nulls]
                if held:            # the first column holding one (never its row)
                    raise InputError(missing_message(f"{path}: ", self.columns[held[0]]))
                yield [c.to_numpy(zero_copy_only=False) for c in cols], batch.num_rows
        except pa.ArrowInvalid as exc:
            text = str(exc)
            if "invalid UTF8" in text:
                raise _not_utf8(path) from None
            if "conversion error" in text:
                raise _Conversion() from None
            if "parse error" in text or "Expected" in text:
                raise InputError(f"{path}: a row has a different number of fields than the "
                                 f"header") from None
            raise InputError(f"{path}: not a readable CSV file ({type(exc).__name__})") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") \
                from None


def _not_utf8(path):
    """The error for a data row that is not UTF-8 text: neither its bytes nor its number
    (a row's position is data too)."""
    return InputError(f"{path}: a data row is not UTF-8 text")


class _Conversion(Exception):
    """pyarrow could not parse a column as its integer type."""


def check_delimiter(delimiter):
    r"""A CSV field separator: one character, not a quote, a line end or a digit.

    Examples
    --------
    >>> check_delimiter(";"), check_delimiter("\\t"), check_delimiter("tab")
    (';', '\t', '\t')
    """
    if delimiter in ("\\t", "tab"):
        delimiter = "\t"
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\r\n" \
            or delimiter.isalnum() or delimiter in ".-+":
        raise InputError(f"delimiter= must be one character such as ',' ';' '|' or tab, "
                         f"got {delimiter!r}")
    return delimiter




class ParquetSource(_FileSource):
    """Parquet files, streamed by ``pyarrow.parquet.ParquetFile.iter_batches``.

    Integer columns are read as they are; doubles and decimals need
    ``scale`` unless every value is integral (converted from their exact
    value); strings are parsed as decimals.  NULLs are refused.
    """

    def check(self):
        import pyarrow as pa

        for path in self.paths:
            schema = self._file(path).schema_arrow
            for c in self.columns:
                if schema.get_field_index(c) < 0:
                    names = ", ".join(schema.names)
                    raise InputError(f"{path}: no column {c!r} (columns: {names[:200]})")
                t = schema.field(c).type
                if pa.types.is_temporal(t):
                    unit = self.units[self.columns.index(c)] if self.units else None
                    if unit is None or unit.kind not in ("date", "datetime"):
                        raise InputError(f"{path}: column {c!r} holds dates or times ({t}): "
                                         f"give its domain as dates (e.g. ('2001-01-01', "
                                         f"'2001-12-31')) or times, or resolution= (e.g. "
                                         f"'1h')")
                    continue
                if not (pa.types.is_integer(t) or pa.types.is_floating(t) or
                        pa.types.is_decimal(t) or pa.types.is_string(t) or
                        pa.types.is_large_string(t)):
                    raise InputError(f"{path}: column {c!r} has type {t}, not a number")

    @staticmethod
    def _file(path):
        import pyarrow.parquet as pq

        try:
            # no pre-buffering: pyarrow would otherwise hold whole row groups
            # of every column read (hundreds of MB), not one batch
            return pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or 'not a Parquet file'})") \
                from None
        except Exception as exc:   # pyarrow.ArrowInvalid and friends: not a Parquet file
            raise InputError(f"{path}: not a Parquet file ({type(exc).__name__})") from None

    def chunks(self):
        import pyarrow as pa

        for path in self.paths:
            for batch in self._file(path).iter_batches(batch_size=self.chunk_rows,
                                                       columns=list(self.columns)):
                if self.units is not None or self.dropna:
                    raw, utc = [], []
                    for name in self.columns:
                        col = batch.column(name)
                        if pa.types.is_decimal(col.type):
                            col = col.cast(pa.string())
                        utc.append(pa.types.is_timestamp(col.type) and col.type.tz is not None)
                        raw.append(col.to_numpy(zero_copy_only=False))
                    out, _ = convert_chunk(raw, self.units, self.columns, dropna=self.dropna,
                                           where=f"{path}: ", scale=self.scale,
                                           utc=utc, clip=self._clip_bounds)
                    yield out
                    continue
                cols = []
                for a, name in enumerate(self.columns):
                    col = batch.column(name)
                    if col.null_count:
                        raise InputError(missing_message(f"{path}: ", name))
                    if pa.types.is_floating(col.type):
                        if np.isnan(col.to_numpy(zero_copy_only=False)).any():   # NaN: missing
                            raise InputError(missing_message(f"{path}: ", name))
                    if pa.types.is_integer(col.type) and self.scale is None:
                        cols.append(col.to_numpy())
                        continue
                    if pa.types.is_decimal(col.type):
                        col = col.cast(pa.string())
                    values = col.to_numpy(zero_copy_only=False)
                    cols.append(_exact(values, self.scale, name, path, self.clip_bounds(a)))
                yield cols


def files(spec, columns, *, scale=None, engine="local", chunk_rows=CHUNK_ROWS, delimiter=None,
          units=None, dropna=False, **options):
    """A :class:`~pydp_synopsis.sources.Source` over files: CSV, Parquet, ``.npy``, ``.npz``.

    Parameters
    ----------
    spec : str or sequence of str
        A file, a glob or a directory (:func:`expand_paths`); nothing is
        opened here.
    columns : sequence of str
        Column names in axis order (array names for ``.npz``, indices for a
        2-D ``.npy``; a 1-D ``.npy`` is its one column).
    scale : str or number, optional
        Fixed-point scale for decimals (``"1e6"``).
    engine : {"local", "duckdb"}
        ``"local"``: pyarrow's streaming readers in this process;
        ``"duckdb"``: DuckDB reads and aggregates the CSV or Parquet files
        (:func:`pydp_synopsis.sources.sql.duckdb_files`).
    chunk_rows : int
        Rows per chunk.
    delimiter : str, optional
        CSV field separator, one character (default ``","``; ``"tab"`` or
        ``"\\t"`` for tabs).
    units : sequence of Column, optional
        One :class:`~pydp_synopsis.units.Column` per column: dates (ISO
        strings in CSV, Parquet ``date32``/``timestamp``), datetimes,
        decimals, converted exactly (:mod:`pydp_synopsis.units`).
    dropna : bool
        Drop every row with a missing value (empty, ``NA``, ``NaN``, null)
        in a used column: a per-row filter.  False: one is refused, naming
        its column.
    **options
        For ``engine="duckdb"``: ``memory_limit``, ``threads``,
        ``temp_directory`` and ``plan`` (as for
        :class:`~pydp_synopsis.sources.SqlSource`).

    Returns
    -------
    Source

    Examples
    --------
    >>> src = files("no/such/dir/", ["x"])
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.InputError: input file 'no/such/dir/' does not exist
    """
    paths, fmt = expand_paths(spec)
    columns = [c.strip() for c in columns if c.strip()] if columns else []
    if delimiter is not None:
        delimiter = check_delimiter(delimiter)
        if fmt != "csv":
            raise InputError(f"delimiter= applies to CSV files, not .{fmt}")
    if engine == "duckdb":
        if fmt not in ("csv", "parquet"):
            raise InputError(f"engine duckdb reads .csv and .parquet files, not .{fmt}")
        if delimiter is not None:
            options["delimiter"] = delimiter
        return duckdb_files(paths, fmt, columns, scale=scale, chunk_rows=chunk_rows,
                            units=units, dropna=dropna, **options)
    if engine != "local":
        raise InputError(f"engine {engine!r} does not read files here (local or duckdb)")
    if fmt == "csv" and _arrow():
        return CsvSource(paths, columns, scale=scale, chunk_rows=chunk_rows, units=units,
                         dropna=dropna, delimiter=delimiter or ",")
    if fmt == "parquet" and _arrow():
        return ParquetSource(paths, columns, scale=scale, chunk_rows=chunk_rows, units=units,
                             dropna=dropna)
    if delimiter not in (None, ","):
        raise InputError("delimiter= needs pyarrow (pip install 'pydp-synopsis[parquet]') "
                         "or engine='duckdb'")
    if fmt == "parquet":
        raise InputError("reading Parquet needs pyarrow: pip install 'pydp-synopsis[parquet]'")
    if needs_conversion(units) or dropna:
        raise InputError(f"dates, decimals with units and dropna=True read .csv and .parquet "
                         f"files (with pyarrow), not .{fmt}")
    return _WholeFiles(paths, columns, scale, fmt, chunk_rows)


class _WholeFiles(RowSource):
    """``.npy`` (memory-mapped) and ``.npz`` (members streamed) files in chunks, their
    declared sizes checked first (:mod:`pydp_synopsis.npyfiles`); CSV without pyarrow
    read one whole file at a time."""

    def __init__(self, paths, columns, scale, fmt, chunk_rows):
        self.paths, self.scale, self.fmt, self.chunk_rows = paths, scale, fmt, chunk_rows
        parse_scale(scale)
        if not columns and fmt != "npy":
            raise InputError("name the columns to use (columns=['a', 'b'])")
        self._names = list(columns)
        if not columns:     # a .npy file: its columns, from its header only
            arr = npy_array(paths[0])
            columns = [str(i) for i in npy_column_indices(arr, [], paths[0])]
        self.columns = tuple(columns)

    def chunks(self):
        for path in self.paths:
            if self.fmt == "csv":
                cols = read_columns(path, self._names, scale=self.scale, clip=self._clip_bounds)
                yield from ArraySource(cols, names=self.columns,
                                       chunk_rows=self.chunk_rows).chunks()
                continue
            raw = npy_chunks(path, self.columns, self.chunk_rows) if self.fmt == "npy" else \
                npz_chunks(path, self.columns, self.chunk_rows)
            for block in raw:
                yield [_exact(col, self.scale, name, path, self.clip_bounds(a))
                       for a, (col, name) in enumerate(zip(block, self.columns))]
