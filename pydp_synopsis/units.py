"""User units at the builders' entry: user data -> integer columns and domains.

:func:`prepare_build` is the one entry every builder calls with what the user
gave (an array, a DataFrame, a Source, and ``columns=``/``scale=``/
``resolution=``/``dropna=``): it describes each axis with a
:class:`~pydp_synopsis.columns.Column` (from public things only: the arguments,
the domain's bounds and the data's dtype, never its values) and converts the
data and the domain to integers, drawing nothing and charging nothing.
:func:`convert_corners` does the same for query corners, and
:func:`convert_chunk` for one chunk of a streamed source.  The conversions of
one column are :class:`~pydp_synopsis.columns.Column`'s (docs/guide/units.md);
the ``columns`` and ``clipped`` fields of a saved synopsis' meta are written
and read here.
"""
import dataclasses
import datetime as _dt
from decimal import Decimal
from fractions import Fraction

import numpy as np

from .errors import FormatError, InputError, ParameterError
from .inputs import to_fixed_point
from .params import check_domain
from .unitmessages import remember_domains
from .columns import (DATETIME_UNITS, ISO_DATE, ISO_DATETIME, KINDS, Column, as_array,
                      is_pandas, is_tz_aware, missing_mask, missing_message, parse_resolution)

# Column and its vocabulary are re-exported: ``pydp_synopsis.units.Column`` is
# where release 0.1 and the command line import it from.
__all__ = ["prepare_build", "merge_carried", "describe_axes", "split_data", "convert_axes", "convert_corners",
           "needs_conversion", "convert_chunk",
           "columns_to_record", "columns_from_record", "clipped_from_record",
           "Column", "KINDS", "DATETIME_UNITS", "parse_resolution", "missing_mask",
           "missing_message"]


def needs_conversion(units):
    """True when a source must convert its columns in Python (some column is
    not a plain integer column)."""
    return units is not None and any(not col.is_plain for col in units)


def convert_chunk(cols, units, names, *, dropna=False, where="", scale=None, utc=None,
                  clip=None):
    """One chunk of a streamed source as integer columns.

    Missing values are dropped (``dropna``: the whole row) or refused with
    :func:`missing_message` naming the column; each column is then converted
    by its :class:`Column` (or, without ``units``, by
    :func:`~pydp_synopsis.inputs.to_fixed_point` with ``scale``), errors
    prefixed by ``where`` (never a value, never a row number); ``utc``: per column,
    whether its ``datetime64`` values are UTC instants (Parquet timestamps
    with a time zone); ``clip``: per column, the integer bounds to clip to
    (:meth:`Column.to_int`).  Returns ``(int_columns, rows_kept)``.
    """
    utc = utc or [is_tz_aware(x) for x in cols]
    cols = [as_array(x).reshape(-1) for x in cols]
    drop = None
    for x, name in zip(cols, names):
        miss = missing_mask(x)
        if miss.any():
            if not dropna:
                raise InputError(missing_message(where, name))
            drop = miss if drop is None else drop | miss
    kept = len(cols[0]) if cols else 0
    if drop is not None:
        keep = ~drop
        cols = [x[keep] for x in cols]
        kept = int(keep.sum())
    out = []
    for a, (x, name) in enumerate(zip(cols, names)):
        try:
            bounds = None if clip is None else clip[a]
            if units is None:
                out.append(to_fixed_point(_retype(x), scale, name, bounds))
            else:
                out.append(units[a].to_int(_retype(x), f"column {name!r}", utc=utc[a],
                                           clip=bounds))
        except (InputError, TypeError) as exc:
            raise InputError(f"{where}{exc}") from None
    return out, kept



def _label(name):
    """How a message names a column: by its name, or as "the column" when it has none
    (an unnamed array: never "column None")."""
    return "the column" if name is None else f"column {name!r}"


def _is_time_bound(v):
    return isinstance(v, (_dt.date, np.datetime64)) or (
        isinstance(v, str) and bool(ISO_DATE.match(v.strip()) or ISO_DATETIME.match(v.strip())))


def _datetime_unit_of(v):
    if isinstance(v, str):
        m = ISO_DATETIME.match(v.strip())
        digits = len(m.group(3) or "") if m else 0
    elif isinstance(v, _dt.datetime):
        digits = 9 if getattr(v, "nanosecond", 0) else (6 if v.microsecond else 0)
    else:
        digits = 0
    return "s" if digits == 0 else "ms" if digits <= 3 else "us" if digits <= 6 else "ns"


