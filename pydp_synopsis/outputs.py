"""Where the package writes: a regular file it creates, never a device, a FIFO or an input.

Every file the package writes goes through :func:`pydp_synopsis.persist.atomic_write`
(a temporary file in the target's directory renamed over the target).  A rename
replaces whatever the name held -- ``--output /dev/null`` run as root replaced the
device with a regular file -- so the target is checked first:

* a target that does not exist is created (its directory must exist);
* an existing regular file is replaced;
* a symbolic link is accepted only when it leads to an existing regular file, and
  then the *link* is replaced by the new file: nothing is written through a link;
* anything else (a directory, a FIFO, a socket, a character or block device, a
  dangling link or a link to a non-regular file) is refused with one line naming
  the option.

The command line checks every output against every input of the command
(:func:`check_output`) before any work, through the files' device and inode
numbers, so a hard link or a symbolic link to an input is caught too.

The checks and the rename are separate system calls: someone who can write the
target's directory can still swap the name in between.  Write outputs to
directories that only trusted users can write.
"""
import os
import stat

from .errors import SynopsisError

__all__ = ["OutputError", "check_target", "check_output", "same_file", "naming_file"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class OutputError(SynopsisError, ValueError):
    """An output path is not one the package may create or replace."""


def _kind(mode):
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_target(path, option="output"):
    """Refuse ``path`` unless it is absent, a regular file, or a link to a regular file.

    Parameters
    ----------
    path : str or os.PathLike
    option : str
        How the path was given (``"--output"``), for the message.

    Raises
    ------
    OutputError
        The path exists and is not a regular file (see the module's rules),
        or its directory does not exist.

    Examples
    --------
    >>> check_target("/dev/null", "--output")
    Traceback (most recent call last):
    ...
    pydp_synopsis.outputs.OutputError: --output /dev/null is a character device, not a regular file: give a file path to create or replace
    """
    path = os.fspath(path)
    refuse = f"{option} {path} is {{}}, not a regular file: give a file path to create or replace"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise OutputError(f"{option} {path}: the directory {directory} does not exist") \
                from None
        return
    except NotADirectoryError:
        raise OutputError(f"{option} {path}: a part of the path is not a directory") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            raise OutputError(refuse.format("a link to nothing (dangling)")) from None
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(refuse.format(f"a link to {_kind(st.st_mode)}"))
        return
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(refuse.format(_kind(st.st_mode)))


def same_file(a, b):
    """True when paths ``a`` and ``b`` name one file (same device and inode, links
    followed); for a path that does not exist yet, the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, inputs=(), option="--output"):
    """Everything :func:`check_target` checks, and that ``path`` is none of ``inputs``
    and that its directory is writable: all before any work.

    Raises
    ------
    OutputError
    """
    check_target(path, option)
    for src in inputs:
        if src is not None and same_file(path, src):
            raise OutputError(f"{option} {path} is also an input ({src}): choose another "
                              f"output file")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.access(directory, os.W_OK):
        raise OutputError(f"{option} {path}: the directory {directory} is not writable")


def naming_file(exc, path):
    """``exc`` (an OSError raised while writing ``path``) as an OSError of the same
    class that names ``path``: a full disk says which file could not be written."""
    if exc.filename == os.fspath(path):
        return exc
    reason = exc.strerror or (os.strerror(exc.errno) if exc.errno else "write failed")
    try:
        return type(exc)(exc.errno, reason, os.fspath(path))
    except TypeError:                 # a subclass with its own constructor
        return OSError(exc.errno, reason, os.fspath(path))
