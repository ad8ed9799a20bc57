"""NumPy ``.npy`` and ``.npz`` inputs read in chunks, every declared size checked first.

A ``.npy`` file declares its array in a short header (shape, dtype, order,
[NPY]_); ``numpy.load`` trusts it and allocates the whole array at once, so
a 300-byte file claiming 2**37 values asks for 1 TiB, and a 4 MB ``.npz``
(a zip archive of ``.npy`` members) of zeros inflates to 4 GB.  Here:

- the header is parsed by numpy's own parser (``read_magic``,
  ``read_array_header_1_0``/``_2_0``, at most 10,000 bytes, no pickles:
  an object dtype, a structured dtype or any dtype outside plain numbers
  and short strings is refused);
- the array's size (``shape`` x ``itemsize``, exact integers) must equal
  the bytes that follow the header: the file's size for ``.npy``, the
  member's declared uncompressed size for ``.npz``; a larger or smaller
  file is refused before anything of that size is allocated;
- the data is then read ``chunk_rows`` rows at a time (``.npy``
  memory-mapped, ``.npz`` members streamed through ``zipfile``'s
  decompressor, which never yields more than the declared size and checks
  the CRC at the end), so memory is O(chunk), whatever the file claims.

Every refusal is one :class:`~pydp_synopsis.errors.InputError` naming the
file and the array, never a value.

References
----------
.. [NPY] NumPy Enhancement Proposal 1, "A simple file format for NumPy
   arrays" (``numpy.lib.format``), format versions 1.0 and 2.0.
"""
import zipfile
import zlib
from collections import namedtuple

import numpy as np
import numpy.lib.format as npformat

from ._core import LIMITS
from .errors import InputError

__all__ = ["MAX_HEADER", "MAX_ITEMSIZE", "NpyArray", "npy_array", "npy_chunks",
           "npy_column_indices", "npz_arrays",
           "npz_chunks", "read_npy", "read_npz"]

#: Largest ``.npy`` header parsed (numpy's own default bound).
MAX_HEADER = 10_000
#: Largest item accepted: numbers, or strings of at most 64 characters (``<U64``).
MAX_ITEMSIZE = 256
#: Bytes read from a member at a time when streaming.
_BLOCK = 1 << 20

NpyArray = namedtuple("NpyArray", "shape fortran_order dtype offset nbytes")
NpyArray.__doc__ = """A checked ``.npy`` header: shape, order, dtype, data offset and size (bytes)."""


def _header(fh, where):
    """``NpyArray`` of the header at ``fh``'s position (left just after it)."""
    start = fh.tell()
    try:
        version = npformat.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = npformat.read_array_header_1_0(fh, max_header_size=MAX_HEADER)
        elif version == (2, 0):
            shape, fortran, dtype = npformat.read_array_header_2_0(fh, max_header_size=MAX_HEADER)
        else:
            raise InputError(f"{where}: .npy format version {version[0]}.{version[1]} is not "
                             f"read here (1.0 or 2.0)")
    except InputError:
        raise
    except Exception:       # noqa: BLE001
        # numpy's parser tokenizes and literal-evaluates the header text and maps it to a
        # dtype: a crafted header raised ValueError, SyntaxError, tokenize.TokenError and
        # IndexError (the fuzz tier); any failure of a pure parse is a malformed header
        raise InputError(f"{where}: not a .npy array (malformed header)") from None
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None \
            or dtype.kind not in "biufU" or not 0 < dtype.itemsize <= MAX_ITEMSIZE:
        raise InputError(f"{where}: dtype {dtype.str} is not read here (integers, floats, "
                         f"or strings of at most {MAX_ITEMSIZE // 4} characters; no objects)")
    if len(shape) not in (1, 2):
        raise InputError(f"{where}: expected a 1-D or 2-D array, got {len(shape)}-D")
    if any(d < 0 for d in shape):
        raise InputError(f"{where}: not a .npy array (negative shape)")
    count = 1
    for d in shape:
        count *= d
    return NpyArray(tuple(shape), bool(fortran), dtype, fh.tell() - start, count * dtype.itemsize)


def npy_array(path):
    """The checked header of the ``.npy`` file ``path``: its data must fill the file exactly.

    Raises
    ------
    InputError
        Not a ``.npy`` file, an unsupported dtype, or a size that disagrees
        with the file's (nothing allocated).
    """
    try:
        with open(path, "rb") as fh:
            arr = _header(fh, path)
            size = fh.seek(0, 2)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if arr.offset + arr.nbytes != size:
        raise InputError(f"{path}: the array's declared size does not match the file's "
                         f"(truncated, extended or crafted)")
    return arr