def _infer(name, data, domain, scale, resolution):
    """The column description of one axis from public things only: the
    arguments, the domain's bounds and the data's dtype (never its values)."""
    if scale is not None and resolution is not None:
        raise ParameterError(f"{_label(name)}: give scale= or resolution=, not both")
    dtype = getattr(data, "dtype", None)
    tz = None
    if is_pandas(data) or _is_dask(data):      # a dask collection's dtype is pandas'
        import pandas as pd
        if isinstance(dtype, pd.DatetimeTZDtype):
            tz = str(dtype.tz)
            dtype = np.dtype(f"datetime64[{dtype.unit}]")
    time_dtype = dtype is not None and getattr(dtype, "kind", "") == "M"
    try:
        lo, hi = domain
    except (TypeError, ValueError):
        raise TypeError(f"domain must be a pair (lo, hi), got {domain!r}") from None
    bounds_time = _is_time_bound(lo) and _is_time_bound(hi)
    if scale is not None:
        return Column.decimal(name, scale=scale)
    if resolution is not None:
        unit, _ = parse_resolution(resolution)
        if unit is None:
            return Column.decimal(name, resolution=resolution)
        if unit == "D" and not (time_dtype and np.datetime_data(dtype)[0] not in "DWMY") and \
                not any(isinstance(b, _dt.datetime) or (isinstance(b, str) and
                                                        ISO_DATETIME.match(b.strip()))
                        for b in (lo, hi)):
            return Column.date(name, resolution=resolution)
        return Column.datetime(name, tz=tz, resolution=resolution)
    date_bounds = all(isinstance(b, _dt.date) and not isinstance(b, _dt.datetime) or
                      (isinstance(b, str) and ISO_DATE.match(b.strip())) or
                      (isinstance(b, np.datetime64) and np.datetime_data(b.dtype)[0] == "D")
                      for b in (lo, hi))
    if time_dtype and date_bounds and tz is None:
        return Column.date(name)          # times binned into their days
    if time_dtype:
        unit = np.datetime_data(dtype)[0]
        if unit in ("D", "W", "M", "Y") and tz is None:
            return Column.date(name)
        if unit in ("h", "m"):
            return Column.datetime(name, tz=tz, resolution=f"1{'h' if unit == 'h' else 'min'}")
        return Column.datetime(name, unit=unit if unit in DATETIME_UNITS else "ns", tz=tz)
    if bounds_time:
        if date_bounds:
            return Column.date(name)
        units = [_datetime_unit_of(b) for b in (lo, hi)]
        return Column.datetime(name, unit=max(units, key=DATETIME_UNITS.index))
    if _is_time_bound(lo) or _is_time_bound(hi):
        raise TypeError(f"domain of {_label(name)}: both bounds must be dates (or times), "
                        f"got {domain!r}")
    for b in (lo, hi):
        if isinstance(b, (str, Decimal)) or (isinstance(b, float) and b != int(b)):
            raise TypeError(f"domain of {_label(name)} has a non-integer bound: give "
                            f"scale= (e.g. 1e5) or resolution= (e.g. 0.01)")
    return Column.integer(name)


def _per_axis(value, c, name):
    if value is None or isinstance(value, (str, int, float, Decimal, Fraction)):
        return [value] * c
    value = list(value)
    if len(value) != c:
        raise ParameterError(f"{name} must be one value or one per axis ({c}), got {len(value)}")
    return value


def _names_of(data, c):
    """Column names a DataFrame or Series carries, else Nones."""
    if is_pandas(data):
        cols = getattr(data, "columns", None)
        if cols is not None:
            return [str(x) for x in cols]
        name = getattr(data, "name", None)
        return [None if name is None else str(name)] * c if c == 1 else [None] * c
    return [None] * c


