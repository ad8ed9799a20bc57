"""Saving and loading synopses and counter checkpoints.

File format (version 1), all integers little-endian::

    b"PDSYN\\x00v1"            8 bytes: magic and format version
    header length           8 bytes, unsigned
    header                  UTF-8 JSON: {"format_version", "kind", "created",
                            "meta", "arrays": [{"name", "dtype", "shape",
                            "offset", "nbytes"}, ...]}
    array payload           raw C-order array bytes at the offsets given
    SHA-256                 32 bytes over everything before it

Loading never executes code (no pickle): arrays are rebuilt with
``numpy.frombuffer`` from an allow-list of dtypes, after the checksum,
magic, version and every offset have been checked; anything else raises
:class:`~pydp_synopsis.errors.FormatError`.  Files are written atomically
(temporary file in the same directory, ``fsync``, ``os.replace``), so a
crash never leaves a partial file under the target name.  Counter
checkpoints hold secret noise and are created with mode 0600 from the start.
"""
import datetime
import hashlib
import json
import os
import struct
import tempfile

import numpy as np

from .errors import FormatError

__all__ = ["FORMAT_VERSION", "atomic_write", "write_record", "read_record", "register", "save", "load"]

FORMAT_VERSION = 1
_MAGIC = b"PDSYN\x00v"
_DTYPES = {"int64", "uint64", "float64", "int32", "uint32", "uint8", "int8"}
_LOADERS = {}


def register(kind):
    """Decorator: ``loader(meta, arrays) -> object`` rebuilds objects of ``kind``."""

    def decorate(loader):
        _LOADERS[kind] = loader
        return loader

    return decorate


def _encode(kind, meta, arrays):
    specs, chunks, offset = [], [], 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        if arr.dtype.name not in _DTYPES:
            raise TypeError(f"array {name!r} has unsupported dtype {arr.dtype}")
        data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        specs.append({"name": name, "dtype": arr.dtype.name, "shape": list(arr.shape),
                      "offset": offset, "nbytes": len(data)})
        chunks.append(data)
        offset += len(data)
    header = json.dumps({
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "meta": meta,
        "arrays": specs,
    }, sort_keys=True).encode()
    body = _MAGIC + bytes([ord("0") + FORMAT_VERSION]) + struct.pack("<Q", len(header)) + header
    body += b"".join(chunks)
    return body + hashlib.sha256(body).digest()


def _umask():
    """The process umask (read without changing it for longer than one call)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def atomic_write(path, write, *, mode=None):
    """Write a file so that ``path`` holds either its old content or all of the new.

    ``write(fh)`` writes the content to a binary file object of a temporary
    file in the same directory; the file is flushed, ``fsync``-ed and renamed
    over ``path`` (``os.replace``), and the directory is ``fsync``-ed.  On any
    exception the temporary file is removed and nothing changes at ``path``.
    The one writer of the package: synopses, checkpoints and the command
    line's CSV and PNG outputs all go through it.

    Parameters
    ----------
    path : str or os.PathLike
    write : callable
        ``write(fh)`` with ``fh`` a binary file open for writing.
    mode : int, optional
        Permission bits, set on the temporary file before anything is
        written (secret content is never readable by others, even for an
        instant).  ``None``: ``0o666`` less the process umask, as ``open``
        would create it.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> atomic_write(path, lambda fh: fh.write(b"hello"), mode=0o600)
    >>> oct(os.stat(path).st_mode & 0o777), open(path).read()
    ('0o600', 'hello')
    """
    path = os.fspath(path)
    mode = 0o666 & ~_umask() if mode is None else mode
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".pdsyn-", dir=directory)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def write_record(path, kind, meta, arrays, *, mode=None):
    """Atomically write one record to ``path`` (see :func:`atomic_write`).

    Parameters
    ----------
    path : str or os.PathLike
    kind : str
        Which object this is (dispatch key for :func:`load`).
    meta : dict
        JSON-serialisable scalars and lists.
    arrays : dict of str to numpy.ndarray
        Numeric arrays (dtypes int8..uint64, float64).
    mode : int, optional
        Permission bits; ``None`` honours the umask (synopses hold only
        released numbers); checkpoints pass ``0o600`` (they hold secret noise).
    """
    data = _encode(kind, meta, arrays)
    atomic_write(path, lambda fh: fh.write(data), mode=mode)


def read_record(path):
    """Read and verify a record; returns ``(kind, meta, arrays, info)``.

    ``info`` holds ``format_version`` and ``created``.  Raises FormatError
    for a file that is truncated, edited, of another format or version.
    """
    path = os.fspath(path)
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < len(_MAGIC) + 1 + 8 + 32 or not data.startswith(_MAGIC):
        raise FormatError(f"{path}: not a pydp_synopsis file (bad magic or too short)")
    version = data[len(_MAGIC)] - ord("0")
    if version != FORMAT_VERSION:
        raise FormatError(f"{path}: format version {version} is not supported "
                          f"(this pydp_synopsis reads version {FORMAT_VERSION})")
    body, digest = data[:-32], data[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise FormatError(f"{path}: checksum mismatch (file truncated or modified)")
    start = len(_MAGIC) + 1
    (hlen,) = struct.unpack_from("<Q", body, start)
    hstart = start + 8
    if hstart + hlen > len(body):
        raise FormatError(f"{path}: header length out of range")
    try:
        header = json.loads(body[hstart:hstart + hlen].decode())
        kind = header["kind"]
        meta = header["meta"]
        specs = header["arrays"]
        info = {"format_version": header["format_version"], "created": header["created"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(f"{path}: malformed header ({exc})") from None
    payload = body[hstart + hlen:]
    arrays = {}
    for spec in specs:
        try:
            dtype = np.dtype(spec["dtype"]).newbyteorder("<")
            if spec["dtype"] not in _DTYPES:
                raise ValueError(spec["dtype"])
            shape = tuple(int(d) for d in spec["shape"])
            off, nbytes = int(spec["offset"]), int(spec["nbytes"])
        except (ValueError, KeyError, TypeError) as exc:
            raise FormatError(f"{path}: malformed array entry ({exc})") from None
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if off < 0 or off + nbytes > len(payload) or count * dtype.itemsize != nbytes:
            raise FormatError(f"{path}: array {spec.get('name')!r} out of bounds")
        arr = np.frombuffer(payload, dtype=dtype, count=count, offset=off).reshape(shape)
        arrays[spec["name"]] = arr.astype(dtype.newbyteorder("="), copy=True)
    return kind, meta, arrays, info


def save(obj, path):
    """Save a synopsis or counter: ``obj._to_record()`` -> ``(kind, meta, arrays, mode)``."""
    to_record = getattr(obj, "_to_record", None)
    if to_record is None:
        raise TypeError(f"cannot save a {type(obj).__name__}: not a synopsis or counter")
    kind, meta, arrays, mode = to_record()
    write_record(path, kind, meta, arrays, mode=mode)


def load(path):
    """Load any object written by :func:`save` (synopses and counter checkpoints).

    Raises
    ------
    FormatError
        The file is not a valid record of a known kind and version.
    OSError
        The file cannot be read.
    """
    kind, meta, arrays, _ = read_record(path)
    loader = _LOADERS.get(kind)
    if loader is None:
        raise FormatError(f"{os.fspath(path)}: unknown kind {kind!r}")
    try:
        return loader(meta, arrays)
    except FormatError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise FormatError(f"{os.fspath(path)}: inconsistent {kind} record ({exc})") from None
