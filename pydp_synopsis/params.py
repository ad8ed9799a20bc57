"""Every argument check and exact privacy parameter, in one vocabulary.

Public entry points call these once, on the arguments they receive; internal
code takes the checked values and never re-validates them.  One rule per
parameter:

* **Integers** (:func:`check_int`): Python or numpy integers, never ``bool``
  or a float that happens to be whole; ``TypeError`` for the type,
  ``ParameterError`` (or the error class asked for) for the range.
* **epsilon** (:func:`exact_epsilon`): an exact rational, a float rounded
  *down* -- its shortest decimal form when that is not larger (``0.1`` is
  exactly 1/10).  **Noise scales** (:func:`exact_scale`) are rounded *up*.
* **Budget shares** (:func:`check_share`): a real number in ``(0, 1)``; a
  float stands for its shortest decimal form (``0.1`` is exactly 1/10),
  whichever class it is passed to.  :func:`split_epsilon` splits a budget by
  a share, each part rounded down, so the parts never add up to more than
  the whole.
* **beta** (:func:`check_beta`): a failure probability in ``(0, 1)``.
* **Threshold factors** (:func:`check_threshold_factor`): the constant ``c``
  of the partition threshold ``c (ln D + ln(1/beta)) / epsilon``, in
  ``[0.7, 100]``.  Below 1 the partition also seals *empty* positions, about
  ``D^(1-c)`` of them on a domain of ``D`` values; at the floor 0.7 an
  empty ``2^64`` domain gets 841 segments (beta 0.05, any epsilon), at 0.5
  19.7 million, so every accepted factor finishes.
* **Domains** (:func:`check_domain`): inclusive integer pairs inside the
  int64 or the uint64 range, at most ``2^64`` values; data are turned into
  uint64 offsets from ``lo`` by :func:`as_offsets` exactly once per build.

References
----------
.. [NP] numpy.random's ``_common.check_constraint``: one vocabulary of
   argument checks for every distribution (the model followed here).
"""
import decimal
import math
import numbers
import operator
import os
import sys
import warnings
from fractions import Fraction

import numpy as np

from ._core import LIMITS
from .errors import DomainError, ParameterError

__all__ = [
    "MAX_EPSILON",
    "MAX_SCALE",
    "MIN_THRESHOLD_FACTOR",
    "MAX_THRESHOLD_FACTOR",
    "is_int",
    "renamed_keyword",
    "outside_stacklevel",
    "check_int",
    "check_bool",
    "clip_offsets",
    "dtype_name",
    "as_index",
    "check_choice",
    "check_real",
    "check_sample_shape",
    "exact_epsilon",
    "exact_scale",
    "scale_parts",
    "check_beta",
    "check_share",
    "check_ratio",
    "split_epsilon",
    "check_threshold_factor",
    "check_positions",
    "check_domain",
    "as_offsets",
]

#: Numerators and denominators handed to C stay below this bound.
_PARAM_LIMIT = LIMITS.param_limit
#: Largest admitted noise scale of the samplers; keeps every sample far inside int64.
MAX_SCALE = 1 << 48
#: Largest admitted epsilon.
MAX_EPSILON = 1 << 40
#: The one admitted range of a partition threshold factor (see the module doc).
MIN_THRESHOLD_FACTOR = 0.7
MAX_THRESHOLD_FACTOR = 100.0

_U64 = 1 << 64
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


# --------------------------------------------------------------- plain types

