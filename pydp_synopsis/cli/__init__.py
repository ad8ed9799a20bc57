"""The ``pydp-synopsis`` command.

Subcommands::

    pydp-synopsis demo          private synopses of the bundled ZIP-code centroids
    pydp-synopsis build         a synopsis of your table (CSV, .npy/.npz, Parquet, SQLite)
    pydp-synopsis query         answer interval / rectangle counts with error bars
    pydp-synopsis info          what a saved synopsis or checkpoint holds
    pydp-synopsis count-stream  private running counts of a 0/1 stream on stdin
    pydp-synopsis plot          draw a saved synopsis or checkpoint with its error band

Errors print one line naming the problem and the fix and exit with status 2
(``--debug`` shows the traceback); no output file is ever left half-written.

Modules: ``run`` (:func:`main`: errors and signals to exit statuses), ``parse``
(the parser), ``build``, ``query`` (query and info), ``stream`` (count-stream),
``demo``, ``plot``, and what they share: ``domains`` (``--domain`` read),
``common`` (seed, output check, delimiter, number formats), ``progress``.
"""
from .domains import parse_domain, parse_user_domain
from .run import main

__all__ = ["main", "parse_domain", "parse_user_domain"]
