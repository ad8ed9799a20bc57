"""Saving and loading synopses and counter checkpoints.

File format (version 1), all integers little-endian::

    b"PDSYN\\x00v1"            8 bytes: magic and format version
    header length           8 bytes, unsigned
    header                  UTF-8 JSON: {"format_version", "kind", "created",
                            "meta", "arrays": [{"name", "dtype", "shape",
                            "offset", "nbytes"}, ...]}
    array payload           raw C-order array bytes at the offsets given
    SHA-256                 32 bytes over everything before it

Loading never executes code (no pickle): arrays of an allow-list of dtypes
are read straight into their buffers after the magic, version, header and
every size have been checked against the file's real size (the arrays tile
the payload; the file is exactly as long as declared), and the checksum is
computed over the same blocks; anything else raises
:class:`~pydp_synopsis.errors.FormatError`.  Files are written atomically
(temporary file in the same directory, ``fsync``, ``os.replace``), so a
crash never leaves a partial file under the target name.  Counter
checkpoints hold secret noise and are created with mode 0600 from the start;
the command line writes their temporary files in a private 0700 directory
(``tmp_dir``, :mod:`pydp_synopsis.checkpoint`).
"""
import datetime
import hashlib
import json
import math
import os
import stat
import struct
import tempfile
from fractions import Fraction

import numpy as np

from .errors import FormatError
from .params import check_int
from .outputs import check_target, naming_file

__all__ = ["FORMAT_VERSION", "atomic_write", "write_record", "read_record", "register", "save", "load",
           "from_record", "record_of", "int64_array", "state_fraction", "state_delta",
           "check_pure_epsilon"]

FORMAT_VERSION = 1
_MAGIC = b"PDSYN\x00v"
_DTYPES = {"int64", "uint64", "float64", "int32", "uint32", "uint8", "int8"}
_LOADERS = {}


def register(kind):
    """Decorator: ``loader(meta, arrays) -> object`` rebuilds objects of ``kind``.

    Kinds are spelled with hyphens (``"interval-synopsis"``,
    ``"kary-tree-counter"``); release 0.1's underscored counter kinds are
    registered too, so its checkpoints load.
    """

    def decorate(loader):
        _LOADERS[kind] = loader
        return loader

    return decorate


def _encode(kind, meta, arrays, annex=None):
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
        **({"annex": annex} if annex is not None else {}),
    }, sort_keys=True, allow_nan=False).encode()
    body = _MAGIC + bytes([ord("0") + FORMAT_VERSION]) + struct.pack("<Q", len(header)) + header
    body += b"".join(chunks)
    return body + hashlib.sha256(body).digest()


def _umask():
    """The process umask (read without changing it for longer than one call)."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def atomic_write(path, write, *, mode=None, tmp_dir=None):
    """Write a file so that ``path`` holds either its old content or all of the new.

    ``write(fh)`` writes the content to a binary file object of a temporary
    file in the same directory; the file is flushed, ``fsync``-ed and renamed
    over ``path`` (``os.replace``), and the directory is ``fsync``-ed.  On any
    exception the temporary file is removed and nothing changes at ``path``;
    an OSError (a full disk) names ``path``.  A ``path`` that exists and is
    not a regular file (a device, a FIFO, a directory) is refused before
    anything is written (:func:`pydp_synopsis.outputs.check_target`).
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
    tmp_dir : str, optional
        Where the temporary file is made (default: beside ``path``); it
        must be on the same filesystem, so that the rename is atomic.  The
        counter checkpoints of the command line use a private 0700
        directory (:mod:`pydp_synopsis.checkpoint`), so that no older copy
        of a checkpoint is ever left beside it by a killed process.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> atomic_write(path, lambda fh: fh.write(b"hello"), mode=0o600)
    >>> oct(os.stat(path).st_mode & 0o777), open(path).read()
    ('0o600', 'hello')
    """
    path = os.fspath(path)
    check_target(path)          # the rename would replace a device, a FIFO or a directory
    mode = 0o666 & ~_umask() if mode is None else mode
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pdsyn-", dir=directory if tmp_dir is None else tmp_dir)
    except OSError as exc:
        raise naming_file(exc, path) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):      # a full disk names the file it could not write
            raise naming_file(exc, path) from None
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def write_record(path, kind, meta, arrays, *, mode=None, annex=None, tmp_dir=None):
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
    annex : dict, optional
        JSON data of the caller stored beside the object (returned by
        :func:`read_record` in ``info["annex"]``); e.g. the command line's
        releases not yet confirmed written.
    tmp_dir : str, optional
        Directory of the temporary file (see :func:`atomic_write`).
    """
    data = _encode(kind, meta, arrays, annex)
    atomic_write(path, lambda fh: fh.write(data), mode=mode, tmp_dir=tmp_dir)


