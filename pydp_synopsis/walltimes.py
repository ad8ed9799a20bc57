"""Local wall times that a time zone skips or repeats (daylight-saving changes).

A naive wall time read in a time zone (a domain bound, a query, a data value of a
:class:`~pydp_synopsis.columns.Column` with ``tz``) must name one instant.  One that does
not exist there (skipped when clocks go forward) or that occurs twice (when they go back)
is refused in one line, as pandas' ``tz_localize(nonexistent="raise",
ambiguous="raise")`` refuses it on the vectorised path (docs/guide/units.md, "Wall times
that do not exist").
"""
import datetime as _dt

from .errors import InputError

__all__ = ["wall_time_utc"]


def wall_time_utc(v, zone, name, what):
    """The naive wall time ``v`` in ``zone`` (a tzinfo named ``name``) as a naive UTC
    datetime; InputError naming ``what`` (never the value: it may be data) when the zone
    skips or repeats it.

    >>> import zoneinfo
    >>> chicago = zoneinfo.ZoneInfo("America/Chicago")
    >>> wall_time_utc(_dt.datetime(2017, 7, 1, 12), chicago, "America/Chicago", "lo")
    datetime.datetime(2017, 7, 1, 17, 0)
    >>> wall_time_utc(_dt.datetime(2017, 3, 12, 2, 30), chicago, "America/Chicago", "lo")
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.InputError: lo: a wall time that does not exist in time zone America/Chicago (skipped by a daylight-saving change): give a time that exists there, or one with its UTC offset (e.g. -05:00)
    """
    utc = v.replace(tzinfo=zone, fold=0).astimezone(_dt.timezone.utc)
    if utc != v.replace(tzinfo=zone, fold=1).astimezone(_dt.timezone.utc):
        if utc.astimezone(zone).replace(tzinfo=None) != v:
            raise InputError(f"{what}: a wall time that does not exist in time zone {name} "
                             f"(skipped by a daylight-saving change): give a time that "
                             f"exists there, or one with its UTC offset (e.g. -05:00)")
        raise InputError(f"{what}: a wall time that occurs twice in time zone {name} (a "
                         f"daylight-saving change repeats it): give it with its UTC offset "
                         f"(e.g. -05:00)")
    return utc.replace(tzinfo=None)
