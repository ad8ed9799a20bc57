"""Progress lines on stderr: only on a terminal, only after a delay
(``PYDP_SYNOPSIS_PROGRESS_DELAY``, seconds, for tests), never on stdout or in a
file."""
import os
import sys
import threading
import time

from ..sources import Source

__all__ = ["Progress", "BuildProgress", "Observed", "is_terminal"]


class Progress:
    """A tiny progress line on stderr: only on a terminal, only after 2 seconds.

    ``quiet_if`` is another stream (the releases' stdout): when it is the
    terminal too, the line stays off so that it never cuts an output line.
    ``PYDP_SYNOPSIS_PROGRESS_DELAY`` sets the delay in seconds (tests).
    """

    def __init__(self, label, total=None, stream=None, quiet_if=None):
        self.label, self.total = label, total
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last = 0.0
        self.done = 0
        self.shown = False
        self.delay = float(os.environ.get("PYDP_SYNOPSIS_PROGRESS_DELAY", "2"))
        self.enabled = (is_terminal(self.stream)
                        and not (quiet_if is not None and is_terminal(quiet_if)))

    def update(self, done):
        self.done = done
        now = time.monotonic()
        if not self.enabled or now - self.start < self.delay or now - self.last < 0.1:
            return
        self.last = now
        self._write(done, now)

    def _write(self, done, now):
        if self.total:
            frac = min(1.0, done / self.total)
            bar = "#" * int(30 * frac)
            text = f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}%"
        else:
            text = f"\r{self.label} {done:,} ({now - self.start:.0f} s)"
        self.stream.write(text)
        self.stream.flush()
        self.shown = True

    def close(self):
        if self.shown:
            self._write(self.done, time.monotonic())     # the final count, then end the line
            self.stream.write("\n")
            self.stream.flush()


def is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


class BuildProgress:
    """A progress line for ``build``: the phase, the rows read, the seconds elapsed.

    Only on a terminal, and only once the work has run ~2 s (the environment
    variable ``PYDP_SYNOPSIS_PROGRESS_DELAY`` sets the delay, for tests); a
    background thread keeps it ticking while a database works.  The row count
    is shown to the operator on their terminal only, never written to stdout
    or to a file.
    """

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = is_terminal(self.stream)
        self.delay = float(os.environ.get("PYDP_SYNOPSIS_PROGRESS_DELAY", "2"))
        self.start = time.monotonic()
        self.phase, self.rows, self.shown = "reading", None, False
        self._stop = None
        self._lock = threading.Lock()
        if self.enabled:
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def _tick(self):
        while not self._stop.wait(0.2):
            self.show()

    def show(self):
        now = time.monotonic()
        if not self.enabled or now - self.start < self.delay:
            return
        with self._lock:
            rows = f": {self.rows:,} rows" if self.rows is not None else ""
            self.stream.write(f"\rpydp-synopsis build: {self.phase}{rows} "
                              f"({now - self.start:.0f} s)  ")
            self.stream.flush()
            self.shown = True

    def read(self, rows):
        self.rows = rows

    def enter(self, phase):
        self.phase, self.rows = phase, None
        self.show()

    def close(self):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class Observed(Source):
    """A source whose reading is reported to a :class:`BuildProgress`."""

    def __init__(self, source, progress):
        self._source, self._progress = source, progress
        self.columns = source.columns

    def prepare(self, domains, progress=None, clip=False):
        self._progress.enter("reading")
        prepared = self._source.prepare(domains, progress=self._progress.read, clip=clip)
        self._progress.enter("partitioning and counting")
        return prepared