def describe_axes(data, domains, *, columns=None, scale=None, resolution=None):
    """One :class:`Column` per axis, or None when every axis is a plain unnamed
    integer axis with integer bounds (today's behaviour, bit for bit).

    ``data`` is the in-memory input (a list of 1-D columns' data for
    inference of dtypes only), or None for a Source.
    """
    c = len(domains)
    names = _names_of(data["frame"], c) if data is not None and columns is None else [None] * c
    given = columns
    if isinstance(given, (str, Column)):
        given = [given]
    if given is not None:
        given = list(given)
        if len(given) != c:
            raise ParameterError(f"columns must name or describe {c} column(s), got {len(given)}")
    scales, resolutions = _per_axis(scale, c, "scale"), _per_axis(resolution, c, "resolution")
    out = []
    for a in range(c):
        g = given[a] if given is not None else names[a]
        if isinstance(g, Column):
            if scales[a] is not None or resolutions[a] is not None:
                raise ParameterError("give scale=/resolution= or Column descriptions, not both")
            out.append(g)
            continue
        if g is not None and not isinstance(g, str):
            raise TypeError(f"columns must be names (str) or Column objects, "
                            f"not {type(g).__name__}")
        sample = data["columns"][a] if data is not None else None
        out.append(_infer(g, sample, domains[a], scales[a], resolutions[a]))
    if all(col == Column.integer() for col in out) and all(
            _plain_bounds(d) for d in domains):
        return None
    return tuple(out)


def _is_dask(data):
    return (type(data).__module__ or "").startswith("dask")


def _dask_columns(data, c):
    """A dask collection's columns, lazily, for their dtypes (datetimes, time zones: the
    same descriptions as pandas data get; nothing is computed); None for another
    source."""
    if not _is_dask(data):
        return None
    name = type(data).__name__
    if name == "DataFrame":
        cols = [data[k] for k in data.columns]
    elif name == "Array" and data.ndim == 2:
        cols = [data[:, a] for a in range(data.shape[1])]
    else:
        cols = [data]
    return {"frame": None, "columns": cols} if len(cols) == c else None


def _plain_bounds(domain):
    try:
        lo, hi = domain
    except (TypeError, ValueError):
        return True          # left to check_domain's message
    return all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (lo, hi))


def split_data(data, c):
    """``{"frame": data, "columns": [1-D data per axis]}`` of an in-memory input
    (a 1-D array or Series for c = 1; an (n, c) array, a list of rows or a
    DataFrame for c >= 1)."""
    if is_pandas(data) and hasattr(data, "columns"):
        cols = [data[k] for k in data.columns]
        if len(cols) != c:
            raise ParameterError(f"the DataFrame has {len(cols)} columns for a {c}-axis domain")
        return {"frame": data, "columns": cols}
    if c == 1 and (is_pandas(data) or np.ndim(data) <= 1 or isinstance(data, np.ndarray)):
        if isinstance(data, np.ndarray) and data.ndim == 2 and data.shape[1] == 1:
            return {"frame": data, "columns": [data[:, 0]]}
        return {"frame": data, "columns": [data]}
    arr = data if isinstance(data, np.ndarray) else _rows(data)
    if arr.ndim != 2 or arr.shape[1] != c:
        raise ParameterError(f"points must be an (n, {c}) array for a {c}-axis domain, "
                             f"got shape {arr.shape}")
    return {"frame": data, "columns": [arr[:, a] for a in range(c)]}


def _rows(data):
    arr = np.asarray(data)
    if arr.dtype.kind in "US" or arr.dtype.kind == "f":
        arr = np.asarray(data, dtype=object)
    return arr


def convert_axes(data, columns, domains, *, counts=None, dropna=False, what="values",
                 clip=False):
    """In-memory user data -> integer columns and integer domains.

    Returns ``(int_columns, int_domains, counts)``; rows with a missing value
    in any column are dropped when ``dropna`` (with their ``counts``), else
    refused (one line naming the column).  Draws
    nothing and charges nothing: call it before the budget.
    """
    aware = [is_tz_aware(x) for x in data["columns"]]
    cols = [as_array(x).reshape(-1) if np.ndim(as_array(x)) else as_array(x).reshape(1)
            for x in data["columns"]]
    if len({len(x) for x in cols}) > 1:
        raise ParameterError(f"{what}: the columns have different lengths")
    int_domains = []
    for col, dom in zip(columns, domains):
        lo, hi = dom
        bounds = [int(col.to_int(lo, f"domain of {_label(col.name)}", "lo")),
                  int(col.to_int(hi, f"domain of {_label(col.name)}", "hi"))]
        if col.is_plain:
            bounds = [lo, hi]        # check_domain sees what was given
        int_domains.append(tuple(bounds))
    remember_domains(columns, int_domains)        # messages show them in user units
    if clip:        # the bounds clipped to are checked first
        int_domains = [check_domain(d, "domain" if len(domains) == 1 else f"domain[{a}]")
                       for a, d in enumerate(int_domains)]
    drop = None
    for a, (x, col) in enumerate(zip(cols, columns)):
        miss = missing_mask(x)
        if miss.any():
            if not dropna:
                label = col.name if col.name is not None else (a if len(cols) > 1 else None)
                raise InputError(missing_message(f"{what}: ", label))
            drop = miss if drop is None else drop | miss
    if drop is not None:
        keep = ~drop
        cols = [x[keep] for x in cols]
        if counts is not None:
            counts = np.asarray(counts)[keep]
    out = []
    for a, (x, col) in enumerate(zip(cols, columns)):
        label = what if col.name is None and len(cols) == 1 else \
            f"{what} (column {col.name if col.name is not None else a!r})"
        out.append(col.to_int(_retype(x), label, utc=aware[a],
                              clip=int_domains[a] if clip else None))
    return out, int_domains, counts


