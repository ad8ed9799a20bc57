"""The command line's parser: every subcommand, its options and their help, and
negative values taken without ``=`` (``--domain -5:5``)."""
import argparse
import re

from .. import __version__
from ..arguments import integer, real
from ..sources.dask import CLUSTER_TIMEOUT
from .build import ENGINES, cmd_build
from .demo import cmd_demo
from .plot import cmd_plot
from .quantile import add_distribution_options
from .query import cmd_info, cmd_query
from .sums import add_build_arguments as add_sum_build_arguments
from .sums import add_query_arguments as add_sum_query_arguments
from .serve import add_serve_parser
from .flip_quantiles import add_quantiles_parser
from .stream import COUNTERS, cmd_count_stream

__all__ = ["build_parser", "attach_negative_values"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse prints usage too by default)
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


#: Options whose value may start with '-' (a negative number): ``--domain -5:5``.
_SIGNED_VALUE_OPTIONS = ("--domain", "--lo", "--hi", "--range", "--sum-bounds", "--cdf",
                         "--histogram")
_SIGNED_VALUE = re.compile(r"-[0-9.][-0-9.:,eE+ ]*")


def attach_negative_values(argv):
    """``--domain -5:5`` -> ``--domain=-5:5``: argparse takes ``-5:5`` for an option.

    Only for the options above and only for a value made of digits, signs,
    dots, colons and commas; everything after ``--`` is left alone.

    >>> attach_negative_values(["build", "--domain", "-5:5,-90:90", "--lo", "3"])
    ['build', '--domain=-5:5,-90:90', '--lo', '3']
    """
    out, i = [], 0
    argv = list(argv)
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        if arg in _SIGNED_VALUE_OPTIONS and i + 1 < len(argv) \
                and _SIGNED_VALUE.fullmatch(str(argv[i + 1])):
            out.append(f"{arg}={argv[i + 1]}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


def build_parser():
    p = _Parser(prog="pydp-synopsis", description="Pure epsilon-differentially-private synopses.")
    p.add_argument("--debug", action="store_true",
                   help="show tracebacks and databases' own error text (UNSAFE TO SHARE: it "
                        "may quote data values)")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    sub.required = True
    seed_help = "fixed seed: reproducible noise FOR TESTS ONLY (no privacy against whoever knows it)"

    d = sub.add_parser("demo", help="private synopses of the bundled ZIP-code data",
                       description="Build an interval and a rectangle synopsis of the 42,049 US "
                                   "ZIP-code centroids shipped with the package, answer example "
                                   "queries and compare 1000 random queries with the truth.")
    d.add_argument("--epsilon", type=real, default=1.0,
                   help="privacy loss of each of the two releases (default: %(default)s)")
    d.add_argument("--queries", type=integer, default=1000,
                   help="random queries in the summary (default: %(default)s)")
    d.add_argument("--plot", metavar="FILE.png",
                   help="draw true vs private answers (needs matplotlib; checked before the demo runs)")
    d.add_argument("--write-data", dest="write_data", metavar="FILE.csv",
                   help="write the bundled data (lat,lon in degrees) as CSV and stop: the "
                        "input of the examples in docs/guide/cli.md")
    d.add_argument("--seed", type=integer, help=seed_help)
    d.set_defaults(func=cmd_demo)

    b = sub.add_parser("build", help="build a synopsis of a table",
                       description="Build a private synopsis of one column (an interval "
                                   "synopsis: counts over any range) or of several (a rectangle "
                                   "synopsis: counts over any box) and save it.  A column holds "
                                   "integers, decimals (--scale or --resolution), dates or "
                                   "datetimes (a --domain of dates or times; --tz); its units "
                                   "are saved with the synopsis.  The result is "
                                   "epsilon-differentially private with respect to adding or "
                                   "removing one row; every argument is checked before any data "
                                   "is read.")
    b.add_argument("--input", metavar="PATH",
                   help="a .csv, .parquet, .npy or .npz file, a glob ('data/*.parquet') or a directory")
    b.add_argument("--engine", choices=ENGINES, default=None,
                   help="who reads --input: local (pyarrow, default), duckdb, or dask (a cluster)")
    b.add_argument("--scheduler", metavar="ADDRESS",
                   help="dask scheduler address, tcp://HOST:PORT, tls://HOST:PORT or HOST:PORT "
                        "(with --engine dask; default: a local cluster)")
    b.add_argument("--cluster-timeout", dest="cluster_timeout", type=real,
                   metavar="SECONDS",
                   help=f"dask: seconds to wait for the scheduler to connect and to acknowledge "
                        f"each message, 1 to 86400 (default: {CLUSTER_TIMEOUT:g})")
    b.add_argument("--shards", type=integer, metavar="N",
                   help="dask: cut the domain at N-1 public points (equal widths) into N shards "
                        "partitioned in parallel")
    b.add_argument("--partition", choices=("privtree", "dnrr", "cells"), default=None,
                   help="one column: the private partition (default privtree; dnrr: the "
                        "paper's Fig. 1; cells: every value of a domain of at most 2**20 "
                        "values its own segment, no epsilon spent on it)")
    b.add_argument("--privtree-fanout", dest="privtree_fanout", type=integer, choices=(2, 4),
                   default=None, metavar="{2,4}",
                   help="one column, PrivTree: the tree's fanout (default 2; 4 splits a node in "
                        "four by two halvings, docs/guide/partition.md)")
    b.add_argument("--privtree-merge", dest="privtree_merge", type=real, default=None,
                   metavar="SHARE",
                   help="one column, PrivTree: spend SHARE in (0, 1) of the partition's epsilon "
                        "on noisy leaf counts and merge adjacent leaves of similar density "
                        "(default: no merge)")
    b.add_argument("--database", metavar="URL",
                   help="sqlite:///file.db, duckdb:///file.duckdb, postgresql://user@host/db, "
                        "or a .db/.sqlite/.duckdb path (opened read-only)")
    b.add_argument("--table", help="table to read (with --database and --columns); "
                                   "the GROUP BY queries are built with quoted names")
    b.add_argument("--sql", help="a custom query instead of --table (with --database): one "
                                 "SELECT statement, for the data steward (a query can fail on a "
                                 "secret value; docs/security-databases.md)")
    b.add_argument("--statement-timeout", dest="statement_timeout", metavar="SECONDS",
                   help="stop any database statement running longer (--database or --engine "
                        "duckdb; default 600)")
    b.add_argument("--allow-writable-role", dest="allow_writable_role", action="store_true",
                   help="PostgreSQL: read even as a superuser or a role that may write the "
                        "tables (refused by default)")
    b.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="as the global --debug: tracebacks and the database's own error text "
                        "(UNSAFE TO SHARE: it may quote data values)")
    b.add_argument("--memory-limit", dest="memory_limit", metavar="SIZE",
                   help="memory budget of a --database or --engine duckdb build, e.g. 1GB or "
                        "512MiB (default: a quarter of the machine's memory, at most 1 GiB); "
                        "DuckDB and the sort plan's runs a quarter each")
    b.add_argument("--plan", choices=("auto", "group", "sort"), default="auto",
                   help="how a --database or --engine duckdb column is aggregated: group (GROUP BY "
                        "in the database: few distinct values), sort (streamed and sorted here in "
                        "spilled runs: timestamps, ids), auto (default: by the first rows); "
                        "the same release either way")
    b.add_argument("--temp-directory", dest="temp_directory", metavar="DIR",
                   help="where a --database or --engine duckdb build spills (DuckDB and the sort "
                        "plan's runs; default: the system's temporary directory); removed on "
                        "success, failure and interruption")
    b.add_argument("--columns", help="comma-separated column names (one: intervals; several: rectangles)")
    b.add_argument("--domain", help="public bounds per column, comma separated, in the column's "
                                    "units: lo:hi (integers or decimals: 0:100, 41.5:42.1), "
                                    "dates 2017-01-01:2017-12-31, times 2017-01-01T00:00.."
                                    "2017-12-31T23:59, or a type name (int32, uint64, ...); "
                                    "never taken from the data")
    b.add_argument("--epsilon", type=real,
                   help="privacy loss of this release (required): smaller is more private and "
                        "noisier; 1 is a common choice, 0.1 strong, 5 weak (see "
                        "docs/guide/choosing.md)")
    b.add_argument("--beta", type=real, default=0.05,
                   help="failure probability of the accuracy guarantees, never of privacy "
                        "(default: %(default)s)")
    b.add_argument("--delimiter", metavar="CHAR",
                   help="field separator of CSV input, one character, 'tab' for tabs (default: ,)")
    b.add_argument("--scale", help="power of ten turning decimals into integers exactly (e.g. 1e6); "
                                   "rounds to nearest, ties to even")
    b.add_argument("--resolution", metavar="R",
                   help="bin real values (0.01: floor(v / 0.01)) or dates and times (1h, 15min, "
                        "7d); one value or one per column, comma separated")
    b.add_argument("--tz", metavar="ZONE",
                   help="time zone of datetime columns (e.g. UTC, Europe/Paris): --domain and "
                        "queries are wall times there; needed for time-zone-aware timestamps. "
                        "A wall time that does not exist there (skipped by a daylight-saving "
                        "change) is refused; one that occurs twice is refused too")
    b.add_argument("--dropna", action="store_true",
                   help="drop rows with a missing value (empty, NA, NaN, NULL) in a used column "
                        "(a per-row filter); without it such a row is an error")
    b.add_argument("--clip", action="store_true",
                   help="clip values outside --domain to its nearest end (per column, in the "
                        "column's units; a per-row map: the same epsilon) instead of refusing "
                        "them; the synopsis records it")
    b.add_argument("--categories", metavar="A,B,C",
                   help="the first of --columns is a category column with these public levels, "
                        "in this order (docs/guide/categories.md)")
    b.add_argument("--levels", metavar="FILE",
                   help="as --categories, the levels read from FILE (one per line, UTF-8)")
    b.add_argument("--other", metavar="NAME",
                   help="with --categories/--levels: count values outside the levels under one "
                        "more level NAME (default: such a value is an error)")
    b.add_argument("--structure", choices=("auto", "flat", "tree", "quadtree"), default=None,
                   help="one category column: a flat histogram (auto: up to 1024 levels) or an "
                        "interval synopsis over the levels; two columns: quadtree, the "
                        "rectangle synopsis's quadtree over partition cells")
    add_sum_build_arguments(b)                  # --sum, --sum-bounds, ... (cli/sums.py)
    b.add_argument("--workload", metavar="FILE.csv|short|mixed|long",
                   help="the queries you will ask (public): a CSV with lo,hi (or lo_0..,hi_0..) "
                        "columns in the data's units, or a class; chooses the tree or grid by "
                        "its exact noise on them, same epsilon (docs/guide/workload.md)")
    b.add_argument("--output", required=True, metavar="SYN", help="where to save the synopsis")
    b.add_argument("--seed", type=integer, help=seed_help)
    b.set_defaults(func=cmd_build)

    q = sub.add_parser("query", help="answer counting queries from a saved synopsis",
                       description="Answer counts from a saved synopsis: each answer with its "
                                   "exact noise standard deviation and a per-query interval "
                                   "holding the true count with the confidence asked; the "
                                   "simultaneous bound (all queries at once) is given apart.  "
                                   "Queries cost no privacy.")
    q.add_argument("synopsis", metavar="SYN")
    q.add_argument("--lo", help="lower corner, inclusive (comma separated for rectangles)")
    q.add_argument("--by-level", dest="by_level", action="store_true",
                   help="a category column's synopsis: every level's count with its error bars "
                        "(CSV: level,answer,std,low,high)")
    q.add_argument("--levels", dest="count_levels", metavar="LEVEL[,LEVEL...]",
                   help="the count of a set of levels of the category column (a rectangle "
                        "synopsis: its other axes within --lo/--hi, whole by default)")
    q.add_argument("--hi", help="upper corner, inclusive")
    q.add_argument("--queries", metavar="FILE.csv", help="CSV with lo,hi (or lo_0..,hi_0..) columns")
    q.add_argument("--output", metavar="FILE.csv", help="where to write answers (default stdout)")
    q.add_argument("--confidence", type=real, default=0.95,
                   help="confidence of the per-query intervals and of the simultaneous bound "
                        "(default: %(default)s)")
    q.add_argument("--nonnegative", action="store_true",
                   help="clip answers and intervals at 0 (post-processing: true counts are "
                        "never negative)")
    q.add_argument("--interval", choices=("rigorous", "calibrated"), default="rigorous",
                   help="the per-query interval: 'rigorous' holds the true count with the "
                        "confidence asked, for any data; 'calibrated' is a model of the cut "
                        "segments, far narrower on short queries, whose coverage was measured, "
                        "not proven (default: %(default)s)")
    q.add_argument("--delimiter", metavar="CHAR",
                   help="field separator of the query and answer CSV files (default: ,)")
    q.add_argument("--scale", help="fixed-point scale used when building (e.g. 1e6); only for "
                                   "files without column descriptions (the file says its units)")
    add_sum_query_arguments(q)                  # --sum, --mean (cli/sums.py)
    add_distribution_options(q)
    q.set_defaults(func=cmd_query)

    i = sub.add_parser("info", help="describe a saved synopsis or counter checkpoint",
                       description="Print the public parameters of a saved synopsis or "
                                   "checkpoint (never the data).")
    i.add_argument("path", metavar="FILE")
    i.set_defaults(func=cmd_info)

    c = sub.add_parser("count-stream", help="private running counts of a 0/1 stream on stdin",
                       description="Read 0/1 items (one per line) on stdin and print a private "
                                   "running count after each; --checkpoint saves the state to "
                                   "resume later.")
    c.add_argument("--horizon", type=integer, help="maximum stream length (public, required for a "
                                               "new stream)")
    c.add_argument("--epsilon", type=real, help="privacy loss of the whole stream of releases")
    c.add_argument("--counter", choices=sorted(COUNTERS), default=None,
                   help="kary (default for a new stream), binary or sparse")
    c.add_argument("--k", type=integer, default=None, help="fanout of the k-ary counter (default 19)")
    c.add_argument("--beta", type=real, default=0.05, help="failure probability (sparse counter)")
    c.add_argument("--positions", action="store_true",
                   help="stdin holds the increasing positions of the 1s (sparse counter); "
                        "output is 'time,value' lines where the release changes")
    c.add_argument("--checkpoint", metavar="FILE",
                   help="resume from / save state to FILE (mode 0600), journaled in FILE.journal and "
                        "locked for the run (see docs/security-checkpoints.md)")
    c.add_argument("--adopt-checkpoint", dest="adopt_checkpoint", action="store_true",
                   help="resume a checkpoint that has no journal (release 0.2 and older) and start "
                        "its journal: only for the one copy of its stream")
    c.add_argument("--new-stream", dest="new_stream", action="store_true",
                   help="start a new stream at --checkpoint FILE although its journal records an "
                        "earlier stream whose checkpoint is gone")
    c.add_argument("--monotone", action="store_true",
                   help="print the running maximum of the releases, floored at 0 (never "
                        "decreases, never negative; post-processing, biased upward)")
    c.add_argument("--seed", type=integer, help=seed_help)
    c.set_defaults(func=cmd_count_stream)
    _add_plot_parser(sub)
    add_serve_parser(sub)
    add_quantiles_parser(sub, seed_help)
    return p