#: Largest header accepted (the JSON part; real headers are a few KiB).
_MAX_HEADER = 1 << 24
#: Bytes read (and hashed) at a time.
_BLOCK = 1 << 20
#: Largest file hashed to tell a damaged header from a crafted one (64 MiB).
_DIAGNOSE = 1 << 26
#: Largest array dimension and element count accepted from a header.
_MAX_ELEMENTS = 1 << 40
_PREFIX = len(_MAGIC) + 1 + 8


def _no_constant(name):
    raise ValueError(f"non-finite number {name} in JSON")


def _open_regular(path):
    """Open ``path`` for reading without blocking (a FIFO or device is refused
    before anything is read); returns ``(fd, size)``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise FormatError(f"{path}: not a regular file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{path}: not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def _read_exact(fd, n):
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, _BLOCK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_into(fd, buf, digest):
    """Fill the writable byte buffer ``buf`` from ``fd`` block by block, each block
    fed to ``digest``; False if the file ends first."""
    pos, n = 0, len(buf)
    while pos < n:
        got = os.readv(fd, [buf[pos:pos + _BLOCK]])
        if not got:
            return False
        digest.update(buf[pos:pos + got])
        pos += got
    return True


def _array_specs(path, specs):
    """Validate the header's array list with exact integer arithmetic: names,
    dtypes from the allow-list, shapes, and offsets tiling the payload in the
    order listed (as :func:`write_record` lays them out: no gap, no overlap).
    Returns the arrays and the payload size they declare."""
    if not isinstance(specs, list):
        raise FormatError(f"{path}: malformed header (arrays is not a list)")
    out, seen, end = [], set(), 0
    for spec in specs:
        if not isinstance(spec, dict):
            raise FormatError(f"{path}: malformed array entry")
        name, dtype, shape = spec.get("name"), spec.get("dtype"), spec.get("shape")
        off, nbytes = spec.get("offset"), spec.get("nbytes")
        if not isinstance(name, str) or name in seen:
            raise FormatError(f"{path}: malformed array entry (name)")
        if not isinstance(dtype, str) or dtype not in _DTYPES:
            raise FormatError(f"{path}: array {name!r} has a dtype outside the allow-list")
        if (not isinstance(shape, list) or len(shape) > 8
                or not all(type(d) is int and 0 <= d <= _MAX_ELEMENTS for d in shape)):
            raise FormatError(f"{path}: array {name!r} has a malformed shape")
        count = 1
        for d in shape:
            count *= d
        if not (type(off) is int and type(nbytes) is int and count <= _MAX_ELEMENTS
                and off == end and nbytes == count * np.dtype(dtype).itemsize):
            raise FormatError(f"{path}: array {name!r} out of bounds")
        end += nbytes
        seen.add(name)
        out.append((name, np.dtype(dtype).newbyteorder("<"), tuple(shape), count))
    return out, end


def _parse_header(path, raw, version):
    """The header's JSON object, strictly parsed: ``(kind, meta, info, arrays)``."""
    try:
        header = json.loads(raw.decode(), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{path}: malformed header ({type(exc).__name__})") from None
    if not isinstance(header, dict):
        raise FormatError(f"{path}: malformed header (not an object)")
    kind, meta = header.get("kind"), header.get("meta")
    info = {"format_version": header.get("format_version"), "created": header.get("created"),
            "annex": header.get("annex")}
    if not isinstance(kind, str) or not isinstance(meta, dict) or info["format_version"] != version \
            or not isinstance(info["created"], str) or not isinstance(info["annex"], (dict, type(None))):
        raise FormatError(f"{path}: malformed header (kind, meta, format_version or created)")
    return kind, meta, info, header.get("arrays")


def _checked_header(path, fd, head, size, version, digest):
    """Read and check the header after the prefix ``head`` (fed to ``digest`` with it);
    every declared size must add up to the file's ``size`` exactly."""
    (hlen,) = struct.unpack_from("<Q", head, len(_MAGIC) + 1)
    if hlen > min(_MAX_HEADER, size - _PREFIX - 32):
        raise FormatError(f"{path}: header length out of range")
    raw = _read_exact(fd, hlen)
    if len(raw) != hlen:
        raise FormatError(f"{path}: the file changed while it was read")
    digest.update(head)
    digest.update(raw)
    kind, meta, info, specs = _parse_header(path, raw, version)
    specs, payload = _array_specs(path, specs)
    if size != _PREFIX + hlen + payload + 32:
        raise FormatError(f"{path}: the file's size does not match its header "
                          f"(file truncated, extended or modified)")
    return kind, meta, info, specs


def _diagnose(path, fd, size):
    """A header that does not add up is usually a damaged file: if the file is small
    enough to hash at once (``_DIAGNOSE``), say so when its checksum fails too
    (block by block, memory O(1)); a large one is refused on its header alone."""
    if size > _DIAGNOSE:
        return
    os.lseek(fd, 0, os.SEEK_SET)
    digest = hashlib.sha256()
    body = size - 32
    while body:
        block = os.read(fd, min(body, _BLOCK))
        if not block:
            return
        digest.update(block)
        body -= len(block)
    if digest.digest() != _read_exact(fd, 32):
        raise FormatError(f"{path}: checksum mismatch (file truncated or modified)") from None


def read_record(path):
    """Read and verify a record; returns ``(kind, meta, arrays, info)``.

    Every size the file declares is checked against the file's real size
    before anything is allocated or read beyond the header: a regular file
    (a FIFO, device or directory is refused without blocking), the magic and
    version in the first bytes, a header length that fits the file
    (at most 16 MiB); then a strict parse of the header (no
    ``NaN``/``Infinity``, bounded nesting) and every array's dtype, shape
    and extent computed with exact integers, the arrays tiling the payload;
    the file must be exactly as long as the header declares (a longer or
    shorter one is refused).  Only then are the arrays read, block by block
    straight into their final buffers, with the SHA-256 computed over the
    same blocks and compared at the end.  A header that does not add up in a
    file of at most 64 MiB is reported as a checksum mismatch when the file's
    checksum fails too (a damaged file), else as the header's fault.
    Anything wrong raises :class:`~pydp_synopsis.errors.FormatError`;
    ``info`` holds ``format_version``, ``created`` and ``annex``.

    Notes
    -----
    O(file size) time; memory: the arrays once (no second copy of the file)
    plus the header.  A file whose sizes do not add up costs its header's
    reading, whatever its length.
    """
    path = os.fspath(path)
    fd, size = _open_regular(path)
    digest = hashlib.sha256()
    try:
        head = _read_exact(fd, _PREFIX)
        if len(head) < _PREFIX or size < _PREFIX + 32 or not head.startswith(_MAGIC):
            raise FormatError(f"{path}: not a pydp_synopsis file (bad magic or too short)")
        version = head[len(_MAGIC)] - ord("0")
        if version != FORMAT_VERSION:
            raise FormatError(f"{path}: format version {version} is not supported "
                              f"(this pydp_synopsis reads version {FORMAT_VERSION})")
        try:
            kind, meta, info, specs = _checked_header(path, fd, head, size, version, digest)
        except FormatError:
            _diagnose(path, fd, size)
            raise
        arrays = {}
        for name, dtype, shape, count in specs:
            arr = np.empty(count, dtype=dtype)
            if not _read_into(fd, memoryview(arr.view(np.uint8)), digest):
                raise FormatError(f"{path}: the file changed while it was read")
            arrays[name] = arr.astype(dtype.newbyteorder("="), copy=False).reshape(shape)
        stored = _read_exact(fd, 32)
        if len(stored) != 32 or os.read(fd, 1):
            raise FormatError(f"{path}: the file changed while it was read")
    finally:
        os.close(fd)
    if digest.digest() != stored:
        raise FormatError(f"{path}: checksum mismatch (file truncated or modified)")
    return kind, meta, arrays, info


def save(obj, path, *, annex=None):
    """Save a synopsis or counter (``obj._to_record()`` -> ``(kind, meta, arrays, mode)``).

    ``annex``: optional JSON data stored beside the object, see :func:`write_record`.
    """
    kind, meta, arrays, mode = record_of(obj)
    write_record(path, kind, meta, arrays, mode=mode, annex=annex)


def record_of(obj):
    """``(kind, meta, arrays, mode)``: the record :func:`save` writes for ``obj``.

    For a caller that writes the record itself (the command line's
    journaled checkpoints, :mod:`pydp_synopsis.checkpoint`).  TypeError for
    an object that is not a synopsis or counter.
    """
    to_record = getattr(obj, "_to_record", None)
    if to_record is None:
        raise TypeError(f"cannot save a {type(obj).__name__}: not a synopsis or counter")
    return to_record()


def load(path, *, with_annex=False):
    """Load any object written by :func:`save` (synopses and counter checkpoints).

    Parameters
    ----------
    path : str or os.PathLike
    with_annex : bool
        Return ``(obj, annex)`` (``annex`` None when the file has none).

    Raises
    ------
    FormatError
        The file is not a valid record of a known kind and version.
    OSError
        The file cannot be read.
    """
    kind, meta, arrays, info = read_record(path)
    obj = from_record(path, kind, meta, arrays)
    return (obj, info["annex"]) if with_annex else obj


def from_record(path, kind, meta, arrays):
    """The object of a record returned by :func:`read_record` (what :func:`load` returns).

    For a caller that must see the record itself before trusting it (the
    command line's checkpoints compare its digest with their journal):
    the object is built from exactly the bytes that were checked.

    Raises
    ------
    FormatError
        Unknown kind, or a record its loader refuses (one line naming ``path``).
    """
    loader = _LOADERS.get(kind)
    if loader is None:
        raise FormatError(f"{os.fspath(path)}: unknown kind {kind!r}")
    try:
        return loader(meta, arrays)
    except FormatError:
        raise
    except MemoryError:
        raise FormatError(f"{os.fspath(path)}: inconsistent {kind} record (sizes too large)") from None
    except Exception as exc:  # a crafted record must never escape as another error
        raise FormatError(f"{os.fspath(path)}: inconsistent {kind} record "
                          f"({type(exc).__name__})") from None


# --------------------------------------------------------------------------
# Record fields every releasing class reads back the same way.

_INT64 = np.iinfo(np.int64)


def int64_array(value, name, length=None):
    """A record's array (or a state's list) as a one-dimensional int64 array.

    Integers only (no bool, no float); FormatError otherwise, or for a
    length other than ``length``.
    """
    arr = np.asarray(value)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise FormatError(f"state field {name!r} must be a list of integers")
    if arr.size and arr.dtype.kind == "u" and int(arr.max()) > _INT64.max:
        raise FormatError(f"state field {name!r} is out of the int64 range")
    if length is not None and len(arr) != length:
        raise FormatError(f"state field {name!r} must have {length} entries, got {len(arr)}")
    return arr.astype(np.int64)


def state_fraction(pair, name):
    """An exact rational saved as ``[numerator, denominator]`` (both positive ints)."""
    num, den = pair
    return Fraction(check_int(num, name, 1, math.inf), check_int(den, name, 1, math.inf))


def state_delta(meta):
    """A record's exact delta: ``[numerator, denominator]`` in [0, 1); 0 when absent (release 0.1)."""
    pair = meta.get("delta")
    if pair is None:
        if "pure_epsilon" in meta:
            raise FormatError("state has pure_epsilon but no delta")
        return Fraction(0)
    num, den = pair
    delta = Fraction(check_int(num, "delta", 0, math.inf), check_int(den, "delta", 1, math.inf))
    if not delta < 1:
        raise FormatError("state field 'delta' must be in [0, 1)")
    return delta


def check_pure_epsilon(meta, pure, delta):
    """The record's ``pure_epsilon`` must be the one its parameters give; it may be
    absent only with ``delta == 0`` (release 0.1)."""
    if "pure_epsilon" in meta:
        saved = state_fraction(meta["pure_epsilon"], "pure_epsilon")
        if saved != pure:
            raise FormatError(f"state pure_epsilon {saved} is not the one its noise scale gives")
    elif delta:
        raise FormatError("state has delta > 0 but no pure_epsilon")
