"""Running the ``pydp-synopsis`` command in tests, as a user would, and reading what it printed."""
import os
import signal
import stat
import subprocess
import sys
import time

import pydp_synopsis as ps

__all__ = ["PACKAGE_PARENT", "SCRIPT", "answer_and_bound", "command", "one_line_error", "read_pty", "run",
           "sigterm_once_spilled"]

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))
SCRIPT = os.path.join(os.path.dirname(sys.executable), "pydp-synopsis")


def run(*args, stdin=None):
    """Run the command as a user would: the installed entry point when there is one.

    Otherwise (a development build in place) ``python -m`` on the package this
    test process imported, from a neutral directory so the source tree cannot
    shadow it.
    """
    if os.path.exists(SCRIPT):
        cmd = [SCRIPT]
    else:
        cmd = [sys.executable, "-m", "pydp_synopsis.cli"]
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    return subprocess.run(cmd + [str(a) for a in args], input=stdin, capture_output=True, text=True,
                          cwd=os.path.dirname(PACKAGE_PARENT), env=env, timeout=300)


def read_pty(master):
    """Everything a child wrote to a pseudo-terminal, until it closed it (text)."""
    shown = b""
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:            # EIO: the child closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(master)
    return shown.decode()


def answer_and_bound(stdout):
    """The answer and the simultaneous bound that ``query --lo --hi`` printed."""
    first, second = stdout.splitlines()[:2]
    assert " ± " in first and "interval [" in first and second.startswith("simultaneous")
    return float(first.split()[0]), float(second.split()[-1])


def one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def command():
    return [SCRIPT] if os.path.exists(SCRIPT) else [sys.executable, "-m", "pydp_synopsis.cli"]


def sigterm_once_spilled(proc, spill, is_spill):
    """Send SIGTERM to the running build ``proc`` as soon as a file under ``spill`` for which
    ``is_spill(directory, name)`` holds exists; wait for it to end.  Returns ``(modes,
    stderr)``: the permission bits of that file's directory and of the file as they were
    (None if the build ended first), and what the build wrote on stderr."""
    deadline, modes = time.monotonic() + 120, None
    while time.monotonic() < deadline and proc.poll() is None:
        found = [os.path.join(r, n) for r, _, names in os.walk(spill) for n in names
                 if is_spill(r, n)]
        if found:
            try:
                modes = (stat.S_IMODE(os.stat(os.path.dirname(found[0])).st_mode),
                         stat.S_IMODE(os.stat(found[0]).st_mode))
            except FileNotFoundError:
                continue
            proc.send_signal(signal.SIGTERM)
            break
        time.sleep(0.005)
    _, err = proc.communicate(timeout=120)
    return modes, err
