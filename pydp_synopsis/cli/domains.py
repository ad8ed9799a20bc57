"""``--domain`` (and ``--range``, ``--resolution``) read from the command line:
integer bounds, decimals by ``--scale``, user units, integer type names."""
import re

import numpy as np

from ..errors import InputError, UsageError
from ..inputs import to_fixed_point

__all__ = ["DTYPE_DOMAINS", "parse_domain", "parse_user_domain", "per_column"]

#: Public default domains per integer type, for ``--domain int32`` etc.
DTYPE_DOMAINS = {
    name: (int(np.iinfo(name).min), int(np.iinfo(name).max))
    for name in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
}


def parse_domain(text, dims, scale=None):
    """Parse ``--domain``: ``lo:hi`` per axis, comma separated, or an integer type name.

    With a fixed-point ``scale`` the bounds are decimals converted exactly as
    the data are (:func:`~pydp_synopsis.inputs.to_fixed_point`).

    Examples
    --------
    >>> parse_domain("-90:90,0:359", 2)
    [(-90, 90), (0, 359)]
    >>> parse_domain("uint16", 1)
    [(0, 65535)]
    >>> parse_domain("-90:90", 1, scale="1e6")
    [(-90000000, 90000000)]
    """
    if text is None:
        raise UsageError(
            "--domain is required: a domain taken from the data would leak its minimum and maximum. "
            "Give public bounds per column, e.g. --domain=0:86399 or --domain=-90000000:90000000,"
            "-180000000:180000000, or a type name (int32, uint64, ...) for its full range")
    out = []
    for p in _domain_entries(text, dims):
        if p in DTYPE_DOMAINS:
            out.append(DTYPE_DOMAINS[p])
            continue
        lo, sep, hi = p.rpartition(":")
        if not sep:
            raise UsageError(f"--domain entry {p!r} is not lo:hi or an integer type name")
        try:
            bounds = to_fixed_point([lo.strip(), hi.strip()], scale, "--domain")
        except InputError as exc:
            raise UsageError(f"--domain entry {p!r}: {exc} (integers, or decimals with --scale)") from None
        out.append((int(bounds[0]), int(bounds[1])))
    return out


_INT = re.compile(r"^[+-]?\d+$")


def _domain_entries(text, dims, name="--domain"):
    """``--domain``'s comma-separated entries, one per column (one entry serves all)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1 and dims > 1:
        parts = parts * dims
    if len(parts) != dims:
        raise UsageError(f"{name} gives {len(parts)} ranges for {dims} columns")
    return parts


def parse_user_domain(text, dims, name="--domain"):
    """Parse ``--domain`` in user units: ``lo:hi`` or ``lo..hi`` per axis
    (``..`` for ISO datetimes, which hold colons), or an integer type name.

    Integer bounds become ints; anything else (dates, datetimes, decimals)
    stays text for the column's description to convert.  ``name``: the option
    the messages name (``--range`` of ``plot``).

    Examples
    --------
    >>> parse_user_domain("2001-01-01:2001-12-31,0:9", 2)
    [('2001-01-01', '2001-12-31'), (0, 9)]
    >>> parse_user_domain("2001-01-01T00:00..2001-12-31T23:59", 1)
    [('2001-01-01T00:00', '2001-12-31T23:59')]
    """
    if text is None:
        parse_domain(None, dims)
    out = []
    for p in _domain_entries(text, dims, name):
        if p in DTYPE_DOMAINS:
            out.append(DTYPE_DOMAINS[p])
            continue
        lo, sep, hi = p.partition("..")
        if not sep:
            if re.match(r"^\s*[+-]?\d{4}-\d{2}-\d{2}[T ]", p):
                raise UsageError(f"{name} entry {p!r}: separate datetimes with .. "
                                 f"(2001-01-01T00:00..2001-12-31T23:59)")
            lo, sep, hi = p.rpartition(":")
        if not sep:
            raise UsageError(f"{name} entry {p!r} is not lo:hi (or lo..hi) or an integer "
                             f"type name")
        out.append(tuple(int(b) if _INT.match(b.strip()) else b.strip() for b in (lo, hi)))
    return out


def per_column(text, dims, name):
    """``--resolution`` (or another per-column option): one value or one per column."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 1:
        return parts * dims
    if len(parts) != dims:
        raise UsageError(f"{name} gives {len(parts)} values for {dims} columns")
    return [p or None for p in parts]