def _retype(x):
    """An object column whose missing entries were dropped, retyped when it
    holds only numbers (nullable integers become int64)."""
    if x.dtype.kind == "O" and x.size:
        items = x.tolist()
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            try:
                return np.array(items, dtype=np.int64)
            except OverflowError:
                return x
    return x


def convert_corners(columns, lo, hi, vector):
    """Query corners in user units -> integer corners (same shapes).

    ``vector``: ``lo``/``hi`` are per-query arrays (intervals: shape (q,);
    rectangles: (q, c)); else one point (scalar or length-c).
    """
    c = len(columns)
    out = []
    for name, v, bound in (("lo", lo, "lo"), ("hi", hi, "hi")):
        arr = as_array(v)
        if c == 1:
            out.append(columns[0].to_int(arr, name, bound) if not columns[0].is_plain else v)
            continue
        if arr.ndim == 0 or arr.shape[-1] != c:
            raise ParameterError(f"{name} must have {c} coordinates per corner, got shape "
                                 f"{arr.shape}")
        if all(col.is_plain for col in columns):
            out.append(v)
            continue
        parts = [columns[a].to_int(arr[..., a], f"{name}[{a}]", bound) for a in range(c)]
        if any(p.dtype == object for p in parts):
            out.append(np.stack([p.astype(object) for p in parts], axis=-1))
        else:
            out.append(np.stack([p.astype(np.int64) for p in parts], axis=-1))
    return out


def merge_carried(carried, domains, columns=None, scale=None, resolution=None, sample=None):
    """The ``columns=`` of a build from a source that describes its columns.

    ``carried`` (:func:`pydp_synopsis.sources.carried_columns`): per axis the
    source's :class:`Column` or its name.  Units are given in one place: on
    the source, or on ``build()`` (``columns=``, ``scale=``, ``resolution=``),
    or on both when they agree; the source's names are kept either way.
    ``sample``: the source's columns for their dtypes (a dask collection's:
    :func:`describe_axes`), or None.

    Raises
    ------
    ParameterError
        The source and the build describe a column differently.
    """
    if carried is None:
        return columns
    c = len(domains)
    if len(carried) != c:
        return columns                    # left to the source's own dimension check
    names = [x.name if isinstance(x, Column) else x for x in carried]
    if columns is None and scale is None and resolution is None:
        return list(carried)
    given = [columns] if isinstance(columns, (str, Column)) else columns
    if given is not None:
        given = list(given)
        if len(given) != c:
            raise ParameterError(f"columns must name or describe {c} column(s), "
                                 f"got {len(given)}")
        given = [g if g is not None else n for g, n in zip(given, names)]
    else:
        given = names
    built = describe_axes(sample, domains, columns=given, scale=scale, resolution=resolution) \
        or tuple(Column.integer(n) for n in names)
    out = []
    for own, col in zip(carried, built):
        if isinstance(own, Column):
            if dataclasses.replace(own, name=None) != dataclasses.replace(col, name=None):
                raise ParameterError(
                    f"column {own.name!r}: the source reads it as {own.describe()} and build() "
                    f"was given {col.describe()}: give its units in one place")
            col = own if col.name is None else col
        elif col.name is None and own is not None:
            col = dataclasses.replace(col, name=own)
        out.append(col)
    return out


