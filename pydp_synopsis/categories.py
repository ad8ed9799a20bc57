"""Categorical columns: a public, ordered list of levels and the codes of values.

A category column (:meth:`pydp_synopsis.columns.Column.category`) stands for
the codes ``0 .. L - 1`` of its ``L`` levels, in the order the user gave them,
and, when asked, one more code ``L`` for the level ``other`` that every value
outside the levels counts under.  The levels are public (given by the user,
never read from the data), so the mapping is a per-row map: two neighbouring
inputs stay neighbours after it, and every mechanism built on the codes keeps
its epsilon.

The mapping is vectorised: the levels are sorted once, the values looked up
by one ``numpy.searchsorted`` and mapped back to their codes by an index
array.  A value outside the levels is refused (one line naming the column and
the number of levels, never the value) unless ``other`` is given; it is never
dropped silently.  Missing values are the caller's (the missing-value rule of
:mod:`pydp_synopsis.columns`: refused, or dropped with ``dropna``).
"""
import json

import numpy as np

from .errors import DomainError, InputError, ParameterError
from .inputs import to_fixed_point

__all__ = ["MAX_LEVELS", "MAX_LEVELS_JSON", "check_levels", "all_levels", "level_codes",
           "bound_codes", "describe_levels"]

#: The most levels a category column may have (levels are held in memory,
#: and a flat histogram releases one count per level).
MAX_LEVELS = 1 << 17
#: The most bytes a column's levels take in a saved file's JSON header (1.5 MiB: eight
#: such axes stay under the header's limit, so every file written loads back).
MAX_LEVELS_JSON = 3 << 19
_I64 = np.iinfo(np.int64)


def _column(name):
    return "a category column" if name is None else f"category column {name!r}"


