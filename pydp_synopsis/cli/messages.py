"""The library's messages in the command line's words.

The library names its keyword arguments (``give scale= (e.g. 1e6)``, ``dropna=True``);
the command line shows the same line with its flags (``give --scale (e.g. 1e6)``,
``--dropna``), so that neither names the other's spelling.
"""
import re

__all__ = ["in_cli_terms"]

#: keyword arguments whose flag takes a value: ``scale=`` -> ``--scale``
_VALUED = re.compile(r"(?<![-\w.])(scale|resolution|tz|axes|delimiter|columns)= ?(?!\w)")
#: boolean keyword arguments: ``dropna=True`` -> ``--dropna``
_SWITCHES = re.compile(r"(?<![-\w.])(dropna|clip)=True\b")


def in_cli_terms(message):
    """``message`` with the library's keyword arguments spelled as the command's flags.

    >>> in_cli_terms("column 'x' holds non-integer numbers: give scale= (e.g. 1e6) ...")
    "column 'x' holds non-integer numbers: give --scale (e.g. 1e6) ..."
    >>> in_cli_terms("drop such rows with dropna=True or fill them")
    'drop such rows with --dropna or fill them'
    >>> in_cli_terms("--scale=1e6 and noise_scale= stay")
    '--scale=1e6 and noise_scale= stay'
    """
    message = _SWITCHES.sub(lambda m: f"--{m.group(1)}", message)
    return _VALUED.sub(lambda m: f"--{m.group(1)} ", message).replace(" )", ")")
