"""Checkpoints of ``pydp-synopsis count-stream`` that release each position once.

A counter checkpoint holds the secret noise of the positions still to come.
Resuming it twice -- from a copy set aside, from a temporary file a killed
run left, or from two processes at once -- releases the same positions
twice with the same noise but different data, and the difference of the two
releases is the data.  :class:`StreamCheckpoint` keeps the files of one
checkpoint ``FILE`` so that this cannot happen by accident:

``FILE``
    The checkpoint (mode 0600): the counter's record
    (:func:`pydp_synopsis.persist.write_record`) with an annex
    ``{"pending": releases of the last batch, "stream": stream id}``.
``FILE.journal``
    The journal (mode 0600, append-only, every line ``fsync``-ed; format
    below).
``.FILE.pdsyn.d/``
    A private directory (0700) beside ``FILE``, on the same filesystem:
    the lock file ``lock`` (``flock``, held for the whole run; it holds the
    holder's process id) and the temporary files of the atomic writes,
    removed at the start (a killed run's) and at the end of every run.
    A fresh stream that never saved leaves none of these files behind.

Journal format, version 1 (ASCII, one line per record, ``\\n``-terminated)::

    pdsyn-journal v1 stream=<32 hex> chain=<64 hex>
    prepare time=<int> state=<64 hex> chain=<64 hex>
    commit time=<int> state=<64 hex> chain=<64 hex>

``stream`` is a random 128-bit id (from the package's CSPRNG, OS-seeded),
also stored in the checkpoint's annex.  ``state`` is :func:`record_digest`,
the SHA-256 of the saved record and its annex; ``time`` the position after
the save.  ``chain`` is the SHA-256 of the previous line's chain (32 zero
bytes before the first line) and this line's text before `` chain=``: a
changed, inserted or removed line breaks every chain after it.  A save
appends ``prepare``, writes the checkpoint atomically, appends ``commit``,
and only then are the releases printed.  A ``prepare`` without its
``commit`` is a save cut by a crash: its checkpoint may or may not have been
renamed into place, and none of its releases was printed.

A resume is accepted only if the journal parses and chains, the checkpoint
names the journal's stream, and the checkpoint's digest is that of the last
``commit`` -- or of a trailing ``prepare`` (then its ``commit`` is appended
before anything is printed).  Everything else refuses in one line before an
item is read or a noise term drawn: an older copy (rollback), another
stream's checkpoint (swap), an edited checkpoint, a damaged journal, a
checkpoint without a journal (release 0.2 and older, or a copy: adopt it
with ``--adopt-checkpoint``), a journal whose checkpoint is missing (start
anew with ``--new-stream``), or a run already holding the lock.

What the journal cannot do: someone who can write both files can roll both
back together (or truncate the journal at a line boundary and restore the
matching checkpoint); ``chattr +a`` on the journal (Linux, root) makes it
truly append-only.  ``docs/security-checkpoints.md`` has the full account.
"""
import fcntl
import hashlib
import json
import os
import re
import stat

import numpy as np

from . import persist
from .errors import UsageError
from .rng import Rng

__all__ = ["JOURNAL_VERSION", "JOURNAL_SUFFIX", "CheckpointRefused", "StreamCheckpoint", "check_pending",
           "private_dir", "record_digest"]

JOURNAL_VERSION = 1
JOURNAL_SUFFIX = ".journal"
#: Longest journal accepted (a save adds two lines of about 170 bytes).
MAX_JOURNAL_BYTES = 1 << 30
#: Longest pending text accepted (a batch is at most 64 KiB of input).
MAX_PENDING_CHARS = 1 << 24

_LINE_MAX = 200
_GENESIS = bytes(32)
_HEADER = re.compile(r"pdsyn-journal v1 stream=([0-9a-f]{32})")
_ENTRY = re.compile(r"(prepare|commit) time=(0|[1-9][0-9]{0,18}) state=([0-9a-f]{64})")
_CHAINED = re.compile(r"(.*) chain=([0-9a-f]{64})\n", re.DOTALL)
_RELEASE_LINES = re.compile(r"(?:-?[0-9]{1,19}\n)*")
_POSITION_LINES = re.compile(r"(?:[0-9]{1,19},-?[0-9]{1,19}\n)*")
_LOCK = "lock"


class CheckpointRefused(UsageError):
    """A checkpoint that could release a position twice (``count-stream`` exits 2 with one line)."""


