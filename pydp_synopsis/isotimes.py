"""ISO dates and naive datetimes parsed in bulk, exactly (the date and datetime
columns' fast paths, :class:`pydp_synopsis.columns.Column`)."""
import warnings

import numpy as np

__all__ = ["iso_days", "iso_naive_datetimes"]

_DAYS_IN_MONTH = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])


def iso_days(strings):
    """Days since 1970-01-01 of ISO dates ``YYYY-MM-DD``, vectorised and exact
    (the proleptic Gregorian calendar, Hinnant's ``days_from_civil``); or
    ``(None, i)`` with ``i`` the first string that is not a valid date."""
    s = np.char.strip(np.asarray(strings, dtype=str))
    n = s.size
    codes = np.frombuffer(s.astype("U10").tobytes(), dtype=np.uint32).reshape(n, 10)
    num = np.delete(codes, [4, 7], axis=1).astype(np.int64) - ord("0")
    ok = (np.char.str_len(s) == 10) & (codes[:, 4] == ord("-")) & (codes[:, 7] == ord("-")) \
        & ((num >= 0) & (num <= 9)).all(axis=1)
    num = np.where(ok[:, None], num, 0)
    y = num[:, 0] * 1000 + num[:, 1] * 100 + num[:, 2] * 10 + num[:, 3]
    m, d = num[:, 4] * 10 + num[:, 5], num[:, 6] * 10 + num[:, 7]
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    month = np.clip(m, 0, 12)
    ok &= (m >= 1) & (m <= 12) & (d >= 1) & (d <= _DAYS_IN_MONTH[month] + ((month == 2) & leap))
    if not ok.all():
        return None, int(np.flatnonzero(~ok)[0])
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468, None


def iso_naive_datetimes(strings):
    """ISO datetimes without a zone (``YYYY-MM-DDTHH:MM[:SS[.f]]``, years 1700 to
    2200) as ``datetime64[ns]`` in bulk (numpy's parser checks every field);
    None when some string is of another form (they go one by one)."""
    s = np.char.strip(np.asarray(strings, dtype=str))
    n = s.size
    codes = np.frombuffer(s.astype("U11").tobytes(), dtype=np.uint32).reshape(n, 11)
    year = (codes[:, :4].astype(np.int64) - ord("0")) @ np.array([1000, 100, 10, 1])
    if not ((np.char.str_len(s) >= 16) & ((codes[:, 10] == ord("T")) | (codes[:, 10] == ord(" ")))
            & ((codes[:, :4] >= ord("0")) & (codes[:, :4] <= ord("9"))).all(axis=1)
            & (year >= 1700) & (year <= 2200)
            & (np.char.find(s, "Z") < 0) & (np.char.find(s, "+") < 0)
            & (np.char.rfind(s, "-") == 7)).all():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return s.astype("datetime64[ns]")
    except (ValueError, UserWarning, DeprecationWarning):
        return None
