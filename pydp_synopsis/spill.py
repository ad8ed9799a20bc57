"""Spill files: the rows a build writes to disk, private and never described by their size.

A build that cannot hold its input in memory writes checked values (offsets,
sorted runs, partition cells) to temporary files: the raw data, as secret as
the input.  They live in a directory made by :func:`private_directory` (mode
0700, ``pydp-source-*`` or ``pydp-aggregate-*`` under ``TMPDIR``), each file
created by :func:`create` with mode 0600 (``O_EXCL``, never through a link),
and the owner of the directory removes it on every exit path it controls
(an exception, Ctrl-C, SIGTERM, SIGHUP; not SIGKILL or a power cut).

Every failure reading or writing a spill is one :class:`SpillError` naming the
operation and the file, with the operating system's reason: numpy's own text
says how many items it meant to write (``12345 requested and 2500 written``),
a count that follows the data, so it is never passed on.
"""
import os
import tempfile

import numpy as np

from .errors import SynopsisError

__all__ = ["SpillError", "private_directory", "create", "write_array", "write_file",
           "read_array"]

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
    getattr(os, "O_CLOEXEC", 0)


class SpillError(SynopsisError, OSError):
    """A temporary spill file could not be created, written or read."""


def _reason(exc):
    if isinstance(exc, OSError) and exc.errno:
        return os.strerror(exc.errno)
    return "the file ended early or could not be written whole (is the disk full?)"


def private_directory(prefix, directory=None):
    """A fresh directory only the owner can enter (mode 0700), under ``directory``
    (None: the system's temporary directory, ``TMPDIR``)."""
    try:
        path = tempfile.mkdtemp(prefix=prefix, dir=directory)
        os.chmod(path, 0o700)
    except OSError as exc:
        where = directory if directory is not None else tempfile.gettempdir()
        raise SpillError(f"could not create a temporary directory in {where}: "
                         f"{_reason(exc)}") from None
    return path


def create(path):
    """A new spill file at ``path``, mode 0600, open for binary writing (unbuffered:
    a failed write leaves nothing to flush at close)."""
    try:
        return os.fdopen(os.open(path, _CREATE, 0o600), "wb", buffering=0)
    except OSError as exc:
        raise SpillError(f"could not create the temporary file {path}: {_reason(exc)}") \
            from None


def write_array(fh, arr, path):
    """Append ``arr``'s bytes (C order) to the spill ``fh`` at ``path``."""
    view = memoryview(np.ascontiguousarray(arr)).cast("B")
    try:
        while view:
            view = view[fh.write(view):]
    except (OSError, ValueError) as exc:
        raise SpillError(f"could not write the temporary file {path}: {_reason(exc)}") \
            from None


def write_file(path, arr):
    """A new spill file at ``path`` holding ``arr``'s bytes."""
    with create(path) as fh:
        write_array(fh, arr, path)


def read_array(source, dtype, count, path, offset=0):
    """Up to ``count`` items of ``dtype`` from the spill ``source`` (an open file, or
    ``path`` itself) at byte ``offset`` (only for a path)."""
    try:
        if offset:
            return np.fromfile(source, dtype=dtype, count=count, offset=offset)
        return np.fromfile(source, dtype=dtype, count=count)
    except (OSError, ValueError) as exc:
        raise SpillError(f"could not read the temporary file {path}: {_reason(exc)}") \
            from None