def npy_column_indices(arr, columns, where):
    """Column indices of a 1-D or 2-D array picked by ``columns`` (names "0", "1", ...)."""
    if len(arr.shape) == 1:
        if list(columns) not in ([], ["0"]):
            raise InputError(f"{where}: a 1-D .npy file has one column; name it 0 or omit "
                             f"columns=")
        return [0]
    width = arr.shape[1]
    if not columns:
        if width > LIMITS.max_axes:
            raise InputError(f"{where}: the array has {width} columns; name at most "
                             f"{LIMITS.max_axes} with columns=")
        columns = [str(i) for i in range(width)]
    idx = []
    for c in columns:
        if not c.isdigit() or int(c) >= width:
            raise InputError(f"{where}: columns of a .npy array are 0..{width - 1}, got {c!r}")
        idx.append(int(c))
    return idx


def npy_chunks(path, columns, chunk_rows):
    """Raw column chunks of a ``.npy`` file: lists of ``chunk_rows``-row arrays, one per
    column picked (:func:`npy_array` checks first; data memory-mapped, copied a chunk
    at a time)."""
    arr = npy_array(path)
    idx = npy_column_indices(arr, columns, path)
    rows = arr.shape[0]
    if rows == 0 or arr.nbytes == 0:
        return
    data = np.memmap(path, dtype=arr.dtype, mode="r", offset=arr.offset, shape=arr.shape,
                     order="F" if arr.fortran_order else "C")
    if data.ndim == 1:
        data = data[:, None]
    for start in range(0, rows, chunk_rows):
        yield [np.array(data[start:start + chunk_rows, j]) for j in idx]


def npz_arrays(zf, names, where):
    """``{name: (ZipInfo, NpyArray)}`` for the members ``names`` of an open archive: each
    member a 1-D ``.npy`` array whose data fills its declared uncompressed size exactly;
    all of one length."""
    members = {}
    for info in zf.infolist():
        key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        members.setdefault(key, info)
    out = {}
    for name in names:
        info = members.get(name)
        if info is None:
            listed = ", ".join(sorted(members))
            raise InputError(f"{where}: no array {name!r} (arrays: {listed[:200]})")
        here = f"{where}: array {name!r}"
        with zf.open(info) as fh:
            arr = _header(fh, here)
        if len(arr.shape) != 1:
            raise InputError(f"{here}: expected a 1-D array, got {len(arr.shape)}-D")
        if arr.offset + arr.nbytes != info.file_size:
            raise InputError(f"{here}: the declared size does not match the archive's "
                             f"(truncated, extended or crafted)")
        out[name] = (info, arr)
    if len({arr.shape for _, arr in out.values()}) > 1:
        raise InputError(f"{where}: the arrays {', '.join(names)} have different lengths")
    return out


def _read_exact(fh, n, where):
    parts, left = [], n
    while left:
        block = fh.read(min(left, _BLOCK))
        if not block:
            raise InputError(f"{where}: the data ends before its declared size")
        parts.append(block)
        left -= len(block)
    return b"".join(parts)


def npz_chunks(path, names, chunk_rows):
    """Raw column chunks of the arrays ``names`` of a ``.npz`` archive, streamed:
    lists of ``chunk_rows``-row arrays (:func:`npz_arrays` checks first)."""
    try:
        with zipfile.ZipFile(path) as zf:
            arrays = npz_arrays(zf, names, path)
            if not arrays:
                return
            rows = next(iter(arrays.values()))[1].shape[0]
            streams = []
            try:
                for name in names:
                    info, arr = arrays[name]
                    fh = zf.open(info)
                    streams.append((fh, arr, f"{path}: array {name!r}"))
                    _read_exact(fh, arr.offset, where=f"{path}: array {name!r}")
                for start in range(0, rows, chunk_rows):
                    n = min(chunk_rows, rows - start)
                    yield [np.frombuffer(_read_exact(fh, n * arr.dtype.itemsize, where),
                                         dtype=arr.dtype) for fh, arr, where in streams]
                for fh, _, where in streams:
                    fh.read(1)      # at the end: zipfile checks the CRC
            finally:
                for fh, _, _ in streams:
                    fh.close()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError,
            RuntimeError, zlib.error) as exc:     # RuntimeError: an encrypted member
        raise InputError(f"{path}: not a readable .npz archive ({type(exc).__name__})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None


def read_npy(path, columns):
    """Whole columns of a ``.npy`` file (checked as :func:`npy_chunks`)."""
    idx = npy_column_indices(npy_array(path), columns, path)
    parts = list(npy_chunks(path, columns, 1 << 20))
    return [np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64)
            for k in range(len(idx))]


def read_npz(path, names):
    """Whole arrays ``names`` of a ``.npz`` archive (checked and read as :func:`npz_chunks`)."""
    parts = list(npz_chunks(path, names, 1 << 20))
    return [np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, np.int64)
            for k in range(len(names))]
