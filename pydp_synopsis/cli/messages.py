"""The library's messages in the command line's words.

The library names its keyword arguments (``give scale= (e.g. 1e6)``, ``dropna=True``);
the command line shows the same line with its flags (``give --scale (e.g. 1e6)``,
``--dropna``), so that neither names the other's spelling.
"""
import re

__all__ = ["in_cli_terms"]

#: keyword arguments whose flag takes a value: ``scale=`` -> ``--scale``
_VALUED = re.compile(r"(?<![-\w.])(scale|resolution|tz|axes|delimiter|columns|sql|table|database"
                     r"|statement_timeout|scheduler|cluster_timeout|memory_limit)=(?![\w=])")
#: boolean keyword arguments: ``dropna=True`` -> ``--dropna``
_SWITCHES = re.compile(r"(?<![-\w.])(dropna|clip|debug|allow_writable_role)=True\b")
#: whole phrases whose flag form is not word for word
_PHRASES = {"columns=['a', 'b']": "--columns a,b", "engine='duckdb'": "--engine duckdb"}


def in_cli_terms(message):
    """``message`` with the library's keyword arguments spelled as the command's flags.

    >>> in_cli_terms("column 'x' holds non-integer numbers: give scale= (e.g. 1e6) ...")
    "column 'x' holds non-integer numbers: give --scale (e.g. 1e6) ..."
    >>> in_cli_terms("drop such rows with dropna=True or fill them")
    'drop such rows with --dropna or fill them'
    >>> in_cli_terms("--scale=1e6 and noise_scale= stay")
    '--scale=1e6 and noise_scale= stay'
    >>> in_cli_terms("name the columns to use (columns=['a', 'b'])")
    'name the columns to use (--columns a,b)'
    >>> in_cli_terms("give a table (table=) or a query (sql=), not both")
    'give a table (--table) or a query (--sql), not both'
    >>> in_cli_terms("database=: unknown scheme; statement_timeout= must be; debug=True shows")
    '--database: unknown scheme; --statement-timeout must be; --debug shows'
    """
    for phrase, flag in _PHRASES.items():
        message = message.replace(phrase, flag)
    message = _SWITCHES.sub(lambda m: f"--{_flag(m.group(1))}", message)
    return _VALUED.sub(_valued, message)


def _valued(match):
    """``scale= (e.g. 1e6)`` -> ``--scale (e.g. 1e6)``; ``(table=)`` -> ``(--table)``."""
    after = match.string[match.end():match.end() + 1]
    space = "" if after in ("", ")", ":", ",", ";", " ") else " "
    return f"--{_flag(match.group(1))}{space}"


def _flag(keyword):
    return keyword.replace("_", "-")
