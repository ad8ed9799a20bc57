"""``pydp-synopsis plot``: a saved synopsis or counter checkpoint drawn with its
error band (:mod:`pydp_synopsis.plot`; needs matplotlib, checked first)."""
from ..errors import ParameterError, UsageError
from ..plot import MAX_BINS, check_bins, plot_file, require_matplotlib
from .common import check_output_option
from .domains import parse_user_domain

__all__ = ["cmd_plot"]


def cmd_plot(args):
    require_matplotlib("plot")             # before anything is read or drawn
    if args.bins is not None:
        check_bins(args.bins, MAX_BINS, "--bins")
    check_output_option(args.output, args.path, args.releases)
    window = None
    if args.range is not None:          # in the file's units: converted by its columns
        window = parse_user_domain(args.range, len(args.range.split(",")), "--range")
    try:
        kind = plot_file(args.path, args.output, releases=args.releases,
                         confidence=args.confidence, scale=args.scale, bins=args.bins,
                         window=window, axes=args.axes)
    except ParameterError as exc:
        if not str(exc).startswith("axes"):
            raise
        raise UsageError(f"--{exc}") from None
    print(f"wrote {args.output}: {kind}")
    return 0
