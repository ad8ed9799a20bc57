"""Build errors in the user's units: a domain named in a message is shown as the user gave
it (``[2017-01-01, 2017-12-31]``, ``[41.5, 42.1]``), not as the integers the checks see
(``[17167, 17531]``).

:func:`pydp_synopsis.units.prepare_build` remembers each described axis's integer
domain and its user form (:func:`remember_domains`); :func:`in_user_units` wraps the
builders and rewrites the domain of a message raised under it.  Only the domain is
rewritten: it is public (the caller gave it), and messages carry no data value.
"""
import contextvars
import functools

from .errors import DomainError, InputError, ParameterError

__all__ = ["remember_domains", "in_user_units", "user_domain_text"]

_SHOWN = contextvars.ContextVar("pydp_synopsis_user_domains", default=None)


def user_domain_text(column, lo, hi):
    """``"[lo, hi]"`` of integer bounds in ``column``'s units.

    >>> from pydp_synopsis.columns import Column
    >>> user_domain_text(Column.date("d"), 17167, 17531)
    '[2017-01-01, 2017-12-31]'
    """
    return f"[{column.format(lo)}, {column.format(hi)}]"


def remember_domains(described, int_domains):
    """Remember, for the build running in this context, how each described axis's integer
    domain reads in its units (nothing when no build is running: :func:`in_user_units`)."""
    shown = _SHOWN.get()
    if shown is None or described is None:
        return
    for col, (lo, hi) in zip(described, int_domains):
        if not col.is_plain:
            shown[f"[{int(lo)}, {int(hi)}]"] = user_domain_text(col, int(lo), int(hi))


def in_user_units(build):
    """Decorate a builder: a DomainError, InputError or ParameterError raised under it
    names the domain in the user's units (the same class, one line)."""
    @functools.wraps(build)
    def wrapped(*args, **kwargs):
        token = _SHOWN.set({})
        try:
            return build(*args, **kwargs)
        except (DomainError, InputError, ParameterError) as exc:
            text = str(exc)
            shown = _SHOWN.get()
            rewritten = text
            for ints, user in shown.items():
                rewritten = rewritten.replace(ints, user)
            if rewritten == text or type(exc) not in (DomainError, InputError, ParameterError):
                raise
            raise type(exc)(rewritten) from None
        finally:
            _SHOWN.reset(token)

    return wrapped
