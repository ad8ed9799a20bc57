"""``main``: the arguments parsed, the subcommand run, every error turned into one
line and an exit status, signals into a clean stop."""
import csv
import os
import signal
import sys
import zipfile

from ..errors import SynopsisError
from .messages import in_cli_terms
from .parse import attach_negative_values, build_parser

__all__ = ["main", "Terminated"]


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: unwound like Ctrl-C, so that every ``finally`` runs
    (spill files and temporary outputs are removed) and nothing half-done is kept."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise Terminated(signum)


def _stop_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` (SIGINT already raises
    KeyboardInterrupt); returns the handlers to restore."""
    stops = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    try:
        return {sig: signal.signal(sig, _raise_terminated) for sig in stops}
    except ValueError:           # not the main thread (main() called from a thread)
        return {}


def main(argv=None):
    """Entry point of the ``pydp-synopsis`` command; returns the exit status.

    SIGINT, SIGTERM and SIGHUP stop any command cleanly (temporary and spill files
    removed, no output written) with status 128 + the signal's number.
    """
    parser = build_parser()
    args = parser.parse_args(attach_negative_values(sys.argv[1:] if argv is None else argv))
    previous = _stop_signals()
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (``| head``): stop quietly, as other Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except MemoryError:
        if args.debug:
            raise
        # numpy's text names the size it tried: never shown (it may follow the data)
        print("pydp-synopsis: error: out of memory: an input declares or holds more than "
              "this machine can allocate", file=sys.stderr)
        return 2
    except (SynopsisError, ValueError, TypeError, OSError, ArithmeticError, csv.Error,
            zipfile.BadZipFile, EOFError) as exc:
        if args.debug:
            raise
        message = in_cli_terms(str(exc).splitlines()[0]) if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename:
            message = f"{exc.filename}: {exc.strerror}"
        print(f"pydp-synopsis: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        print(f"pydp-synopsis: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        return 128 + signum
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
