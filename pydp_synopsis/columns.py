"""The Column type: what the integers of one axis stand for, converted exactly.

The synopses work on integers.  A :class:`Column` (integer, decimal, date or
datetime) says what the integers of one axis stand for, so that a synopsis
can be built from, queried with and reported in its user's units
(``syn.count("2001-03-01", "2001-03-31")``), and so that a saved file says how
to read it.  Every conversion is exact (decimals on their digits, resolutions
in rational arithmetic, dates and times in integer arithmetic).  The kinds,
their integer values and rounding, and the missing-value rule are in
docs/guide/units.md; applying descriptions to a whole input (the builders'
entry point) is :mod:`pydp_synopsis.units`.
"""
import dataclasses
import datetime as _dt
import math
import re
import zoneinfo
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np

from .categories import all_levels, bound_codes, check_levels, describe_levels, level_codes
from .errors import FormatError, InputError, ParameterError
from .isotimes import iso_days, iso_naive_datetimes
from .inputs import clip_integers, parse_scale, to_fixed_point
from .walltimes import wall_time_utc

__all__ = ["Column", "KINDS", "DATETIME_UNITS", "ISO_DATE", "ISO_DATETIME", "parse_resolution",
           "missing_mask", "missing_message", "is_pandas", "is_tz_aware", "as_array"]

#: The kinds of a column.
KINDS = ("integer", "decimal", "date", "datetime", "category")
#: Units of a datetime column.
DATETIME_UNITS = ("s", "ms", "us", "ns")
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_SUFFIX = {"ns": ("ns", 1), "us": ("us", 1), "ms": ("ms", 1), "s": ("s", 1), "min": ("s", 60),
           "m": ("s", 60), "h": ("s", 3600), "d": ("D", 1), "D": ("D", 1), "w": ("D", 7)}
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
ISO_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.(\d{1,9}))?)?)"
                       r"(Z|[+-]\d{2}:?\d{2})?$")
_MISSING_STRINGS = ("", "NA", "N/A", "NaN", "nan", "NULL", "null", "None", "NaT")
_POWERS = frozenset(10**k for k in range(19))
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def parse_resolution(resolution, name="resolution"):
    """A resolution as ``("D" | "s" | "ms" | "us" | "ns", step)`` for times or
    ``(None, Fraction)`` for numbers.

    ``"1h"``, ``"15min"``, ``"30s"``, ``"100ms"``, ``"1d"``, ``"1w"`` are time
    resolutions; a number or a decimal string (``0.01``, ``"0.25"``) is a
    real one (a float stands for its shortest decimal form: ``0.1`` is 1/10).

    Examples
    --------
    >>> parse_resolution("1h"), parse_resolution("0.25"), parse_resolution(0.1)
    (('s', 3600), (None, Fraction(1, 4)), (None, Fraction(1, 10)))
    """
    if isinstance(resolution, str):
        m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]+)\s*", resolution)
        if m:
            if m.group(2) not in _SUFFIX:
                raise ParameterError(f"{name}: unknown time unit {m.group(2)!r} (use ns, us, ms, "
                                     f"s, min, h, d or w, e.g. '1h')")
            unit, mult = _SUFFIX[m.group(2)]
            step = int(m.group(1)) * mult
            if step < 1:
                raise ParameterError(f"{name} must be positive, got {resolution!r}")
            return unit, step
    if isinstance(resolution, bool) or not isinstance(resolution, (str, int, float, Decimal,
                                                                   Fraction)):
        raise TypeError(f"{name} must be a number, a decimal string or a time such as '1h', "
                        f"not {type(resolution).__name__}")
    try:
        r = Fraction(repr(resolution) if isinstance(resolution, float) else resolution)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise ParameterError(f"{name} must be a positive number (e.g. 0.01) or a time such as "
                             f"'1h', got {resolution!r}") from None
    if r <= 0 or r.denominator > 10**18 or r.numerator > 10**18:
        raise ParameterError(f"{name} must be a positive number of at most 18 digits, "
                             f"got {resolution!r}")
    return None, r


