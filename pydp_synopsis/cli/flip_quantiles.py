"""``pydp-synopsis quantiles --input FILE --column C --domain LO:HI --epsilon E --q 0.25,0.5``:
a declared handful of quantiles of one column, the whole epsilon spent on them
(:func:`pydp_synopsis.private_quantiles`), printed as CSV ``q,value``."""
import argparse
import csv
import sys
from decimal import Decimal

from ..arguments import integer, real
from ..errors import UsageError
from ..flip_quantiles import DEFAULT_CANDIDATES, MAX_CANDIDATES, private_quantiles
from ..inputs import parse_scale, read_columns
from ..params import check_int, exact_epsilon
from ..quantiles import check_fractions
from .common import rng_of
from .domains import parse_domain

__all__ = ["add_quantiles_parser", "cmd_quantiles"]


def add_quantiles_parser(sub, seed_help):
    """The ``quantiles`` subcommand."""
    p = sub.add_parser(
        "quantiles", help="a few private quantiles of one column, the whole epsilon spent on them",
        description="Release the quantiles --q of one column of --input by permute-and-flip "
                    "over public candidates (two: at epsilon / 2 each; three or more: the "
                    "recursive split), epsilon-"
                    "differentially private with respect to adding or removing one row.  For "
                    "many quantiles, a CDF or histograms as well, build a synopsis and use "
                    "'query --quantile' (docs/guide/quantiles.md).  Prints CSV q,value.")
    p.add_argument("--input", metavar="FILE", required=True,
                   help="a .csv (with a header row), .parquet, .npy or .npz file")
    p.add_argument("--column", required=True, help="the column's name (a .npz array's name)")
    p.add_argument("--domain", metavar="LO:HI",
                   help="public inclusive bounds of the column (decimals with --scale)")
    p.add_argument("--epsilon", type=real, required=True, help="total privacy loss, in (0, 2**40]")
    p.add_argument("--q", required=True, metavar="Q[,Q...]",
                   help="the quantiles, each in [0, 1], e.g. 0.25,0.5,0.75")
    p.add_argument("--candidates", type=integer, default=DEFAULT_CANDIDATES,
                   help=f"the domain's grid when it has at most this many points, else this "
                        f"many equal-width grid points, 1 to {MAX_CANDIDATES} (default: "
                        f"%(default)s)")
    p.add_argument("--scale", metavar="1eK",
                   help="decimals: read values and --domain as fixed point with this power of ten")
    p.add_argument("--seed", type=integer, help=seed_help)
    p.set_defaults(func=cmd_quantiles)
    return p


def _quantiles(text):
    parts = [p.strip() for p in str(text).split(",")]
    if not all(parts):
        raise UsageError(f"--q: an empty value in {text!r}")
    out = []
    for p in parts:
        try:
            out.append(real(p))
        except argparse.ArgumentTypeError:
            raise UsageError(f"--q: {p!r} is not a number in [0, 1]") from None
    return check_fractions(out, "--q")


def cmd_quantiles(args):
    # every argument checked before the data are read
    qs = _quantiles(args.q)
    exact_epsilon(args.epsilon, "--epsilon")
    check_int(args.candidates, "--candidates", 1, MAX_CANDIDATES)
    k = parse_scale(args.scale)
    (domain,) = parse_domain(args.domain, 1, args.scale)
    (values,) = read_columns(args.input, [args.column], scale=args.scale)
    answers = private_quantiles(values, qs, domain=domain, epsilon=args.epsilon,
                                candidates=args.candidates, rng=rng_of(args))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["q", "value"])
    for q, v in zip(qs.tolist(), answers.tolist()):
        out.writerow([repr(q), str(Decimal(int(v)).scaleb(-k)) if k else int(v)])
    return 0
