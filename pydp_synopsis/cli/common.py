"""What every subcommand shares: the seed's generator, the output check, the
CSV delimiter, and numbers written for files and for people."""
import re

from ..errors import InputError, UsageError
from ..outputs import OutputError, check_output
from ..rng import Rng
from ..sources.files import check_delimiter

__all__ = ["rng_of", "check_output_option", "delimiter_of", "full_text", "shown_text"]


def rng_of(args):
    """A seeded Rng for tests only when --seed is given, else OS entropy."""
    return Rng(seed=args.seed) if getattr(args, "seed", None) is not None else None


def check_output_option(path, *inputs, option="--output"):
    """Refuse, before any work, an output that exists and is not a regular file, that is
    one of the inputs, or whose directory is missing or not writable
    (:func:`pydp_synopsis.outputs.check_output`)."""
    try:
        check_output(path, inputs, option)
    except OutputError as exc:
        raise UsageError(str(exc)) from None


def delimiter_of(args):
    """The checked ``--delimiter`` (one character), or ``","``."""
    if getattr(args, "delimiter", None) is None:
        return ","
    try:
        return check_delimiter(args.delimiter)
    except InputError as exc:
        raise UsageError(str(exc)) from None


def full_text(x):
    """A float written in full (the shortest text that reads back the same), never ``-0.0``.

    >>> full_text(4998554.3), full_text(-0.0), full_text(1e-300)
    ('4998554.3', '0.0', '1e-300')
    """
    return repr(float(x) + 0.0)


def shown_text(x, digits=1):
    """A float for people: fixed ``digits`` decimals, never ``-0.0``.

    >>> shown_text(-0.04), shown_text(4998554.34)
    ('0.0', '4998554.3')
    """
    text = f"{float(x):.{digits}f}"
    return text[1:] if re.fullmatch(r"-0\.?0*", text) else text