def _fraction_text(r):
    """A Fraction as its exact decimal string when it has one, else ``"p/q"``."""
    d = r.denominator
    while d % 2 == 0:
        d //= 2
    while d % 5 == 0:
        d //= 5
    if d != 1:
        return f"{r.numerator}/{r.denominator}"
    k = 0
    while (r * 10**k).denominator != 1:
        k += 1
    return format(Decimal(r.numerator * 10**k // r.denominator).scaleb(-k), "f")


@dataclasses.dataclass(frozen=True)
class Column:
    """What the integers of one axis stand for (frozen; part of a saved synopsis).

    Parameters
    ----------
    name : str, optional
        The column's name (a file's, a table's, a DataFrame's).
    kind : {"integer", "decimal", "date", "datetime"}
    scale : int
        ``decimal`` only: a power of ten ``10**k`` (1 to ``10**18``); a value
        ``v`` becomes ``v * 10**k`` rounded half to even (exact).  Also
        given as ``"1e5"`` to :meth:`decimal`.
    resolution : str, optional
        ``decimal`` only, instead of ``scale``: an exact positive decimal
        (``"0.25"``) or ``"p/q"``; ``v`` becomes ``floor(v / resolution)``.
    unit : {"s", "ms", "us", "ns"}, optional
        ``datetime`` only (default ``"s"``).
    step : int
        ``date``: days per integer; ``datetime``: units per integer (a
        resolution ``"1h"`` is ``unit="s", step=3600``).  Values are floored.
    tz : str, optional
        ``datetime`` only: an IANA time zone (``"UTC"``, ``"Europe/Paris"``).
        The integers are then UTC instants; naive values given to such a
        column are read as wall times in ``tz``.  ``None``: naive wall times.
    levels : tuple of str or int, optional
        ``category`` only: the public, ordered, distinct levels; the integers
        are their codes ``0 .. L - 1`` (:mod:`pydp_synopsis.categories`).
    other : str or int, optional
        ``category`` only: the level (code ``L``) that values outside the
        levels count under; None: such values are refused.

    Examples
    --------
    >>> Column.date("day").to_int(["2001-03-01", "1969-12-31"]).tolist()
    [11382, -1]
    >>> Column.decimal("lat", scale="1e5").to_int(["40.712805", "-75.5"]).tolist()
    [4071280, -7550000]
    >>> Column.datetime("t", resolution="1h").format(2)
    '1970-01-01T02:00:00'
    """

    name: object = None
    kind: str = "integer"
    scale: int = 1
    resolution: object = None
    unit: object = None
    step: int = 1
    tz: object = None
    levels: object = None
    other: object = None

    def __post_init__(self):
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"a column name must be a str, not {type(self.name).__name__}")
        if self.kind not in KINDS:
            raise ParameterError(f"column kind must be one of {', '.join(KINDS)}, "
                                 f"got {self.kind!r}")
        if isinstance(self.scale, bool) or not isinstance(self.scale, int) \
                or self.scale not in _POWERS:
            raise ParameterError(f"column scale must be a power of ten 10**k, 0 <= k <= 18, "
                                 f"got {self.scale!r}")
        if isinstance(self.step, bool) or not isinstance(self.step, int) \
                or not 1 <= self.step <= 10**15:
            raise ParameterError(f"column step must be an integer in [1, 1e15], got {self.step!r}")
        kind = self.kind
        if kind != "category" and (self.levels is not None or self.other is not None):
            raise ParameterError("levels= and other= belong to a category column")
        if kind == "category":
            levels, other = check_levels(self.levels, self.other, _MISSING_STRINGS)
            object.__setattr__(self, "levels", levels)
            object.__setattr__(self, "other", other)
        if kind != "decimal" and (self.scale != 1 or self.resolution is not None):
            raise ParameterError(f"a {kind} column has no scale or real resolution")
        if kind == "decimal":
            if self.scale != 1 and self.resolution is not None:
                raise ParameterError("a decimal column has a scale or a resolution, not both")
            if self.resolution is not None:
                unit, r = parse_resolution(self.resolution)
                if unit is not None:
                    raise ParameterError(f"a decimal column's resolution is a number, "
                                         f"got {self.resolution!r}")
                object.__setattr__(self, "resolution", _fraction_text(r))
        if kind != "datetime" and (self.unit is not None or self.tz is not None):
            raise ParameterError(f"a {kind} column has no time unit or time zone")
        if kind in ("integer", "decimal") and self.step != 1:
            raise ParameterError(f"a {kind} column has no step")
        if kind == "datetime":
            unit = "s" if self.unit is None else self.unit
            if unit not in DATETIME_UNITS:
                raise ParameterError(f"datetime unit must be one of {', '.join(DATETIME_UNITS)}, "
                                     f"got {unit!r}")
            object.__setattr__(self, "unit", unit)
            if self.tz is not None:
                _zone(self.tz)

    # ------------------------------------------------------------ factories
    @classmethod
    def integer(cls, name=None):
        """An integer column (the values are the integers)."""
        return cls(name, "integer")

    @classmethod
    def decimal(cls, name=None, *, scale=None, resolution=None):
        """A decimal column: ``scale`` a power of ten (``1e5`` or ``100000``) or a
        real ``resolution`` (``0.01``), exactly one of them."""
        if (scale is None) == (resolution is None):
            raise ParameterError("a decimal column needs scale= (a power of ten) or "
                                 "resolution= (a number), exactly one")
        if scale is not None:
            return cls(name, "decimal", scale=10**parse_scale(scale))
        return cls(name, "decimal", resolution=_fraction_text(parse_resolution(resolution)[1]))

    @classmethod
    def date(cls, name=None, *, resolution=None):
        """A date column (days since 1970-01-01); ``resolution``: ``"1d"``, ``"7d"``, ``"1w"``."""
        step = 1
        if resolution is not None:
            unit, step = parse_resolution(resolution)
            if unit != "D":
                raise ParameterError(f"a date column's resolution is whole days (e.g. '7d'), "
                                     f"got {resolution!r}")
        return cls(name, "date", step=step)

    @classmethod
    def datetime(cls, name=None, *, unit=None, tz=None, resolution=None):
        """A datetime column of ``unit`` (default ``"s"``); ``resolution`` such as
        ``"1h"`` bins it (unit ``"s"``, step 3600)."""
        step = 1
        if resolution is not None:
            r_unit, step = parse_resolution(resolution)
            if r_unit is None:
                raise ParameterError(f"a datetime column's resolution is a time such as '1h', "
                                     f"got {resolution!r}")
            if r_unit == "D":
                r_unit, step = "s", step * 86400
            if unit is not None and unit != r_unit:
                step = step * _PER_SECOND[unit] // _PER_SECOND[r_unit] \
                    if _PER_SECOND[unit] >= _PER_SECOND[r_unit] else None
                if step is None or step < 1:
                    raise ParameterError(f"resolution {resolution!r} is finer than the unit "
                                         f"{unit!r}")
                r_unit = unit
            unit = r_unit
        return cls(name, "datetime", unit=unit, tz=tz, step=step)

    @classmethod
    def category(cls, levels, *, other=None, name=None):
        """A category column: the public, ordered, distinct ``levels`` (str or int)
        stand for the codes ``0 .. L - 1``; a value outside them counts under
        ``other`` (code ``L``) when given, else is refused (docs/guide/categories.md).

        >>> col = Column.category(["AA", "UA", "WN"], other="other", name="carrier")
        >>> col.to_int(["WN", "AA", "XX"]).tolist(), col.format(3)
        ([2, 0, 3], 'other')
        """
        return cls(name, "category", levels=levels, other=other)

    @property
    def all_levels(self):
        """A category column's levels in code order (``other`` last when given)."""
        return all_levels(self.levels, self.other) if self.kind == "category" else None

    # --------------------------------------------------------------- record
    def to_record(self):
        """The JSON description stored in a synopsis's meta (``columns``)."""
        out = {"name": self.name, "kind": self.kind}
        if self.kind == "decimal":
            out.update(scale=self.scale, resolution=self.resolution)
        elif self.kind == "date":
            out.update(step=self.step)
        elif self.kind == "datetime":
            out.update(unit=self.unit, step=self.step, tz=self.tz)
        elif self.kind == "category":
            out.update(levels=list(self.levels), other=self.other)
        return out

    @classmethod
    def from_record(cls, rec):
        """Strict inverse of :meth:`to_record` (any deviation: FormatError)."""
        keys = {"integer": {"name", "kind"},
                "decimal": {"name", "kind", "scale", "resolution"},
                "date": {"name", "kind", "step"},
                "datetime": {"name", "kind", "unit", "step", "tz"},
                "category": {"name", "kind", "levels", "other"}}
        if not isinstance(rec, dict) or rec.get("kind") not in keys \
                or set(rec) != keys[rec["kind"]]:
            raise FormatError("malformed column description")
        for key in ("scale", "step"):
            if key in rec and type(rec[key]) is not int:
                raise FormatError(f"malformed column description ({key})")
        for key in ("name", "resolution", "unit", "tz"):
            if rec.get(key) is not None and not isinstance(rec[key], str):
                raise FormatError(f"malformed column description ({key})")
        if "levels" in rec and not isinstance(rec["levels"], list):
            raise FormatError("malformed column description (levels)")
        try:
            col = cls(**rec)
        except (ParameterError, TypeError, ValueError) as exc:
            raise FormatError(f"malformed column description ({exc})") from None
        if col.to_record() != rec:
            raise FormatError("malformed column description (not in canonical form)")
        return col

    # ------------------------------------------------------------- describe
    @property
    def digits(self):
        """``k`` of a decimal column's ``scale = 10**k``."""
        return len(str(self.scale)) - 1

    @property
    def is_plain(self):
        """True for an integer column: its user values are its integers."""
        return self.kind == "integer"

    def describe(self):
        """A short public description: ``"date"``, ``"decimal (scale 1e5)"``, ...

        >>> Column.datetime("t", tz="UTC", resolution="1h").describe()
        'datetime (unit s, step 3600, time zone UTC)'
        """
        if self.kind == "decimal":
            return (f"decimal (scale 1e{self.digits})" if self.resolution is None
                    else f"decimal (resolution {self.resolution}, floored)")
        if self.kind == "date":
            return "date" if self.step == 1 else f"date (step {self.step} days)"
        if self.kind == "datetime":
            parts = [f"unit {self.unit}"] + ([f"step {self.step}"] if self.step != 1 else [])
            parts += [f"time zone {self.tz}"] if self.tz else []
            return f"datetime ({', '.join(parts)})"
        if self.kind == "category":
            return describe_levels(self.levels, self.other)
        return "integer"

    # ----------------------------------------------------- user -> integers
    def to_int(self, values, what="values", bound=None, utc=None, clip=None):
        """Integers (int64, or the integers given) of user ``values`` (any shape).

        ``clip``: the column's domain on the integer grid; every value is
        clipped to it, a value beyond int64 after conversion included (it
        becomes ``lo`` or ``hi`` by its sign) instead of being refused.

        ``bound="hi"``: an inclusive upper query bound (a date alone in a
        datetime column then means the end of that day).  Missing values
        must have been removed (:func:`missing_mask`).  ``utc``: the
        ``datetime64`` values are UTC instants (a time-zone-aware column
        read as numpy); None: detected (pandas time-zone-aware dtypes).

        Raises
        ------
        TypeError
            A value of the wrong type for the column's kind (a float that is
            not whole in an integer column, a date in a decimal column).
        InputError
            A string that is not an ISO date/datetime or a decimal, naming
            ``what`` (never the value nor its row).
        """
        if utc is None:
            utc = is_tz_aware(values)
        arr = as_array(values)
        shape = arr.shape
        flat = arr.reshape(-1)
        if self.kind == "integer":
            out = _to_integers(flat, what, clip)
        elif self.kind == "category":       # data: other or refused; bounds: levels only
            out = (level_codes if bound is None else bound_codes)(
                self.levels, self.other, flat, what, self.name)
        elif self.kind == "decimal":
            out = self._decimal(flat, what, clip)
        else:
            out = self._time(flat, what, bound, utc, clip)
        if clip is not None:
            out = clip_integers(out, clip)
        return out.reshape(shape)

    def _decimal(self, flat, what, clip=None):
        if flat.dtype.kind in "mM":
            raise TypeError(f"{what}: dates and times given for a decimal column"
                            f"{'' if self.name is None else f' ({self.name!r})'}")
        if flat.dtype.kind == "O":
            flat = np.array([_decimal_text(v, what) for v in flat.tolist()], dtype=str) \
                if flat.size else np.zeros(0, dtype=np.int64)
        if self.resolution is None:
            if clip is not None:
                return to_fixed_point(flat, self.scale, what, clip)
            return _as_i64(to_fixed_point(flat, self.scale, what), what)
        r = Fraction(self.resolution)
        if flat.dtype.kind in "iu":
            return np.array([(int(v) * r.denominator) // r.numerator for v in flat.tolist()],
                            dtype=np.int64 if clip is None else object)
        if flat.dtype.kind == "f":
            return _floor_floats(flat, r, what, clip)
        if flat.dtype.kind == "b":
            raise TypeError(f"{what} is boolean, not numeric")
        strings = np.char.strip(flat.astype(str))
        out = np.empty(len(strings), dtype=np.int64 if clip is None else object)
        for i, s in enumerate(strings.tolist()):
            try:
                d = Decimal(s)
                if not d.is_finite():
                    raise InvalidOperation
            except InvalidOperation:
                raise InputError(f"{what}: a value is not a decimal number") from None
            out[i] = math.floor(Fraction(d) / r)
        return out

    def _unit_step(self):
        return ("D", self.step) if self.kind == "date" else (self.unit, self.step)

    def _time(self, flat, what, bound, utc=False, clip=None):
        unit, step = self._unit_step()
        if flat.dtype.kind in "iufb":
            raise TypeError(f"{what}: numbers given for a {self.kind} column"
                            f"{'' if self.name is None else f' ({self.name!r})'} "
                            f"(give dates or ISO strings such as '2001-03-01')")
        if self.kind == "date" and flat.size > 1 and (flat.dtype.kind == "U" or (
                flat.dtype.kind == "O" and all(isinstance(v, str) for v in flat.tolist()))):
            days, bad = iso_days(flat)
            if bad is None:
                return np.floor_divide(days, step)
            # not all ISO dates: the one by one path names the first bad row
        if self.kind == "datetime" and bound is None and flat.size > 1 and (
                flat.dtype.kind == "U" or (flat.dtype.kind == "O" and
                                           all(isinstance(v, str) for v in flat.tolist()))):
            parsed = iso_naive_datetimes(flat)
            if parsed is not None:
                flat = parsed           # naive wall times: the datetime64 path below
        if flat.dtype.kind == "M":
            if utc and self.tz is None and self.kind == "datetime":
                raise TypeError(f"{what}: time-zone-aware times given for the naive datetime "
                                f"column {self.name!r} (give its time zone: tz=)")
            big = _beyond_unit(flat, unit) if clip is not None else None
            if big is not None:
                late = flat.view(np.int64) > 0
                flat = np.where(big, np.zeros(1, dtype=flat.dtype), flat)
            ticks = flat.astype(f"datetime64[{unit}]").view(np.int64)   # numpy floors
            if self.tz is not None and not utc:
                ticks = _localize_ticks(flat, unit, self.tz, what)
            if big is not None:         # beyond int64 ticks: lo or hi by sign (clip)
                out = np.floor_divide(ticks, step).astype(object)
                out[big & late], out[big & ~late] = clip[1], clip[0]
                return out
        else:
            single = flat.size == 1
            # with clip, ticks beyond int64 (a year-9999 time in nanoseconds) are kept
            # exact and clipped once divided by the step
            ticks = np.array([self._one_tick(v, unit, what, None if single else i, bound)
                              for i, v in enumerate(flat.tolist())],
                             dtype=np.int64 if clip is None else object)
        return np.floor_divide(ticks, step)

    def _one_tick(self, v, unit, what, row, bound):
        """One user value as ticks of ``unit`` (floored), exact integer arithmetic."""
        end_of_day = False
        if isinstance(v, str):
            s = v.strip()
            if ISO_DATE.match(s):
                try:
                    v = _dt.date.fromisoformat(s)
                except ValueError:
                    raise InputError(f"{what}: a value is not a valid date") from None
                end_of_day = bound == "hi" and self.kind == "datetime"
            elif ISO_DATETIME.match(s):
                return self._iso_ticks(s, unit, what, row)
            else:
                raise InputError(f"{what}: a value is not an ISO "
                                 f"{'date (YYYY-MM-DD)' if self.kind == 'date' else 'datetime'}")
        if isinstance(v, np.datetime64):
            return int(np.array([v]).astype(f"datetime64[{unit}]").view(np.int64)[0]) \
                if self.tz is None else self._one_tick(v.item(), unit, what, row, bound)
        if isinstance(v, _dt.datetime):
            return self._datetime_ticks(v, unit, what, getattr(v, "nanosecond", 0))
        if isinstance(v, _dt.date):
            if end_of_day:
                nxt = self._datetime_ticks(_dt.datetime(v.year, v.month, v.day) +
                                           _dt.timedelta(days=1), unit, what, 0)
                return nxt - 1
            if unit == "D":
                return (v - _EPOCH.date()).days
            return self._datetime_ticks(_dt.datetime(v.year, v.month, v.day), unit, what, 0)
        raise TypeError(f"{what}: a {type(v).__name__} given for {self.kind} column "
                        f"{self.name!r} (give dates, datetimes or ISO strings)")

    def _datetime_ticks(self, v, unit, what, nanosecond):
        if v.tzinfo is not None:
            if self.tz is None and self.kind == "datetime":
                raise TypeError(f"{what}: a time-zone-aware time given for the naive datetime "
                                f"column {self.name!r} (give its time zone: tz=)")
            v = v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        elif self.tz is not None:
            v = wall_time_utc(v, _zone(self.tz), self.tz, what)
        delta = v - _EPOCH
        us = (delta.days * 86400 + delta.seconds) * 10**6 + delta.microseconds
        ns = us * 1000 + nanosecond
        if unit == "D":
            return ns // (86400 * 10**9)
        return ns // (10**9 // _PER_SECOND[unit])

    def _iso_ticks(self, s, unit, what, row):
        m = ISO_DATETIME.match(s)
        frac = m.group(3) or ""
        base = s.replace(f".{frac}", "") if frac else s
        if base.endswith("Z"):
            base = base[:-1] + "+00:00"
        try:
            v = _dt.datetime.fromisoformat(base)
        except ValueError:
            raise InputError(f"{what}: a value is not a valid ISO datetime") from None
        return self._datetime_ticks(v, unit, what, int(frac.ljust(9, "0")) if frac else 0)

    # ----------------------------------------------------- integers -> user
    def values(self, ints):
        """User values of integers: int64 (integer), Decimal objects (decimal: the
        value, or its bin's lower end), ``datetime64[D]`` (date) or
        ``datetime64[unit]`` (datetime; UTC for a column with a time zone)."""
        arr = np.asarray(ints)
        if self.kind == "integer":
            return arr
        if self.kind == "category":
            return np.array(self.all_levels, dtype=object)[arr.astype(np.int64)]
        if self.kind == "decimal":
            return np.array([self._decimal_value(int(v)) for v in arr.ravel().tolist()],
                            dtype=object).reshape(arr.shape)
        unit, step = self._unit_step()
        return (arr.astype(np.int64) * step).astype(f"datetime64[{unit}]")

    def _decimal_value(self, v):
        if self.resolution is None:
            return Decimal(v).scaleb(-self.digits)
        r = Fraction(self.resolution)
        x = v * r
        if "/" in self.resolution:
            return Decimal(x.numerator) / Decimal(x.denominator)
        return Decimal(_fraction_text(x)) if x else Decimal(0)

    def format(self, v):
        """One integer as the user value it stands for, as text (ISO dates and
        times, in the column's time zone with its offset; exact decimals)."""
        v = int(v)
        if self.kind == "integer":
            return str(v)
        if self.kind == "category":
            return str(self.all_levels[v])
        if self.kind == "decimal":
            return format(self._decimal_value(v), "f")
        unit, step = self._unit_step()
        if self.kind == "date":
            return str(np.datetime64(v * step, "D"))
        ticks = v * step
        text = str(np.datetime64(ticks, unit))
        if self.tz is None:
            return text
        per = _PER_SECOND[unit]
        secs, sub = divmod(ticks, per)
        try:
            local = (_EPOCH_UTC + _dt.timedelta(seconds=secs)).astimezone(_zone(self.tz))
        except (OverflowError, ValueError):
            return f"{text}Z"          # beyond Python's years 1-9999: shown in UTC
        digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[unit]
        frac = f".{sub:0{digits}d}" if digits else ""
        off = local.strftime("%z")
        return f"{local.strftime('%Y-%m-%dT%H:%M:%S')}{frac}{off[:3]}:{off[3:]}"


# ------------------------------------------------------------------ helpers
def _zone(tz):
    if not isinstance(tz, str):
        raise TypeError(f"a time zone must be a name such as 'UTC', not {type(tz).__name__}")
    if tz.upper() == "UTC":
        return _dt.timezone.utc
    try:
        return zoneinfo.ZoneInfo(tz)
    except (ValueError, OSError, LookupError):
        raise ParameterError(f"unknown time zone {tz!r} (an IANA name such as 'Europe/Paris')") \
            from None


def _as_i64(arr, what):
    arr = np.asarray(arr)
    if arr.dtype != np.int64:
        raise InputError(f"{what}: a value is too large for int64")
    return arr


#: Beyond this decimal exponent a value is written as a bound of the same side: every
#: value past 10^60 overflows int64 whatever the scale, every one below 10^-60 rounds to 0
#: (``format(v, "f")`` of ``1E+999999999999999999`` would write 10^18 digits).
_EXPONENT_LIMIT = 60


def _decimal_text(v, what):
    if isinstance(v, Decimal):
        if not v.is_finite():
            raise InputError(f"{what}: NaN or infinity is not a decimal number")
        if v and v.adjusted() > _EXPONENT_LIMIT:
            return ("-1" if v.is_signed() else "1") + "0" * (_EXPONENT_LIMIT + 1)
        if v and v.adjusted() < -_EXPONENT_LIMIT:
            return "0"
        return format(v, "f")
    if isinstance(v, bool):
        raise TypeError(f"{what} is boolean, not numeric")
    if isinstance(v, float):
        if not math.isfinite(v):
            raise InputError(f"{what}: NaN or infinity is not a decimal number")
        return format(Decimal(repr(v)), "f")   # its shortest decimal form (inputs.py's rule)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, str):
        return v
    raise TypeError(f"{what}: a {type(v).__name__} is not a decimal number")


def _beyond_unit(times, unit):
    """Mask of the ``datetime64`` values whose ticks of the finer ``unit`` overflow int64
    (numpy would wrap them silently); None when none does."""
    src = np.datetime_data(times.dtype)[0]
    try:
        factor = np.timedelta64(1, src) // np.timedelta64(1, unit)
    except (TypeError, ValueError):     # years and months: no fixed factor
        return None
    if factor <= 1:
        return None
    big = np.abs(times.view(np.int64)) > (2**63 - 1) // int(factor)
    return big if big.any() else None


def _floor_floats(x, r, what, clip=None):
    """``floor(x / r)`` exactly, each float ``x`` standing for its shortest
    decimal form (``0.3`` is 3/10, so ``0.3`` at resolution ``0.1`` is bin 3),
    the rule of every float parameter of the package."""
    x = np.asarray(x, dtype=np.float64)
    if np.isnan(x).any() or (clip is None and not np.isfinite(x).all()):
        raise InputError(f"{what} holds NaN or infinity")
    q = x / float(r)
    big = ~(np.abs(q) < 2.0**62)
    if clip is not None and big.any():        # beyond int64: lo or hi by sign
        out = np.empty(x.shape, dtype=object)
        out[~big] = _floor_floats(x[~big], r, what).astype(object)
        out[big & (x > 0)], out[big & (x < 0)] = clip[1], clip[0]
        return out
    if big.any():
        raise InputError(f"{what}: a value is too large for int64 at resolution {r}")
    out = np.floor(q).astype(np.int64)
    # the float quotient is within a few ulps of the exact one: only quotients
    # that near an integer can floor the wrong way; redo those exactly
    near = np.abs(q - np.rint(q)) <= 8 * np.spacing(np.abs(q)) + 1e-300
    for i in np.flatnonzero(near):
        out[i] = math.floor(Fraction(repr(float(x[i]))) / r)
    return out


def _to_integers(flat, what, clip=None):
    """An integer column's values: integers as given; whole floats and integer
    strings converted exactly; anything else refused naming ``what``."""
    kind = flat.dtype.kind
    if kind in "iu":
        return flat
    if kind == "f":
        if not (flat == np.rint(flat)).all():
            raise TypeError(f"{what} holds non-integer numbers: give resolution= (e.g. 0.01) "
                            f"or scale= (e.g. 1e6) to convert them exactly")
        big = np.abs(flat) >= 2.0**63
        if big.any():
            if clip is None:
                raise InputError(f"{what}: a value is outside the int64 range")
            out = np.empty(flat.shape, dtype=object)
            out[~big] = flat[~big].astype(np.int64).astype(object)
            out[big & (flat > 0)], out[big & (flat < 0)] = clip[1], clip[0]
            return out
        return flat.astype(np.int64)
    if kind in "mM":
        raise TypeError(f"{what}: dates or times given for an integer column (give the "
                        f"domain as dates, e.g. ('2001-01-01', '2001-12-31'))")
    if kind == "b":
        raise TypeError(f"{what} must be integers, not booleans")
    if kind == "O":
        items = flat.tolist()
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            return flat
        if all(isinstance(v, (int, float, np.integer, np.floating, Decimal)) and
               not isinstance(v, bool) for v in items):
            out = []
            for v in items:
                if isinstance(v, (float, np.floating, Decimal)) and v != int(v):
                    raise TypeError(f"{what} holds non-integer numbers: give resolution= or "
                                    f"scale= to convert them exactly")
                out.append(int(v))
            return np.array(out, dtype=object)
        for v in items:
            if isinstance(v, (_dt.date, np.datetime64)):
                raise TypeError(f"{what}: dates or times given for an integer column (give "
                                f"the domain as dates, e.g. ('2001-01-01', '2001-12-31'))")
        flat = np.array([str(v) for v in items], dtype=str) if items else flat
    try:
        return to_fixed_point(flat, None, what, clip)
    except InputError as exc:
        raise InputError(str(exc)) from None


def _localize_ticks(flat, unit, tz, what):
    """Naive ``datetime64`` values as wall times in ``tz`` -> UTC ticks of ``unit``."""
    try:
        import pandas as pd
    except ImportError:
        pd = None
    if pd is not None:
        try:
            idx = pd.DatetimeIndex(flat).tz_localize(tz, ambiguous="raise",
                                                     nonexistent="raise").tz_convert("UTC")
        except Exception:
            raise InputError(f"{what}: a wall time that does not exist in time zone {tz} "
                             f"(skipped by a daylight-saving change) or occurs twice there: "
                             f"give times that exist there once, or with their UTC "
                             f"offset") from None
        return idx.tz_localize(None).to_numpy().astype(f"datetime64[{unit}]").view(np.int64)
    col = Column("x", "datetime", unit=unit, tz=tz)
    return np.array([col._datetime_ticks(v.item() if unit != "ns" else v.astype("datetime64[us]")
                                         .item(), unit, what, 0) for v in flat], dtype=np.int64)


def is_tz_aware(values):
    """True for a pandas Series/Index of time-zone-aware times."""
    return is_pandas(values) and type(getattr(values, "dtype", None)).__name__ == \
        "DatetimeTZDtype"


def is_pandas(obj):
    return (type(obj).__module__ or "").startswith("pandas")


def as_array(values):
    """numpy view of user values (pandas objects: tz-aware times as UTC, nullable
    integers as objects with None for NA)."""
    if is_pandas(values):
        import pandas as pd
        dtype = getattr(values, "dtype", None)
        if isinstance(dtype, pd.DatetimeTZDtype):
            return np.asarray(pd.Series(values).dt.tz_convert("UTC").dt.tz_localize(None)
                              .to_numpy())
        if isinstance(dtype, pd.api.extensions.ExtensionDtype) and not isinstance(
                dtype, pd.CategoricalDtype):
            arr = pd.Series(values).to_numpy(dtype=object, na_value=None)
            if dtype.kind in "iu" and not any(v is None for v in arr.tolist()):
                return np.asarray(arr.tolist(), dtype=dtype.numpy_dtype)
            return arr
        return np.asarray(values)
    if isinstance(values, (str, bytes, _dt.date, Decimal)):
        return np.array([values], dtype=object).reshape(())
    if isinstance(values, np.ndarray):
        return values
    arr = np.asarray(values)
    if arr.dtype.kind in "US" or (arr.dtype.kind == "f" and not all(
            isinstance(v, float) for v in np.asarray(values, dtype=object).ravel().tolist())):
        return np.asarray(values, dtype=object)
    return arr


def missing_mask(values):
    """Boolean mask of the missing entries of a 1-D column: None, NaN, NaT,
    ``pandas.NA`` and the strings ``""``, ``"NA"``, ``"NaN"``, ``"NULL"``..."""
    arr = as_array(values)
    kind = arr.dtype.kind
    if kind == "f":
        return np.isnan(arr)
    if kind in "mM":
        return np.isnat(arr)
    if kind in "US":
        return np.isin(np.char.strip(arr.astype(str)), _MISSING_STRINGS)
    if kind == "O":
        out = np.zeros(arr.shape, dtype=bool)
        for i, v in enumerate(arr.ravel().tolist()):
            if v is None or (isinstance(v, float) and math.isnan(v)) or \
                    (isinstance(v, str) and v.strip() in _MISSING_STRINGS) or \
                    (isinstance(v, Decimal) and v.is_nan()) or _is_pandas_missing(v):
                out.flat[i] = True
        return out
    return np.zeros(arr.shape, dtype=bool)


def _is_pandas_missing(v):
    name = type(v).__name__
    return name in ("NAType", "NaTType")


def missing_message(what, column):
    """The one line every reader prints for a missing value: the column and the rule,
    never the value nor the row holding it (a row number is data: it tells where the
    value is and that the table has at least that many rows)."""
    col = f"column {column!r}" if column is not None else "a column"
    return (f"{what}{col} holds NULL values: missing values (NULL, NA, NaN or empty) "
            f"are refused; drop such rows with dropna=True or fill them")
