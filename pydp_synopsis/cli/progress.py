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
    """A progress line for ``build``: each pass, what it has done, the seconds elapsed.

    The sources report their passes through :meth:`step` (the validation
    query, each column's read -- rows so far out of the rows the validation
    query counted --, the runs merged, the cell passes:
    :func:`pydp_synopsis.sources.base.report`); this class alone writes.
    Only on a terminal, and only once the work has run ~2 s (the environment
    variable ``PYDP_SYNOPSIS_PROGRESS_DELAY`` sets the delay, for tests); a
    background thread keeps it ticking while a database works.  The counts
    are data: they are shown to the operator on their terminal only, never
    written to stdout or to a file.
    """

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = is_terminal(self.stream)
        self.delay = float(os.environ.get("PYDP_SYNOPSIS_PROGRESS_DELAY", "2"))
        self.start = time.monotonic()
        self.phase, self.rows, self.total, self.unit = "reading", None, None, "rows"
        self.shown, self._width = False, 0
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
            done = ""
            if self.rows is not None:
                of = f" / {self.total:,}" if self.total else ""
                done = f": {self.rows:,}{of} {self.unit}"
            text = f"\rpydp-synopsis build: {self.phase}{done} ({now - self.start:.0f} s)"
            # a shorter line than the last one: blanks over the rest of it
            pad = max(0, self._width - len(text))
            self._width = len(text)
            self.stream.write(text + " " * pad)
            self.stream.flush()
            self.shown = True

    def read(self, rows):
        self.rows = rows

    __call__ = read

    def step(self, phase, done=None, total=None, unit="rows"):
        """A source's pass report (:func:`pydp_synopsis.sources.base.report`)."""
        changed = phase != self.phase
        self.phase, self.rows, self.total, self.unit = phase, done, total, unit
        if changed:
            self.show()

    def enter(self, phase):
        self.phase, self.rows, self.total = phase, None, None
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
        # the progress object itself: a source that reports its passes calls its step()
        prepared = self._source.prepare(domains, progress=self._progress, clip=clip)
        self._progress.enter("partitioning and counting")
        return prepared