def private_dir(path):
    """The private directory of checkpoint ``path``: ``.<name>.pdsyn.d`` beside it."""
    head, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.path.join(head, f".{name}.pdsyn.d")


def record_digest(kind, meta, arrays, annex):
    """SHA-256 (hex) of a record and its annex, independent of how it was encoded.

    The same for the record a counter saves and the record
    :func:`~pydp_synopsis.persist.read_record` reads back (JSON values
    canonicalised, arrays as little-endian bytes with name, dtype and
    shape); the file's ``created`` time is not part of it.
    """
    h = hashlib.sha256(b"pdsyn-state-v1\0")
    h.update(json.dumps([kind, meta, annex], sort_keys=True, separators=(",", ":"),
                        allow_nan=False).encode())
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        h.update(json.dumps([name, arr.dtype.name, list(arr.shape)]).encode())
        h.update(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    return h.hexdigest()


def _chain(previous, text):
    return hashlib.sha256(b"pdsyn-journal-chain\0" + previous + text.encode("ascii")).digest()


class _Journal:
    """A parsed, chained journal: its stream, last commit and trailing prepare."""

    def __init__(self, stream):
        self.stream = stream
        self.commit = None        # (time, state) of the last commit
        self.prepare = None       # (time, state) of a prepare not yet committed
        self.chain = None


def _read_journal(path):
    """Parse and verify a journal; CheckpointRefused naming the line otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CheckpointRefused(f"cannot read the journal {path} ({exc.strerror}): refused") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CheckpointRefused(f"the journal {path} is not a regular file: refused")
        if st.st_size > MAX_JOURNAL_BYTES:
            raise CheckpointRefused(f"the journal {path} is larger than {MAX_JOURNAL_BYTES} bytes: refused")
        os.set_blocking(fd, True)
        journal, chain, number = None, _GENESIS, 0
        while True:
            raw = fh.readline(_LINE_MAX + 1)
            if not raw:
                break
            number += 1
            try:
                line = raw.decode("ascii")
            except UnicodeDecodeError:
                line = ""
            chained = _CHAINED.fullmatch(line)
            if chained is None or len(raw) > _LINE_MAX:
                raise CheckpointRefused(f"the journal {path} is damaged at line {number} (truncated or "
                                        f"edited): refused")
            text, mac = chained.groups()
            chain = _chain(chain, text)
            if chain.hex() != mac:
                raise CheckpointRefused(f"the journal {path} is damaged at line {number} (its chain of "
                                        f"hashes breaks: edited): refused")
            journal = _journal_step(journal, text, path, number)
        if journal is None:
            raise CheckpointRefused(f"the journal {path} is empty (truncated): refused")
        journal.chain = chain
        return journal


def _journal_step(journal, text, path, number):
    """Apply one verified line to the journal's state (the order rules of the format)."""
    bad = f"the journal {path} is damaged at line {number} (out of order): refused"
    if journal is None:
        header = _HEADER.fullmatch(text)
        if header is None:
            raise CheckpointRefused(f"the journal {path} is not a version {JOURNAL_VERSION} journal "
                                    f"(line 1): refused")
        return _Journal(header.group(1))
    entry = _ENTRY.fullmatch(text)
    if entry is None:
        raise CheckpointRefused(bad)
    what, time, state = entry.group(1), int(entry.group(2)), entry.group(3)
    if time >= 2**63:
        raise CheckpointRefused(bad)
    if what == "prepare":
        # a prepare may follow another one: the earlier save was cut by a crash
        if journal.commit is not None and time < journal.commit[0]:
            raise CheckpointRefused(bad)
        journal.prepare = (time, state)
    else:
        if journal.prepare != (time, state):
            raise CheckpointRefused(bad)
        journal.commit, journal.prepare = (time, state), None
    return journal


def check_pending(text, counter, path):
    """Refuse a checkpoint's unprinted releases unless they are plain and match the state.

    Only ASCII digits, ``-``, ``,`` and newlines, in the two shapes
    ``count-stream`` prints (one release per line, or ``time,release``
    lines), at most :attr:`time` lines (times increasing, within the
    stream), the last release the counter's current one (raw or
    monotone).  Nothing of it is printed before this passes: a terminal
    escape sequence never reaches the screen.
    """
    if not isinstance(text, str) or len(text) > MAX_PENDING_CHARS:
        raise CheckpointRefused(f"{path}: the saved releases of the last batch are malformed: refused")
    if _RELEASE_LINES.fullmatch(text):
        times, values = None, [int(v) for v in text.split()]
    elif _POSITION_LINES.fullmatch(text):
        pairs = [line.split(",") for line in text.split()]
        times, values = [int(t) for t, _ in pairs], [int(v) for _, v in pairs]
    else:
        raise CheckpointRefused(f"{path}: the saved releases of the last batch hold other characters "
                                f"than digits, '-', ',' and newlines: refused")
    if not values:
        return
    ok = len(values) <= counter.time and values[-1] in (counter.release, counter.monotone_release)
    if times is not None:
        ok = ok and 1 <= times[0] and times[-1] <= counter.time and all(
            a < b for a, b in zip(times, times[1:]))
    if not ok:
        raise CheckpointRefused(f"{path}: the saved releases of the last batch do not match the saved "
                                f"state (edited): refused")


class StreamCheckpoint:
    """The files of one ``count-stream`` checkpoint, locked for the life of a run.

    Opening takes the lock (or refuses: another run holds it), removes a
    killed run's temporary files, and verifies the checkpoint against its
    journal (module docstring); :attr:`counter` is then the counter to
    resume (its noise checked as the builder's own) and :attr:`pending` its
    checked releases of the last batch, or None and "" for a new stream.
    :meth:`save` writes a state durably and journals it; :meth:`close`
    cleans up and unlocks.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint file.
    adopt : bool
        Accept an existing checkpoint that has no journal (release 0.2 and
        older) and start its journal: the caller asserts it is the only copy.
    new_stream : bool
        Start a new stream although the journal records an earlier one whose
        checkpoint is gone.

    Raises
    ------
    CheckpointRefused
        One line; nothing was read from the stream, nothing drawn.
    FormatError
        The checkpoint is not a valid record.
    """

    def __init__(self, path, *, adopt=False, new_stream=False):
        self.path = os.fspath(path)
        self.journal_path = self.path + JOURNAL_SUFFIX
        self.private = private_dir(self.path)
        self.counter = None        # the counter to resume, None for a new stream
        self.pending = ""          # its releases of the last batch, checked
        self.stream = None
        self._lock_fd = self._journal_fd = None
        self._chain = None
        self._fresh = False        # this run started the stream (its files go if it never saves)
        self._saved = False
        self._lock()
        try:
            self._clean()
            self._open(adopt, new_stream)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ opening
    def _lock(self):
        try:
            os.mkdir(self.private, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(self.private)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise CheckpointRefused(f"{self.private} is not a directory of this user: remove it")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.chmod(self.private, 0o700)
        lock = os.path.join(self.private, _LOCK)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                holder = f" (process {holder})" if holder.isdigit() else ""
                raise CheckpointRefused(f"{self.path} is in use by another count-stream{holder}: one "
                                        f"checkpoint feeds one run at a time") from None
            mine, now = os.fstat(fd), os.lstat(lock)
            if (mine.st_dev, mine.st_ino) != (now.st_dev, now.st_ino) or not stat.S_ISREG(mine.st_mode):
                raise CheckpointRefused(f"{self.path} was being closed by another run: try again")
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd

    def _clean(self):
        """Remove every temporary file in the private directory (a killed run's)."""
        for entry in os.scandir(self.private):
            if entry.name != _LOCK and not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)

    def _open(self, adopt, new_stream):
        exists = os.path.lexists(self.path)
        journal = _read_journal(self.journal_path) if os.path.lexists(self.journal_path) else None
        if not exists:
            if adopt:
                raise CheckpointRefused(f"--adopt-checkpoint: {self.path} does not exist")
            if journal is not None and journal.commit is not None and not new_stream:
                raise CheckpointRefused(
                    f"{self.path} is missing but its journal {self.journal_path} records a stream saved "
                    f"at position {journal.commit[0]:,}: restore that checkpoint, or start a new stream "
                    f"with --new-stream")
            self._fresh = True
            self._start_journal(_new_stream_id())
            return
        if new_stream:
            raise CheckpointRefused(f"--new-stream: {self.path} exists; remove it or choose another path")
        kind, meta, arrays, info = persist.read_record(self.path)
        annex = info["annex"] if isinstance(info["annex"], dict) else {}
        digest = record_digest(kind, meta, arrays, info["annex"])
        commit = None
        if journal is None:
            if not adopt:
                raise CheckpointRefused(
                    f"{self.path} has no journal ({self.journal_path}): a checkpoint of release 0.2 or "
                    f"older, or a copy; if it is the only copy of its stream, adopt it with "
                    f"--adopt-checkpoint")
        else:
            if adopt:
                raise CheckpointRefused(f"--adopt-checkpoint is for a checkpoint without a journal; "
                                        f"{self.journal_path} exists")
            if annex.get("stream") != journal.stream:
                raise CheckpointRefused(f"{self.path} is not the stream its journal {self.journal_path} "
                                        f"records (another stream's checkpoint): refused")
            if journal.prepare is not None and digest == journal.prepare[1]:
                # the save was renamed in place but not committed: commit it
                # (below) before any of its releases is printed again
                commit = journal.prepare
            elif journal.commit is None or digest != journal.commit[1]:
                last = journal.commit[0] if journal.commit is not None else 0
                raise CheckpointRefused(
                    f"{self.path} is not the last state its journal records (saved at position "
                    f"{last:,}): an older copy or an edited file; resuming it would release "
                    f"positions twice: refused")
        counter = persist.from_record(self.path, kind, meta, arrays)
        if not hasattr(counter, "update_many"):
            raise CheckpointRefused(f"{self.path} is not a counter checkpoint")
        pending = annex.get("pending", "")
        check_pending(pending, counter, self.path)
        # accepted: only now is anything written
        if journal is None:
            self._start_journal(_new_stream_id())
            self._append("prepare", counter.time, digest)
            self._append("commit", counter.time, digest)
        else:
            self.stream, self._chain = journal.stream, journal.chain
            self._journal_fd = _open_append(self.journal_path)
            if commit is not None:
                self._append("commit", *commit)
        self.counter, self.pending = counter, pending

    def _start_journal(self, stream):
        """A new journal (replacing any old one atomically) with its header."""
        text = f"pdsyn-journal v{JOURNAL_VERSION} stream={stream}"
        chain = _chain(_GENESIS, text)
        line = f"{text} chain={chain.hex()}\n".encode("ascii")
        persist.atomic_write(self.journal_path, lambda fh: fh.write(line), mode=0o600, tmp_dir=self.private)
        self.stream, self._chain = stream, chain
        self._journal_fd = _open_append(self.journal_path)

    def _append(self, what, time, state):
        text = f"{what} time={time} state={state}"
        chain = _chain(self._chain, text)
        line = f"{text} chain={chain.hex()}\n".encode("ascii")
        written = os.write(self._journal_fd, line)
        if written != len(line):
            raise OSError(f"short write to {self.journal_path}")
        os.fsync(self._journal_fd)
        self._chain = chain

    # ------------------------------------------------------------- saving
    def save(self, counter, pending):
        """Durably save ``counter`` with the releases ``pending`` (not yet printed).

        Journal ``prepare``, atomic write of the checkpoint (its temporary
        file in the private directory), journal ``commit``; raises OSError
        (nothing may then be printed).
        """
        kind, meta, arrays, mode = persist.record_of(counter)
        annex = {"pending": pending, "stream": self.stream}
        digest = record_digest(kind, meta, arrays, annex)
        time = counter.time
        self._append("prepare", time, digest)
        persist.write_record(self.path, kind, meta, arrays, mode=mode, annex=annex, tmp_dir=self.private)
        self._append("commit", time, digest)
        self._saved = True

    def close(self):
        """Remove temporary files, unlock; a new stream that never saved leaves no file."""
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None
        if self._lock_fd is None:
            return
        try:
            self._clean()
            if self._fresh and not self._saved and not os.path.lexists(self.path):
                for name in (self.journal_path, os.path.join(self.private, _LOCK)):
                    try:
                        os.unlink(name)
                    except FileNotFoundError:
                        pass
                try:
                    os.rmdir(self.private)
                except OSError:     # another run has just created its lock there: keep it
                    pass
        finally:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _open_append(path):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CheckpointRefused(f"the journal {path} is not a regular file: refused")
    return fd


def _new_stream_id():
    """128 random bits from the package's CSPRNG (OS-seeded), as 32 hex digits."""
    hi, lo = (int(w) for w in Rng().random_uint64(2))
    return f"{hi:016x}{lo:016x}"