def _add_plot_parser(sub):
    g = sub.add_parser("plot", help="draw a saved synopsis or counter checkpoint (needs matplotlib)",
                       description="Draw what a saved file releases, with its error band: an "
                                   "interval synopsis as the private distribution over its "
                                   "domain, a 2-D rectangle synopsis as a heat map, a counter "
                                   "checkpoint as its running count.  Only released numbers "
                                   "are drawn.")
    g.add_argument("path", metavar="FILE", help="a saved synopsis or counter checkpoint")
    g.add_argument("-o", "--output", required=True, metavar="FILE.png", help="the image to write")
    g.add_argument("--confidence", type=real, default=0.95,
                   help="confidence of the per-bin error band (default: %(default)s)")
    g.add_argument("--bins", type=integer, default=None,
                   help="bins per axis (default: 200 for 1-D, 60 per axis for 2-D; at most "
                        "10000 for 1-D, 500 per axis for 2-D)")
    g.add_argument("--scale", help="fixed-point scale used when building (e.g. 1e6): axes in "
                                   "user units")
    g.add_argument("--range", metavar="LO:HI",
                   help="the part of the domain to draw, per drawn axis (x first), comma "
                        "separated, in the file's units: 10:80, 41.6:42.1, "
                        "2017-01-01:2017-06-30, 2017-01-01T00:00..2017-01-02T00:00 "
                        "(default: where the private counts lie)")
    g.add_argument("--axes", metavar="X,Y",
                   help="a rectangle synopsis's axes drawn on x and y, by column name or "
                        "index (e.g. lon,lat or 1,0; default: axes 0 and 1, a longitude-like "
                        "axis on x)")
    g.add_argument("--releases", metavar="FILE",
                   help="for a counter checkpoint: the releases count-stream printed")
    g.set_defaults(func=cmd_plot)
