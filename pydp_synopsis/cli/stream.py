"""``pydp-synopsis count-stream``: private running counts of a stream on stdin,
write-ahead checkpointed, stopped by a signal only between updates."""
import os
import re
import signal
import sys

import numpy as np

from ..checkpoint import StreamCheckpoint
from ..counters import BinaryTreeCounter, KaryTreeCounter
from ..errors import HorizonError, InputError, SynopsisError, UsageError
from ..params import exact_epsilon
from ..sparse_counter import SparseStreamCounter
from .common import check_output_option, rng_of
from .progress import Progress

__all__ = ["COUNTERS", "CheckpointError", "cmd_count_stream"]

COUNTERS = {"kary": KaryTreeCounter, "binary": BinaryTreeCounter, "sparse": SparseStreamCounter}


def _new_counter(args):
    if args.horizon is None or args.epsilon is None:
        raise UsageError("--horizon and --epsilon are required to start a stream "
                         "(or --checkpoint FILE of an existing one)")
    name = args.counter or "kary"
    kwargs = dict(horizon=args.horizon, epsilon=args.epsilon, rng=rng_of(args))
    if name == "kary":
        kwargs["k"] = 19 if args.k is None else args.k
    if name == "sparse":
        kwargs["beta"] = args.beta
    return COUNTERS[name](**kwargs)


def _resume_counter(args, ckpt):
    """The counter of an existing checkpoint and the releases it still owes.

    ``ckpt`` (:class:`~pydp_synopsis.checkpoint.StreamCheckpoint`) has
    verified the checkpoint against its journal, its noise and its pending
    releases.  Every option given on the command line must agree with it:
    a mismatch is refused before anything is read from the stream.
    """
    counter = ckpt.counter
    names = {cls: name for name, cls in COUNTERS.items()}
    name = names.get(type(counter))
    if name is None:
        raise UsageError(f"{args.checkpoint} is not a counter checkpoint")
    given = {"--counter": (args.counter, name),
             "--horizon": (args.horizon, counter.horizon),
             "--epsilon": (None if args.epsilon is None else exact_epsilon(args.epsilon), counter.epsilon),
             "--k": (args.k, getattr(counter, "k", None) if name == "kary" else None)}
    for flag, (value, saved) in given.items():
        if value is not None and value != saved:
            raise UsageError(f"{flag} {value} differs from the checkpoint's {saved} "
                             f"(omit it to continue the saved stream)")
    return counter, ckpt.pending


_INTEGERS = re.compile(r"\s*(?:-?[0-9]+\s+)*(?:-?[0-9]+)?\s*")


def _stream_chunks(fd, reading, size=1 << 16):
    """Integers from whitespace-separated text on a file descriptor, an array per chunk.

    ``os.read`` returns what is available, so a live stream is answered as it
    arrives.  ``reading["now"]`` is True only while blocked in ``read``: the
    signal handler interrupts there, never in the middle of an update.
    """
    pending = b""
    done = 0
    while True:
        reading["now"] = True
        try:
            # A signal that came before "now" was set is seen here; one that
            # comes after raises from the handler: no window to block in.
            if reading["stop"]:
                raise KeyboardInterrupt
            data = os.read(fd, size)
        finally:
            reading["now"] = False
        if not data:
            break
        data = pending + data
        cut = max(data.rfind(b"\n"), data.rfind(b" "))
        if cut < 0:
            pending = data
            continue
        pending = data[cut + 1:]
        chunk = _parse_ints(data[:cut].decode("ascii", "replace"), done)
        done += len(chunk)
        yield chunk
    if pending.strip():
        yield _parse_ints(pending.decode("ascii", "replace"), done)


def _parse_ints(text, before=0):
    """The integers of ``text``; InputError naming the item (never its text) otherwise."""
    if _INTEGERS.fullmatch(text) is None:
        bad = next(i for i, t in enumerate(text.split()) if re.fullmatch(r"-?[0-9]+", t) is None)
        raise InputError(f"stream item {before + bad + 1:,} of this run is not an integer "
                         f"(expected one integer per line, such as 0 or 1)")
    tokens = text.split()
    try:
        return np.array(tokens, dtype=np.int64) if tokens else np.zeros(0, dtype=np.int64)
    except OverflowError:
        bad = next(i for i, t in enumerate(tokens) if not -2**63 <= int(t) < 2**63)
        raise InputError(f"stream item {before + bad + 1:,} of this run is outside the int64 range") from None


class CheckpointError(SynopsisError, OSError):
    """A checkpoint could not be saved: the stream stops releasing."""


def _save_checkpoint(ckpt, counter, pending):
    try:
        ckpt.save(counter, pending)
    except OSError as exc:
        raise CheckpointError(f"could not save the checkpoint {ckpt.path} ({exc.strerror or exc}): "
                              f"stopped; nothing after the last saved state was released") from None