def _is_int(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_levels(levels, other=None, missing=()):
    """The checked ``(levels, other)``: a tuple of distinct str (or int) levels and
    ``other`` (None, or one more level of the same type, not among them).

    ``missing``: strings that read as a missing value (a level may not be one:
    values spelled so are missing, never counted).

    Examples
    --------
    >>> check_levels(["AA", "UA", "WN"], other="other")
    (('AA', 'UA', 'WN'), 'other')
    >>> check_levels(["b", "a", "b"])
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.ParameterError: levels must be distinct: 'b' is given twice
    """
    if isinstance(levels, (str, bytes, set, frozenset, dict)) or levels is None:
        raise TypeError(f"levels must be an ordered list of str (or int), "
                        f"not {type(levels).__name__}")
    try:
        out = tuple(levels.tolist() if isinstance(levels, np.ndarray) else levels)
    except TypeError:
        raise TypeError(f"levels must be an ordered list of str (or int), "
                        f"not {type(levels).__name__}") from None
    if not out:
        raise ParameterError("levels must hold at least one level, got an empty list")
    if len(out) > MAX_LEVELS:
        raise ParameterError(f"levels: at most {MAX_LEVELS} levels, got {len(out)}")
    text = all(isinstance(v, str) for v in out)
    if not text and not all(_is_int(v) for v in out):
        bad = next(v for v in out if not isinstance(v, str) and not _is_int(v)) \
            if not any(isinstance(v, str) for v in out) or not any(_is_int(v) for v in out) \
            else None
        what = "a mix of str and int" if bad is None else f"a {type(bad).__name__}"
        raise TypeError(f"levels must be all str or all int, got {what}")
    if not text:
        out = tuple(int(v) for v in out)
        if not all(_I64.min <= v <= _I64.max for v in out):
            raise ParameterError("levels: an int level is outside the int64 range")
    else:
        for v in out:
            if v.strip() in missing or v != v.strip():
                raise ParameterError(f"levels: {v!r} reads as a missing value or has "
                                     f"surrounding blanks; give another spelling")
    size = len(json.dumps(list(out))) + len(json.dumps(other))
    if size > MAX_LEVELS_JSON:
        raise ParameterError(f"levels: at most {MAX_LEVELS_JSON} bytes of levels as JSON "
                             f"(they are saved in the file's header), got {size}")
    if len(set(out)) != len(out):
        seen = set()
        dup = next(v for v in out if v in seen or seen.add(v))
        raise ParameterError(f"levels must be distinct: {dup!r} is given twice")
    if other is not None:
        if text and not isinstance(other, str) or not text and not _is_int(other):
            raise TypeError(f"other must be a {'str' if text else 'int'} like the levels, "
                            f"not {type(other).__name__}")
        other = other if text else int(other)
        if other in set(out):
            raise ParameterError(f"other={other!r} is already one of the levels")
        if text and (other.strip() in missing or other != other.strip()):
            raise ParameterError(f"other: {other!r} reads as a missing value or has "
                                 f"surrounding blanks; give another spelling")
        if not text and not _I64.min <= other <= _I64.max:
            raise ParameterError("other is outside the int64 range")
    return out, other


def all_levels(levels, other):
    """The levels in code order: ``levels`` then ``other`` when given."""
    return levels if other is None else levels + (other,)


def describe_levels(levels, other):
    """A short public description (``"category (3 levels, other 'other')"``)."""
    more = "" if other is None else f", other {other!r}"
    return f"category ({len(levels)} level{'s' if len(levels) != 1 else ''}{more})"


def _sorted_index(levels):
    """``(sorted_levels, codes_in_sorted_order)`` as numpy arrays."""
    arr = np.array(levels, dtype=str if isinstance(levels[0], str) else np.int64)
    order = np.argsort(arr, kind="stable")
    return arr[order], order.astype(np.int64)


def _text_values(flat, what, name):
    """A text category column's values as a numpy str array (no value in a message)."""
    kind = flat.dtype.kind
    if kind == "U":
        return flat
    if kind == "O":
        if flat.size == 0:
            return flat.astype(str)
        text = flat.astype(str)
        # a non-str item's str() differs from the item (1 != "1"): refused, not matched
        if not (text.astype(object) == flat).all():
            raise TypeError(f"{what}: {_column(name)} has text levels and holds a "
                            f"value that is not a str")
        return text
    raise TypeError(f"{what}: {_column(name)} has text levels; got "
                    f"{'bytes' if kind == 'S' else 'numbers' if kind in 'iufcb' else 'times'}")


def _int_values(flat, what, name):
    """An int category column's values as int64 (integer strings converted exactly)."""
    kind = flat.dtype.kind
    if kind == "O" and flat.size:
        flat = np.array(flat.tolist())
        kind = flat.dtype.kind
    if kind in "iu":
        if kind == "u" and flat.size and flat.max() > _I64.max:
            # beyond every int64 level: a key that is no level (the smallest level - 1,
            # or the largest + 1), so that it is outside, never wrapped onto a level
            return np.where(flat > _I64.max, np.uint64(0), flat).astype(np.int64), \
                flat > _I64.max
        return flat.astype(np.int64)
    if kind == "f" and (flat == np.rint(flat)).all() and (np.abs(flat) < 2.0**63).all():
        return flat.astype(np.int64)
    if kind == "U":
        try:
            return to_fixed_point(flat, None, what)
        except InputError:
            raise InputError(f"{what}: {_column(name)} has int levels and holds "
                             f"a value that is not an integer") from None
    if flat.size == 0:
        return np.zeros(0, dtype=np.int64)
    raise TypeError(f"{what}: {_column(name)} has int levels and holds a value "
                    f"that is not an integer")


def _lookup(levels, keys):
    """``(codes, hit)``: each key's code among ``levels`` and whether it is one."""
    srt, codes = _sorted_index(levels)
    pos = np.searchsorted(srt, keys)
    np.minimum(pos, len(srt) - 1, out=pos)
    hit = srt[pos] == keys
    return codes[pos], hit


def level_codes(levels, other, flat, what, name):
    """The codes (int64) of the data values ``flat`` (1-D, no missing value).

    A value outside ``levels`` gets the code of ``other`` (``len(levels)``)
    when given, else raises InputError naming the column and the number of
    levels, never the value.  O(n log L), vectorised.

    Examples
    --------
    >>> level_codes(("b", "a"), "z", np.array(["a", "q", "b"]), "values", "x").tolist()
    [1, 2, 0]
    """
    if flat.size == 0:
        return np.zeros(0, dtype=np.int64)
    text = isinstance(levels[0], str)
    keys = _text_values(flat, what, name) if text else _int_values(flat, what, name)
    beyond = None
    if isinstance(keys, tuple):
        keys, beyond = keys
    codes, hit = _lookup(levels, keys)
    if beyond is not None:
        hit &= ~beyond
    if not hit.all():
        if other is None:
            raise InputError(f"{what}: {_column(name)} holds a value outside its "
                             f"{len(levels)} levels (give other= / --other NAME to count such "
                             f"values under one more level)")
        codes = np.where(hit, codes, len(levels))
    return codes


def bound_codes(levels, other, values, what, name):
    """The codes of query or domain bounds (public: a bound that is no level is
    named in the DomainError); ``other`` is a level here like the others."""
    every = all_levels(levels, other)
    flat = np.asarray(values)
    if flat.dtype.kind not in "UO":
        flat = flat.astype(object)
    flat = flat.reshape(-1)
    text = isinstance(every[0], str)
    try:
        keys = _text_values(flat, what, name) if text else _int_values(flat, what, name)
    except (TypeError, InputError):
        keys = None
    if isinstance(keys, tuple):
        keys = None if keys[1].any() else keys[0]
    if keys is None or (not text and flat.dtype.kind == "U"):
        raise DomainError(f"{what}: a bound of {_column(name)} must be one of its "
                          f"levels ({'str' if text else 'int'})")
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64)
    codes, hit = _lookup(every, keys)
    if not hit.all():
        bad = flat[~hit][0]
        bad = bad.item() if isinstance(bad, np.generic) else bad
        shown = ", ".join(repr(v) for v in every[:5]) + (", ..." if len(every) > 5 else "")
        raise DomainError(f"{what}: {bad!r} is not a level of {_column(name)} "
                          f"({len(every)} levels: {shown})")
    return codes
