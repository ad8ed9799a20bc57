"""The CSPRNG: every random draw in the package comes from :class:`Rng`.

A ChaCha20 keystream (RFC 8439) computed in C, seeded from the operating
system's ``getrandom()``; an explicit seed gives a reproducible stream for
tests and benchmarks only.

References
----------
.. [RFC8439] Y. Nir, A. Langley. "ChaCha20 and Poly1305 for IETF Protocols."
   RFC 8439, 2018, section 2.3.
"""
import hashlib
import numbers
import threading

import numpy as np

from ._core import check, ffi, lib
from .params import check_sample_shape, is_int

__all__ = ["Rng", "resolve_rng"]


class _Native:
    """``with``-block of :meth:`Rng.native`: the lock held, the C state given."""

    __slots__ = ("_lock", "_state")

    def __init__(self, lock, state):
        self._lock, self._state = lock, state

    def __enter__(self):
        self._lock.acquire()
        return self._state

    def __exit__(self, *exc):
        self._lock.release()
        return False


class Rng:
    """A cryptographically secure random generator (ChaCha20, computed in C).

    Parameters
    ----------
    seed : None, int or bytes, optional
        ``None`` (the default and the only choice for real releases) seeds
        from the operating system's ``getrandom()``.  An ``int`` or ``bytes``
        seed gives a reproducible stream **for tests and benchmarks only**:
        anyone who knows the seed can subtract the noise from a release.
        The seed is hashed with SHA-256 into the 256-bit ChaCha20 key.

    Notes
    -----
    *Fork safety*: the generator remembers the process that seeded it; in a
    child created by ``fork()`` the first draw reseeds from the operating
    system, so parent and child never share a stream (a seeded generator
    stops being reproducible in the child).  The check costs no system call:
    a ``pthread_atfork`` handler counts forks, and ``getpid()`` runs only
    when the count moved since the generator's last check (``csrc/rng.c``).
    A process made without fork's handlers (a raw ``clone``) is not
    detected; ``os.fork`` and ``multiprocessing`` run them.

    *Threads*: the C code runs without the GIL; every call that draws from a
    generator holds its lock, so one ``Rng`` may be shared by threads without
    corrupting its state.  Draws from concurrent threads interleave in an
    unspecified order; use one generator per thread for reproducible runs.

    Pickling is refused: a copied generator would replay the same noise.

    Examples
    --------
    >>> rng = Rng(seed=1)          # tests only
    >>> int(rng.random_uint64()) == int(Rng(seed=1).random_uint64())
    True
    """

    __slots__ = ("_state", "_lock", "_seeded", "__weakref__")

    def __init__(self, seed=None):
        state = ffi.new("pds_rng *")
        if seed is None:
            check(lib.pds_rng_init_os(state), "seeding from the operating system")
        else:
            key = _seed_key(seed)
            check(lib.pds_rng_init_key(state, key), "seeding")
        self._state = state
        self._lock = threading.Lock()
        self._seeded = seed is not None

    @property
    def seeded(self):
        """True when built from an explicit seed (reproducible; tests only)."""
        return self._seeded

    def native(self):
        """A context manager holding the generator's lock and giving its C state
        (``with rng.native() as p:``, ``p`` a ``pds_rng *``).

        For the package's C wrappers, which pass the state to one kernel
        call per batch; user code never needs it.  The lock makes one
        ``Rng`` safe to share between threads.  (A plain object rather
        than a generator: it costs about 0.2 us, which one-item calls feel;
        the one-item paths -- a tree counter's ``update``,
        ``OnlinePartition.feed_one`` -- bind ``_lock.acquire`` /
        ``_lock.release`` and ``_state`` once and call them directly, the
        same lock held around the same C call.)
        """
        return _Native(self._lock, self._state)

    def random_uint64(self, size=None):
        """Raw keystream words: an ``int`` or a ``uint64`` array of shape ``size``.

        O(size); 8 bytes of ChaCha20 output per word.
        """
        shape, count = check_sample_shape(size)
        out = np.empty(count, dtype=np.uint64)
        with self.native() as p:
            check(lib.pds_rng_fill_u64(p, ffi.from_buffer("uint64_t[]", out), count))
        return int(out[0]) if shape is None else out.reshape(shape)

    def integers(self, low, high, size=None):
        """Uniform integers in ``[low, high)`` without modulo bias (``high - low <= 2**64``).

        Returns an ``int`` or an ``int64``/``uint64`` array of shape ``size``.
        O(size).

        Examples
        --------
        >>> x = Rng(seed=0).integers(-5, 5, size=1000)
        >>> int(x.min()) >= -5 and int(x.max()) < 5
        True
        """
        if not (is_int(low) and is_int(high)):
            raise TypeError(f"low and high must be integers, got {type(low).__name__} and "
                            f"{type(high).__name__}")
        low, high = int(low), int(high)
        span = high - low
        if not 0 < span <= 1 << 64:
            raise ValueError(f"need low < high and high - low <= 2**64, got [{low}, {high})")
        shape, count = check_sample_shape(size)
        out = np.empty(count, dtype=np.uint64)
        if span == 1 << 64:
            with self.native() as p:
                check(lib.pds_rng_fill_u64(p, ffi.from_buffer("uint64_t[]", out), count))
        else:
            with self.native() as p:
                check(lib.pds_uniform_fill(p, span, ffi.from_buffer("uint64_t[]", out), count))
        if shape is None:
            return low + int(out[0])
        if low >= 0 and high - 1 > np.iinfo(np.int64).max:
            return (out + np.uint64(low)).reshape(shape)
        if not (np.iinfo(np.int64).min <= low and high - 1 <= np.iinfo(np.int64).max):
            raise ValueError("the range must fit int64 or uint64 for array output")
        return (out.astype(np.int64) + np.int64(low) if span <= 1 << 63 else
                (out + np.uint64(low % (1 << 64))).view(np.int64)).reshape(shape)

    def derive(self, index):
        """Child stream ``index``: an independent generator keyed by this one's key and ``index``.

        Parameters
        ----------
        index : int
            In ``[0, 2**64)``.

        Returns
        -------
        Rng
            A ChaCha20 stream whose key is the block of this generator's key
            with nonce ``(index >> 32, 1, index mod 2**32)`` -- a block this
            generator's own stream never produces (``pds_rng_derive``).  The
            same parent key and index always give the same child; different
            indices give independent streams.  This generator's position is
            unchanged (nothing is drawn).  A child of a seeded generator is
            seeded (tests only); a child of an OS-seeded one is as secret as
            its parent.

        Notes
        -----
        For shards of a distributed build: shard i draws from ``derive(i)``
        in whatever process runs it, while the driver keeps its own stream.
        O(1).

        Examples
        --------
        >>> a, b = Rng(seed=1).derive(3), Rng(seed=1).derive(3)
        >>> int(a.random_uint64()) == int(b.random_uint64())
        True
        >>> int(Rng(seed=1).derive(4).random_uint64()) == int(Rng(seed=1).derive(3).random_uint64())
        False
        """
        return Rng._from_key(self._child_key(index), self._seeded)

    def _child_key(self, index):
        """The 32-byte key of child ``index`` (for shipping one shard's stream to a worker)."""
        if isinstance(index, (bool, np.bool_)) or not isinstance(index, numbers.Integral) \
                or not 0 <= int(index) < 1 << 64:
            raise ValueError(f"index must be an integer in [0, 2**64), got {index!r}")
        key = ffi.new("uint8_t[32]")
        with self.native() as p:
            check(lib.pds_rng_derive(p, int(index), key), "deriving a child stream")
        return bytes(ffi.buffer(key, 32))

    @classmethod
    def _from_key(cls, key, seeded):
        """A generator of a 32-byte key from :meth:`_child_key` (no hashing)."""
        if not isinstance(key, bytes) or len(key) != 32:
            raise ValueError("a child key is 32 bytes")
        rng = cls.__new__(cls)
        state = ffi.new("pds_rng *")
        check(lib.pds_rng_init_key(state, key), "seeding")
        state.seeded = 1 if seeded else 0
        rng._state, rng._lock, rng._seeded = state, threading.Lock(), bool(seeded)
        return rng

    def _to_state(self):
        """The exact generator position of a *seeded* Rng (tests/benchmarks only).

        Counter checkpoints store it so a resumed seeded run reproduces an
        uninterrupted one.  An OS-seeded generator's key is never exported:
        returns None, and a restored counter draws its future noise from
        fresh OS entropy.
        """
        if not self._seeded:
            return None
        with self.native() as p:
            return {
                "key": [int(w) for w in p.key],
                "block": int(p.block),
                "buf": [str(int(w)) for w in p.buf],
                "pos": int(p.pos),
                "half": int(p.half),
                "nhalf": int(p.nhalf),
                "bits": str(int(p.bits)),
                "nbits": int(p.nbits),
            }

    @classmethod
    def _from_state(cls, state):
        """Rebuild a seeded Rng saved by :meth:`_to_state` (validated)."""
        try:
            key = [int(w) for w in state["key"]]
            buf = [int(w) for w in state["buf"]]
            fields = {k: int(state[k]) for k in ("block", "pos", "half", "nhalf", "bits", "nbits")}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad generator state ({exc})") from None
        if (len(key) != 8 or len(buf) != 64 or any(not 0 <= w < 2**32 for w in key)
                or any(not 0 <= w < 2**64 for w in buf) or not 0 <= fields["pos"] <= 64
                or fields["nhalf"] not in (0, 1) or not 0 <= fields["nbits"] <= 64
                or not 0 <= fields["half"] < 2**32 or not 0 <= fields["bits"] < 2**64
                or not 0 <= fields["block"] < 2**64):
            raise ValueError("bad generator state (field out of range)")
        rng = cls(seed=0)
        with rng.native() as p:
            for i, w in enumerate(key):
                p.key[i] = w
            for i, w in enumerate(buf):
                p.buf[i] = w
            for name, value in fields.items():
                setattr(p, name, value)
        return rng

    def __reduce__(self):
        raise TypeError("an Rng cannot be pickled or copied: the copy would replay the same noise")

    def __repr__(self):
        return "Rng(<seeded: tests only>)" if self._seeded else "Rng(<OS entropy>)"


def _seed_key(seed):
    if isinstance(seed, (bool, np.bool_)):
        raise TypeError("seed must be None, an int or bytes, not bool")
    if isinstance(seed, numbers.Integral):
        seed = int(seed)
        data = b"int:" + seed.to_bytes((seed.bit_length() + 8) // 8 + 1, "little", signed=True)
    elif isinstance(seed, (bytes, bytearray, memoryview)):
        data = b"bytes:" + bytes(seed)
    else:
        raise TypeError(f"seed must be None, an int or bytes, not {type(seed).__name__}")
    return hashlib.sha256(b"pydp_synopsis.Rng v1\0" + data).digest()


def resolve_rng(rng, name="rng"):
    """``rng`` itself if it is an :class:`Rng`, a fresh OS-seeded one for ``None``."""
    if rng is None:
        return Rng()
    if isinstance(rng, Rng):
        return rng
    raise TypeError(f"{name} must be a pydp_synopsis.Rng or None, not {type(rng).__name__}")