def _open_checkpoint(args):
    """The locked, verified checkpoint files of ``--checkpoint`` (None without it)."""
    if not args.checkpoint:
        for flag, on in (("--adopt-checkpoint", args.adopt_checkpoint), ("--new-stream", args.new_stream)):
            if on:
                raise UsageError(f"{flag} needs --checkpoint FILE")
        return None
    if not os.path.lexists(args.checkpoint):
        check_output_option(args.checkpoint)
    return StreamCheckpoint(args.checkpoint, adopt=args.adopt_checkpoint, new_stream=args.new_stream)


def cmd_count_stream(args):
    """Private running counts of a stream on stdin, write-ahead checkpointed.

    With ``--checkpoint``, every batch goes: update the counter in memory,
    save the new state *with the batch's releases* atomically, then print the
    releases.  A release is never printed before the state that drew its
    noise is durable, so a crash, a kill or a full disk can never make a
    resumed run draw fresh noise for a position already released.  After an
    unclean stop (SIGKILL, power loss) between the save and the print, the
    resumed run first prints that batch's releases again -- the very same
    values, which costs no privacy -- and says so on stderr.

    The checkpoint is locked for the run, journaled and verified before
    anything is read (:mod:`pydp_synopsis.checkpoint`): an older copy,
    another stream's checkpoint, an edited one or a second run at the same
    time is refused in one line (docs/security-checkpoints.md).
    """
    if args.checkpoint:     # read and replaced: a regular file (never a FIFO to block on)
        check_output_option(args.checkpoint, option="--checkpoint")
    ckpt = _open_checkpoint(args)
    try:
        return _count_stream(args, ckpt)
    finally:
        if ckpt is not None:
            ckpt.close()


def _count_stream(args, ckpt):
    """The stream of :func:`cmd_count_stream`, ``ckpt`` held (or None)."""
    if ckpt is not None and ckpt.counter is not None:
        counter, pending = _resume_counter(args, ckpt)
        resumed = True
    else:
        counter, pending, resumed = _new_counter(args), "", False
    if args.positions and not isinstance(counter, SparseStreamCounter):
        raise UsageError("--positions needs --counter sparse (the positions of the 1s of a sparse stream)")
    err = sys.stderr
    start = counter.time
    out = sys.stdout
    if pending:
        print(f"pydp-synopsis: printing again the {pending.count(chr(10)):,} release lines of the last "
              f"batch, which an unclean stop may have cut (the same values: no new noise)", file=err)
        out.write(pending)
        out.flush()
    # SIGINT, SIGTERM and SIGHUP stop the stream between updates: every item
    # read is either fully processed (saved, then printed) or not at all.
    reading = {"now": False, "stop": False}

    def on_signal(signum, frame):
        reading["stop"] = True
        if reading["now"]:
            raise KeyboardInterrupt

    stops = [signal.SIGINT, signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {sig: signal.signal(sig, on_signal) for sig in stops}
    progress = Progress("pydp-synopsis count-stream: items", total=None, quiet_if=out)
    done = 0
    unprinted = ""            # releases saved in the checkpoint but not yet printed whole
    saved = True              # False once a save failed: then nothing more is written
    clean = True              # no error: say where the stream stopped
    try:
        for chunk in _stream_chunks(sys.stdin.fileno(), reading):
            if counter.time + (0 if args.positions else len(chunk)) > counter.horizon:
                raise HorizonError(
                    f"the stream reached its horizon of {counter.horizon:,} positions"
                    + (f" (this run resumed after {start:,}: feed a resumed run only the items "
                       f"after the saved position)" if resumed else ""))
            if args.positions:
                times, values = counter.update_sparse(chunk, monotone=args.monotone)
                text = "".join(f"{t},{v}\n" for t, v in zip(times.tolist(), values.tolist()))
            else:
                released = counter.update_many(chunk, monotone=args.monotone)
                text = "\n".join(map(str, released.tolist())) + ("\n" if len(released) else "")
            if args.checkpoint:
                saved = False
                _save_checkpoint(ckpt, counter, text)
                saved, unprinted = True, text
            out.write(text)
            out.flush()
            unprinted = ""
            done += len(chunk)
            progress.update(done)
    except KeyboardInterrupt:
        pass
    except BaseException:
        clean = False
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        progress.close()
        # Whatever ended the run (end of input, a signal, an error, a broken
        # pipe), the in-memory state is the last saved one (counters change
        # nothing on a refused update): record whether its batch was printed.
        # Not after a failed save: the process stops releasing at once.
        if args.checkpoint and saved:
            _save_checkpoint(ckpt, counter, unprinted)
            if clean:
                resumed_from = f" (resumed after {start:,})" if resumed else ""
                print(f"pydp-synopsis: saved after {counter.time:,} positions{resumed_from} to "
                      f"{args.checkpoint}; resume with: pydp-synopsis count-stream --checkpoint "
                      f"{args.checkpoint} < rest", file=err)
    return 130 if reading["stop"] else 0