def prepare_build(data, domains, *, counts=None, columns=None, scale=None, resolution=None,
                  dropna=False, what="values", clip=False, source=False, carried=None):
    """The builders' one entry for user units (draws nothing, charges nothing).

    Returns ``(data, domains, counts, described)``: the data as integers
    (unchanged for a Source and for plain integer input), the integer
    domains, the counts (rows dropped with ``dropna``) and the tuple of
    :class:`Column` descriptions, or None for plain unnamed integer axes
    (today's behaviour, bit for bit).  ``clip``: values are clipped to the
    integer domains as they are converted (a Source and plain integers are
    clipped by the builder).  ``source``: ``data`` is a Source or a dask
    collection (:func:`pydp_synopsis.sources.is_source`; the builder wraps
    it, with ``dropna``, by :func:`pydp_synopsis.sources.as_source`), and
    ``carried`` what it says of its columns (:func:`merge_carried`).
    """
    if source:
        sample = _dask_columns(data, len(domains))
        columns, scale, resolution = merge_carried(carried, domains, columns, scale,
                                                   resolution, sample), None, None
    if not isinstance(dropna, bool):
        raise TypeError(f"dropna must be a bool, not {type(dropna).__name__}")
    c = len(domains)
    if columns is None and scale is None and resolution is None and not dropna \
            and not is_pandas(data) and all(_plain_bounds(d) for d in domains):
        return data, domains, counts, None       # plain integers: today's path, bit for bit
    if source:
        if dropna and not (type(data).__module__ or "").startswith("dask"):
            raise ParameterError("dropna= applies to arrays and dask collections; a "
                                 "Source takes dropna= itself (sources.files(..., "
                                 "dropna=True))")
        described = describe_axes(sample, domains, columns=columns, scale=scale,
                                  resolution=resolution)
        if described is None:
            return data, domains, counts, None
        ints = [tuple(int(col.to_int(b, f"domain of {_label(col.name)}", side))
                      for b, side in zip(dom, ("lo", "hi"))) if not col.is_plain else dom
                for col, dom in zip(described, domains)]
        remember_domains(described, ints)
        return data, ints, counts, described
    if isinstance(data, np.ma.MaskedArray):
        return data, domains, counts, None      # refused by as_offsets with its own message
    split = split_data(data, c)
    described = describe_axes(split, domains, columns=columns, scale=scale,
                              resolution=resolution)
    pandas = is_pandas(data)
    if described is None and not pandas and not dropna:
        return data, domains, counts, None
    cols = described or tuple(Column.integer() for _ in range(c))
    ints, int_domains, counts = convert_axes(split, cols, domains, counts=counts,
                                             dropna=dropna, what=what, clip=clip)
    if all(col == Column.integer() for col in cols) and all(_plain_bounds(d) for d in domains):
        described = None
    if c == 1:
        return ints[0], int_domains, counts, described
    if any(x.dtype == object for x in ints):
        arr = np.empty((len(ints[0]), c), dtype=object)
        for a, x in enumerate(ints):
            arr[:, a] = x
        return arr, int_domains, counts, described
    return np.column_stack(ints) if ints[0].size else np.zeros((0, c), dtype=np.int64), \
        int_domains, counts, described


def columns_to_record(described):
    """The ``columns`` meta field (a list of :meth:`Column.to_record`)."""
    return [col.to_record() for col in described]


def clipped_from_record(meta):
    """The ``clipped`` meta field: True when the build clipped out-of-domain values
    (``clip=True``), absent (False) otherwise and in every older file."""
    if "clipped" not in meta:
        return False
    if meta["clipped"] is not True:
        raise FormatError("malformed record: clipped must be true when present")
    return True


def columns_from_record(meta, domains):
    """The descriptions of a record's ``columns`` field, one per axis of
    ``domains`` (checked: a date or time axis's bounds times its step are
    datetime64 values); None when absent (files of release 0.1 and plain
    integer synopses)."""
    if "columns" not in meta:
        return None
    recs = meta["columns"]
    if not isinstance(recs, list) or len(recs) != len(domains):
        raise FormatError("malformed column descriptions (one per axis)")
    cols = tuple(Column.from_record(r) for r in recs)
    for col, (lo, hi) in zip(cols, domains):
        if col.kind in ("date", "datetime") and \
                not all(abs(int(b) * col.step) < 2**63 - 1 for b in (lo, hi)):
            raise FormatError("malformed column description (domain beyond datetime64)")
        if col.kind == "category" and not 0 <= int(lo) <= int(hi) < len(col.all_levels):
            raise FormatError("malformed column description (domain beyond the levels' codes)")
    return cols
