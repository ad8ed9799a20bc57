"""Query files (``pydp-synopsis query --queries FILE``) read and answered in chunks.

A query file is a CSV table with a header naming ``lo,hi`` (one axis) or
``lo_0..lo_{c-1},hi_0..hi_{c-1}``; the command writes one line of answers per
query.  Holding a million queries as Python rows took 744 MB; here the file
is read ``QUERY_CHUNK_ROWS`` rows at a time and each chunk's answers are
written before the next is read, so memory is O(chunk) whatever the file's
length.  The output stays all-or-nothing: written through
:func:`~pydp_synopsis.persist.atomic_write`, or for standard output spooled
(in memory up to 16 MiB, then in a private temporary file) and copied out
only once every query was answered.
"""
import csv
import io
import itertools
import re
import sys
import tempfile

from .errors import InputError, SynopsisError, UsageError

__all__ = ["QUERY_CHUNK_ROWS", "query_chunks", "located", "spooled_stdout"]

#: Queries read, answered and written at a time.
QUERY_CHUNK_ROWS = 1 << 14
_SPOOL = 1 << 24
_INDEX = re.compile(r"\bindex (\d+)")


def located(exc, before):
    """``exc`` (raised on a chunk) with its ``index N`` counted from the file's first query.

    Examples
    --------
    >>> located(UsageError("lo must be <= hi, got lo > hi at index 3"), 100)
    UsageError('lo must be <= hi, got lo > hi at index 103')
    """
    text = _INDEX.sub(lambda m: f"index {int(m.group(1)) + before}", str(exc))
    return type(exc)(text) if isinstance(exc, SynopsisError) else UsageError(text)


def query_chunks(path, names, delimiter=",", chunk_rows=None):
    """The query file's rows in chunks of ``chunk_rows`` (default
    :data:`QUERY_CHUNK_ROWS`): ``(rows before, list of row dicts)``.

    The header is checked (every column of ``names`` present) when the first
    chunk is asked for, before any row is read.

    Raises
    ------
    UsageError
        A column of ``names`` is missing.
    InputError
        The file cannot be read, or is not UTF-8 text.
    """
    chunk_rows = QUERY_CHUNK_ROWS if chunk_rows is None else chunk_rows
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh, delimiter=delimiter)
            header = reader.fieldnames or []
            missing = [n for n in names if n not in header]
            if missing:
                raise UsageError(f"{path}: missing column(s) {', '.join(missing)} "
                                 f"(expected {','.join(names)})")
            before = 0
            while True:
                rows = list(itertools.islice(reader, chunk_rows))
                if not rows:
                    return
                yield before, rows
                before += len(rows)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None


def spooled_stdout(write):
    """Run ``write(fh)`` on a binary spool and copy it to standard output only if it
    returns (memory up to 16 MiB, then a private temporary file; removed on exit)."""
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL) as spool:
        write(spool)
        spool.seek(0)
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="")
        while True:
            block = text.read(1 << 20)
            if not block:
                break
            sys.stdout.write(block)
        text.detach()
