"""One way for tests to run code in a child made by ``fork()`` and read its result."""
import os
import select
import signal

import pytest


def in_forked_child(fn, timeout=None, what="the forked child"):
    """``fn()`` (returning bytes) run in a child made by ``os.fork()``; its bytes.

    With ``timeout`` (seconds), a child that has written nothing by then is
    killed and the test fails with ``"<what> never finished"`` (for tests of
    hangs in the child).
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(read)
            os.write(write, fn())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        if timeout is not None:
            ready, _, _ = select.select([f], [], [], timeout)
            if not ready:  # pragma: no cover - the failure such a test is about
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"{what} never finished")
        out = f.read()
    os.waitpid(pid, 0)
    return out
