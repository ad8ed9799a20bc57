"""Numbers on the command line, read one way for every option.

Python's ``int`` and ``float`` accept more than a person means: ``1_0`` is 10,
`` 5 `` is 5, ``nan`` and ``inf`` are floats.  ``--epsilon 1_0`` silently spent
ten times the budget asked for.  Every numeric option of ``pydp-synopsis`` is
parsed by :func:`integer` or :func:`real`, which accept plain decimal notation
only and say which option was wrong (argparse adds the option's name).
"""
import argparse
import math
import re

__all__ = ["integer", "real"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def integer(text):
    """An argparse ``type=``: a decimal integer (digits, an optional sign).

    >>> integer("42"), integer("-3")
    (42, -3)
    >>> integer("1_0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '1_0' is not an integer (digits only, e.g. 10)
    """
    if not _INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer (digits only, e.g. 10)")
    return int(text)


def real(text):
    """An argparse ``type=``: a finite decimal number (``0.5``, ``1e-3``), never
    ``1_0``, ``nan`` or ``inf``.

    >>> real("0.5"), real("1e-3"), real("2")
    (0.5, 0.001, 2.0)
    >>> real("1_0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: '1_0' is not a number (digits with an optional . and exponent, e.g. 0.5 or 1e-3)
    """
    if not _REAL.fullmatch(text) or not math.isfinite(float(text)):     # 1e999 is inf
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (digits with an optional "
                                         f". and exponent, e.g. 0.5 or 1e-3)")
    return float(text)