def is_int(value):
    """True for a Python or numpy integer that is not a bool."""
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def renamed_keyword(where, old, new, old_value, new_value, default):
    """The value of keyword ``new``, or of its old name ``old`` (kept one release).

    ``None`` means "not given" for both.  The old name still works, with a
    :class:`DeprecationWarning` naming the new one (raised at the caller of
    ``where``); both at once is a ParameterError.  Nothing else is checked.
    """
    if old_value is None:
        return default if new_value is None else new_value
    if new_value is not None:
        raise ParameterError(f"{where}: pass {new} only, not {old} (its deprecated old name)")
    warnings.warn(f"{where}({old}) is deprecated, use {new} instead (removed in 0.3)",
                  DeprecationWarning, stacklevel=outside_stacklevel())
    return old_value


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def outside_stacklevel():
    """The ``stacklevel`` that makes the caller's ``warnings.warn`` name the first frame
    outside this package: the user's line, however many of the package's frames (a
    decorator, a method calling another) lie between."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    return level


def as_index(value, name):
    """``value`` as a Python int (``operator.index``); bools and floats are refused.

    The type check alone: callers whose value is secret (a stream item)
    check its range with a message that never repeats it.

    Raises
    ------
    TypeError
        ``value`` is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> as_index(np.int64(7), "x")
    7
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def check_int(value, name, lo, hi, error=ParameterError):
    """``value`` as a Python int in ``[lo, hi]``.

    Raises
    ------
    TypeError
        ``value`` is not an integer (bools and floats are refused).
    error
        ``value`` is outside ``[lo, hi]`` (``ParameterError`` by default).

    Examples
    --------
    >>> check_int(5, "k", 3, 9)
    5
    """
    value = as_index(value, name)
    if not lo <= value <= hi:
        raise error(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


def check_bool(value, name):
    """``value`` as a bool; TypeError for anything but a Python or numpy bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return bool(value)


def check_choice(value, name, choices):
    """``value`` if it is one of the strings ``choices``.

    Raises
    ------
    TypeError
        Not a str.
    ParameterError
        Not one of ``choices``.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in choices:
        raise ParameterError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_real(value, name):
    """``value`` as a finite float; TypeError for a non-real, ParameterError for inf/NaN."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, not {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return value


def check_sample_shape(size):
    """Validate a sampler's ``size``; returns ``(shape or None, element count)``.

    ``None`` means one scalar; an int or a tuple of ints is an array shape
    of at most ``2**40`` elements.
    """
    if size is None:
        return None, 1
    if isinstance(size, (bool, np.bool_)):
        raise TypeError("size must be None, a non-negative int or a tuple of them, not bool")
    if isinstance(size, numbers.Integral):
        shape = (int(size),)
    elif isinstance(size, tuple) and all(is_int(d) for d in size):
        shape = tuple(int(d) for d in size)
    else:
        raise TypeError(f"size must be None, a non-negative int or a tuple of them, not {size!r}")
    if any(d < 0 for d in shape):
        raise ValueError(f"size must be non-negative, got {size!r}")
    count = math.prod(shape)
    if count > (1 << 40):
        raise ValueError(f"size must describe at most 2**40 samples, got {count}")
    return shape, count


# ------------------------------------------------------- exact rationals

def _as_fraction(value, name):
    """An exact Fraction for a finite real number; TypeError/ParameterError otherwise."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, not bool")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ParameterError(f"{name} must be finite, got {value}")
        return Fraction(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ParameterError(f"{name} must be finite, got {value}")
        return Fraction(value)
    raise TypeError(f"{name} must be a real number (int, float or Fraction), not {type(value).__name__}")


def _fits(frac):
    return frac.numerator < _PARAM_LIMIT and frac.denominator < _PARAM_LIMIT


def _round_rational(value, exact, up, name):
    """A rational with numerator, denominator < 2**62, >= exact if up else <= exact.

    A float's shortest decimal form (``repr``) is preferred when it lies on
    the safe side: ``0.1`` becomes exactly 1/10 (the float 0.1 is slightly
    larger, so 1/10 is a smaller epsilon, or a larger scale for ``up``).
    Otherwise the exact binary value is used when small enough, else it is
    rounded in the safe direction to a denominator 10**k (largest k that fits).
    """
    if isinstance(value, (float, np.floating)):
        short = Fraction(repr(float(value)))
        if _fits(short) and (short >= exact if up else short <= exact):
            return short
    if _fits(exact):
        return exact
    for k in range(18, -1, -1):
        den = 10**k
        scaled = exact * den
        num = math.ceil(scaled) if up else math.floor(scaled)
        cand = Fraction(num, den)
        if num > 0 and _fits(cand):
            return cand
    raise ParameterError(f"{name}={value!r} cannot be represented as a rational with parts below 2**62")


def exact_epsilon(epsilon, name="epsilon"):
    """The exact rational privacy parameter used for ``epsilon``.

    Parameters
    ----------
    epsilon : int, float, Fraction or Decimal
        Must satisfy ``0 < epsilon <= 2**40``.
    name : str
        Argument name used in error messages.

    Returns
    -------
    Fraction
        ``epsilon`` itself when it is already a small rational; a float is
        rounded **down** (never a larger privacy loss than asked): its
        shortest decimal form when that is not larger than the float
        (``0.1 -> 1/10``), else its exact binary value, else a decimal
        rounding down with denominator ``10**k``.  Numerator and
        denominator are below ``2**62``.

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number.
    ParameterError
        ``epsilon`` is not finite or outside ``(0, 2**40]``.

    Examples
    --------
    >>> exact_epsilon(0.1)
    Fraction(1, 10)
    >>> exact_epsilon(Fraction(1, 3))
    Fraction(1, 3)
    """
    exact = _as_fraction(epsilon, name)
    if not 0 < exact <= MAX_EPSILON:
        raise ParameterError(f"{name} must be in (0, 2**40], got {epsilon!r}")
    result = _round_rational(epsilon, exact, up=False, name=name)
    if result <= 0:
        raise ParameterError(f"{name}={epsilon!r} is too small to represent (use at least 1e-17)")
    return result


def exact_scale(scale, name="scale"):
    """The exact rational noise scale used for ``scale`` (rounded **up**).

    ``scale`` must satisfy ``0 < scale <= 2**48``.  Floats are converted as
    in :func:`exact_epsilon` but rounding up, so the noise is never smaller
    than asked.

    Examples
    --------
    >>> exact_scale(2.5)
    Fraction(5, 2)
    """
    exact = _as_fraction(scale, name)
    if not 0 < exact <= MAX_SCALE:
        raise ParameterError(f"{name} must be in (0, 2**48], got {scale!r}")
    return _round_rational(scale, exact, up=True, name=name)


def scale_parts(scale):
    """``(t, s)`` with ``scale == t / s`` as the C samplers take them.

    ``scale`` is a Fraction; one whose parts reach ``2**62`` is rounded up
    first (more noise, never less).

    Examples
    --------
    >>> scale_parts(Fraction(7, 3))
    (7, 3)
    """
    scale = Fraction(scale)
    if not _fits(scale):
        scale = _round_rational(scale, scale, up=True, name="scale")
    return scale.numerator, scale.denominator


def check_beta(beta, name="beta"):
    """Validate a failure probability: a real number in the open interval (0, 1).

    Returns it as a float (beta only tunes accuracy, never privacy).

    Examples
    --------
    >>> check_beta(0.05)
    0.05
    """
    exact = _as_fraction(beta, name)
    if not 0 < exact < 1:
        raise ParameterError(f"{name} must be in the open interval (0, 1), got {beta!r}")
    return float(exact)


def _decimal_fraction(value, name, also=""):
    """A real number as the exact Fraction it stands for: a float by its shortest
    decimal form (``0.1`` is 1/10), ints, Fractions and Decimals exactly; None when
    not finite.  TypeError (naming ``name``) for anything else."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, decimal.Decimal)):
        raise TypeError(f"{name} must be a real number{also}, not {type(value).__name__}")
    if isinstance(value, (float, np.floating)):
        return Fraction(repr(float(value))) if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return Fraction(value) if value.is_finite() else None
    return Fraction(value)


def check_share(value, name, allow_none=False):
    """A budget share as an exact Fraction in the open interval ``(0, 1)``.

    A float stands for its shortest decimal form (``0.1`` is exactly 1/10,
    not the binary double nearest to it); ints, Fractions and Decimals are
    exact.  ``None`` is passed through when ``allow_none``.

    Examples
    --------
    >>> check_share(0.1, "partition_share")
    Fraction(1, 10)
    """
    if value is None and allow_none:
        return None
    share = _decimal_fraction(value, name, " or None" if allow_none else "")
    if share is None or not 0 < share < 1:
        raise ParameterError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return share


def check_ratio(value, name, lo=1, hi=64):
    """A real ratio as an exact Fraction in ``[lo, hi]`` (floats by their shortest decimal).

    Examples
    --------
    >>> check_ratio(1.5, "level_ratio")
    Fraction(3, 2)
    """
    ratio = _decimal_fraction(value, name)
    if ratio is None or not lo <= ratio <= hi or ratio.denominator > 1000:
        raise ParameterError(f"{name} must be in [{lo}, {hi}] (a decimal of at most 3 places), "
                             f"got {value!r}")
    return ratio


def split_epsilon(epsilon, share, names=("epsilon * share", "epsilon * (1 - share)"),
                  round_first=None):
    """Split an exact ``epsilon`` into ``(epsilon * share, the rest)``, each rounded down.

    The first part is ``exact_epsilon(epsilon * share)``, the second
    ``exact_epsilon(epsilon - first)``: both are small exact rationals and
    their sum never exceeds ``epsilon`` (sequential composition holds).
    ``round_first(first, epsilon)``, a function that may only lower ``first``
    (such as :func:`pydp_synopsis.partitions.privtree.privtree_epsilon`), is
    applied to the first part before the rest is taken.

    Examples
    --------
    >>> split_epsilon(Fraction(1), Fraction(1, 4))
    (Fraction(1, 4), Fraction(3, 4))
    """
    first = exact_epsilon(epsilon * share, names[0])
    if round_first is not None:
        lower = round_first(first, epsilon)
        if not 0 < lower <= first:
            raise ValueError("round_first must return a positive epsilon no larger than its argument")
        first = lower
    return first, exact_epsilon(epsilon - first, names[1])


def check_threshold_factor(factor, name="threshold_factor"):
    """The partition threshold's constant ``c`` as a float in ``[0.7, 100]``.

    One range for every class (see the module doc for why the floor is 0.7).

    Examples
    --------
    >>> check_threshold_factor(3)
    3.0
    """
    if isinstance(factor, (bool, np.bool_)) or not isinstance(factor, (numbers.Real, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(factor).__name__}")
    factor = float(factor)
    if not (math.isfinite(factor) and MIN_THRESHOLD_FACTOR <= factor <= MAX_THRESHOLD_FACTOR):
        raise ParameterError(f"{name} must be in [{MIN_THRESHOLD_FACTOR}, {MAX_THRESHOLD_FACTOR:g}], "
                             f"got {factor!r}")
    return factor


# ------------------------------------------------------------------ domains

def check_positions(size, name="size"):
    """A number of stream positions (a domain size) in ``[1, 2**64]``."""
    if not is_int(size):
        raise TypeError(f"{name} must be an integer, got {type(size).__name__}")
    size = int(size)
    if not 1 <= size <= _U64:
        raise DomainError(f"{name} must be in [1, 2**64], got {size}")
    return size


def check_domain(domain, name="domain"):
    """Validate an inclusive integer domain ``(lo, hi)``.

    Parameters
    ----------
    domain : pair of int
        ``lo <= hi``; at most ``2**64`` values; the whole domain lies inside
        the int64 range or inside the uint64 range.
    name : str
        Argument name used in error messages.

    Returns
    -------
    (int, int)
        ``(lo, hi)`` as Python ints.

    Raises
    ------
    TypeError
        Not a pair of integers.
    DomainError
        ``hi < lo``, more than ``2**64`` values, or outside int64/uint64.

    Examples
    --------
    >>> check_domain((0, 2**64 - 1))
    (0, 18446744073709551615)
    """
    try:
        lo, hi = domain
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (lo, hi) of integers, got {domain!r}") from None
    if not (is_int(lo) and is_int(hi)):
        raise TypeError(f"{name} must be a pair (lo, hi) of integers, got {domain!r}")
    lo, hi = int(lo), int(hi)
    if hi < lo:
        raise DomainError(f"{name} must have lo <= hi, got ({lo}, {hi})")
    if hi - lo + 1 > _U64:
        raise DomainError(f"{name} must hold at most 2**64 values, got {hi - lo + 1}")
    if lo < _I64_MIN or hi >= _U64 or (lo < 0 and hi > _I64_MAX):
        raise DomainError(
            f"{name} must lie within the int64 range [-2**63, 2**63 - 1] or within "
            f"the uint64 range [0, 2**64 - 1], got ({lo}, {hi})")
    return lo, hi


def _outside(name, lo, hi):
    # Names the argument and the public range, never the offending value: a
    # message shown to an analyst must not carry data.
    return f"{name} must lie in the domain [{lo}, {hi}]: some value is outside it"


def dtype_name(dtype):
    """A dtype's name for a message, without the item size of strings and bytes
    (``<U9`` would tell the length of the longest value: data).

    Examples
    --------
    >>> import numpy as np
    >>> dtype_name(np.array(["TOPSECRET"]).dtype), dtype_name(np.dtype(np.float64))
    ('str', 'float64')
    """
    dtype = np.dtype(dtype)
    return {"U": "str", "S": "bytes", "V": "void"}.get(dtype.kind, str(dtype))


def clip_offsets(arr, domain):
    """Offsets ``min(max(v, lo), hi) - lo`` (uint64) of an integer array: clipping.

    Clipping to the declared domain is the convention of OpenDP
    (``make_clamp``) and diffprivlib (``bounds=``).  It is a per-row map of
    the data, so it keeps epsilon-DP: two databases that differ by adding or
    removing one item still differ by adding or removing one (clipped) item,
    and every count the synopsis releases has the same sensitivity 1.

    Examples
    --------
    >>> import numpy as np
    >>> clip_offsets(np.array([-5, 3, 2**62]), (0, 10)).tolist()
    [0, 3, 10]
    >>> clip_offsets(np.array([-1, 2**63 - 1]), (2**63, 2**64 - 1)).tolist()   # all below lo
    [0, 0]
    """
    lo, hi = domain
    arr = np.asarray(arr)
    below, above = arr < lo, arr > hi       # exact: numpy compares with Python ints exactly
    out = np.empty(arr.shape, dtype=np.uint64)
    inside = ~(below | above)
    # inside values: two's complement wraparound is exact (as in as_offsets)
    out[inside] = arr[inside].astype(np.uint64) - np.uint64(lo % _U64)
    out[below] = 0
    out[above] = np.uint64(hi - lo)
    return out


def as_offsets(values, domain, name="values", clip=False):
    """Validate integer values against a checked domain and return ``values - lo`` as uint64.

    Parameters
    ----------
    values : array_like of int
        Any shape.  Integer dtypes only (bool, float, complex, strings are
        refused, so NaN cannot occur); a Python list of ints is accepted.
    domain : pair of int
        Inclusive ``(lo, hi)`` as returned by :func:`check_domain`.
    name : str
        Argument name used in error messages.
    clip : bool
        Map a value below ``lo`` to ``lo`` and one above ``hi`` to ``hi``
        instead of refusing it (:func:`clip_offsets`).

    Returns
    -------
    numpy.ndarray of uint64
        The offsets, same shape.  May share memory with ``values`` when
        they are already uint64 and ``lo == 0``: do not modify it.

    Raises
    ------
    TypeError
        Non-integer dtype.
    DomainError
        A value outside ``[lo, hi]`` (compared exactly: a -1 is never read
        as ``2**64 - 1``).

    Notes
    -----
    O(n): one min/max pass and one subtraction.

    Examples
    --------
    >>> as_offsets([-1, 0, 5], (-1, 10)).tolist()
    [0, 1, 6]
    >>> as_offsets([-7, 0, 99], (-1, 10), clip=True).tolist()
    [0, 1, 11]
    """
    lo, hi = domain
    if isinstance(values, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array: drop or fill the masked entries first "
                        f"(masked values would otherwise be counted)")
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.uint64)
    if not isinstance(values, np.ndarray) and arr.dtype.kind not in "iu":
        # A Python sequence of ints numpy could not type (e.g. 2**64 - 1 next
        # to a negative): check its elements one by one.
        arr = np.asarray(values, dtype=object)
    if arr.dtype.kind == "O":
        flat = arr.ravel().tolist()
        if not all(is_int(v) for v in flat):
            raise TypeError(f"{name} must be integers")
        if clip:
            flat = [min(max(int(v), lo), hi) for v in flat]
        if not all(lo <= int(v) <= hi for v in flat):
            raise DomainError(_outside(name, lo, hi))
        return np.array([int(v) - lo for v in flat], dtype=np.uint64).reshape(arr.shape)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of integers, got dtype {dtype_name(arr.dtype)}")
    if int(arr.min()) < lo or int(arr.max()) > hi:
        if clip:
            return clip_offsets(arr, (lo, hi))
        raise DomainError(_outside(name, lo, hi))
    if arr.dtype == np.uint64 and lo == 0:
        return arr
    # Two's complement wraparound is exact here: every value is in [lo, hi]
    # and hi - lo < 2**64, so (v - lo) mod 2**64 is the true offset.
    out = arr.astype(np.uint64)
    out -= np.uint64(lo % _U64)
    return out
