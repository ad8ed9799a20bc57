"""Dask collections as sources: aggregation, shards and cell counts on the cluster.

The builders accept a dask Array (1-D: one column; 2-D: one column per
axis), Series or DataFrame directly (they wrap it in :class:`DaskSource`),
and ``shards=k``.  The work is split as follows:

* **On the cluster**, per partition of the collection: the values are checked
  (integers, no NULL, inside the domain; errors name the column) and
  aggregated into sorted ``(value, count)`` runs per axis and per shard; the
  runs of each shard are merged by a tree of tasks.  The driver learns only
  that the data are valid and the number of rows, and only then charges the
  budget and draws noise.
* **Shards** (``shards=k > 1``, :mod:`pydp_synopsis.partitions.sharded`): each shard's
  private partition (the task :mod:`pydp_synopsis.partitions.runner` hands to
  :meth:`_DaskPrepared.map_shards`) runs on the worker that holds the shard's
  aggregate, drawing from child stream i of a key drawn fresh from the
  driver's generator (``Rng.derive``); only the segment ends and their
  weights travel back.  With one shard the aggregate is streamed to the
  driver in value ranges and partitioned there with the driver's generator,
  so ``shards=1`` reproduces the in-memory build exactly.
* **Cells** (rectangles): per partition, each row's partition cell (the
  released segment ends are sent to the workers) aggregated into distinct
  cells with counts; the driver streams those weighted cells into the
  noisy structure, one partition at a time.

What travels: the public domain, cut points and released segment ends to the
cluster; validity, row counts, aggregates (one shard's or range's at a time,
when partitioned on the driver) and cell counts back.  The child keys of a
sharded build are sent to the workers: anyone who can read the cluster's
messages can remove that partition's noise, as anyone who can read the
cluster's data can read the data -- use TLS (``distributed``'s security
settings) on an untrusted network.

References
----------
.. [DASK] Dask documentation, "Delayed" and "Persist" (``dask.persist``,
   ``to_delayed``); ``distributed.LocalCluster``.
"""
import gc
import logging
import math
import re
import socket
import struct
import time

import numpy as np

from ..aggregates import Cells, SegmentIndex, aggregate, histogram, merge
from ..errors import InputError, ParameterError
from ..units import convert_chunk, missing_message, needs_conversion
from ..inputs import parse_scale, to_fixed_point
from ..partitions.sharded import shard_domains
from .base import Prepared, Source, column_offsets, prefetch
from .files import expand_paths

__all__ = ["DaskSource", "dask_files", "check_scheduler", "check_cluster_timeout",
           "CLUSTER_TIMEOUT"]

#: Seconds to wait for a dask scheduler (``--cluster-timeout``): to connect and
#: finish the handshake, and for any message sent to it to be acknowledged
#: (``distributed.comm.timeouts.connect`` and ``.tcp`` for the build's life).
CLUSTER_TIMEOUT = 30.0
_MIN_TCP_TIMEOUT = 11.0

#: ``tcp://HOST:PORT``, ``tls://HOST:PORT`` or ``HOST:PORT`` (HOST a name, an IPv4
#: address or a bracketed IPv6 address): the addresses a separate process can reach.
_ADDRESS = re.compile(r"(?:(?:tcp|tls)://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.\-]*)"
                      r":([0-9]{1,5})")

#: An unsharded axis is streamed to the driver in equal-width value ranges of
#: about this many aggregate entries each (16 bytes per entry).
RANGE_ENTRIES = 1 << 22


def check_scheduler(address):
    """``address`` if it is a dask scheduler address a build can reach, else one line.

    >>> check_scheduler("tcp://127.0.0.1:8786")
    'tcp://127.0.0.1:8786'
    >>> check_scheduler("inproc://x")
    Traceback (most recent call last):
    ...
    pydp_synopsis.errors.ParameterError: --scheduler 'inproc://x' is not a dask scheduler address: give tcp://HOST:PORT, tls://HOST:PORT or HOST:PORT
    """
    match = _ADDRESS.fullmatch(address) if isinstance(address, str) else None
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise ParameterError(f"--scheduler {address!r} is not a dask scheduler address: give "
                             f"tcp://HOST:PORT, tls://HOST:PORT or HOST:PORT")
    return address


def check_cluster_timeout(seconds):
    """``seconds`` as a float if it is a finite number of seconds in [1, 86400], else one line.

    >>> check_cluster_timeout(30)
    30.0
    """
    value = float(seconds)
    if not (math.isfinite(value) and 1 <= value <= 86400):
        raise ParameterError(f"--cluster-timeout must be between 1 and 86400 seconds, got "
                             f"{seconds}")
    return value


def _compute(*tasks):
    """``dask.compute(*tasks)``; a task whose workers all died, or a scheduler that
    stopped answering, becomes one InputError.

    Dask retries a task whose worker dies (``distributed.scheduler.allowed-failures``
    times); when every retry dies it raises ``KilledWorker``.  Nothing has been
    released then: the build stops here, naming the cluster, not the data.
    On a ``distributed`` client the computation is watched (:func:`_watched`).
    """
    import dask

    try:
        client = _client()
        return dask.compute(*tasks) if client is None else _watched(client, tasks)
    except Exception as exc:
        if type(exc).__name__ == "CommClosedError" or isinstance(exc, TimeoutError):
            raise InputError(f"lost the dask scheduler ({type(exc).__name__}): it stopped "
                             f"answering within --cluster-timeout; nothing was released") \
                from None
        if type(exc).__name__ != "KilledWorker":
            raise
        raise InputError("the dask cluster lost a task: its workers died on every retry; "
                         "nothing was released") from None


def _client():
    """The default ``distributed`` client, or None (dask's local schedulers)."""
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:
        return None


#: Consecutive unanswered pings after which a scheduler is taken for lost: a live
#: scheduler on a loaded machine may miss one.
PINGS = 3


def _watched(client, tasks):
    """``tasks`` computed on ``client``.  While they run, the scheduler is asked every
    ``distributed.comm.timeouts.connect`` seconds (``--cluster-timeout``, T) whether
    it still answers, each time with T to answer; after :data:`PINGS` unanswered
    pings in a row (about (PINGS + 1) T of silence) TimeoutError is raised.  A slow
    computation on a live scheduler is never cut short."""
    import dask
    from dask.utils import parse_timedelta
    from distributed import wait

    limit = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s")
    futures = client.compute(list(tasks))
    missed = 0
    while True:
        try:
            wait(futures, timeout=limit)
            break
        except TimeoutError:
            pass
        try:
            client.sync(client.scheduler.identity, callback_timeout=limit)
            missed = 0
        except TimeoutError:
            missed += 1
            if missed >= PINGS:
                raise
    return tuple(client.gather(futures))


def _kind(data):
    module = type(data).__module__ or ""
    name = type(data).__name__
    if not module.startswith("dask"):
        return None
    if name == "Array":
        return "array"
    if name == "Series":
        return "series"
    if name == "DataFrame":
        return "frame"
    return None


class DaskSource(Source):
    """A dask Array, Series or DataFrame, read where it lives.

    Parameters
    ----------
    data : dask.array.Array, dask.dataframe.Series or dask.dataframe.DataFrame
        A 1-D array or a Series is one column; a 2-D array has one column per
        axis (rechunked to whole rows); a DataFrame's ``columns`` are read.
    columns : sequence of str, optional
        DataFrame columns in axis order (default: all); names for an array's
        columns in messages.
    scale : str or number, optional
        Fixed-point scale for decimal columns.
    units : sequence of Column, optional
        One :class:`~pydp_synopsis.units.Column` per column: dates, times (a
        time-zone-aware dtype is read as UTC instants), decimals with a
        scale or a resolution, converted on the workers exactly as the
        local sources convert them (:func:`pydp_synopsis.units.convert_chunk`).
        The builders give a collection the descriptions they infer
        (``scale=``, ``resolution=``, a domain of dates).
    dropna : bool
        Drop every row with a missing value in a used column, lazily on the
        cluster (a per-row filter).

    Notes
    -----
    Computations run on the current dask scheduler (a ``distributed.Client``
    if one is active).  Nothing is computed here.

    Examples
    --------
    >>> import dask.array as da, pydp_synopsis as ps
    >>> x = da.from_array(np.array([3, 5, 5, 9]), chunks=2)
    >>> s = ps.IntervalSynopsis.build(x, domain=(0, 15), epsilon=1e6, rng=ps.Rng(seed=1),
    ...                               shards=1)
    >>> round(s.count(0, 15))
    4
    """

    def __init__(self, data, columns=None, *, scale=None, dropna=False, units=None):
        kind = _kind(data)
        if kind is None:
            raise ParameterError(f"not a dask Array, Series or DataFrame: {type(data).__name__}")
        parse_scale(scale)
        self.scale = scale
        self.units = tuple(units) if needs_conversion(units) else None
        if dropna:       # the per-row filter, lazily on the cluster
            data = _dropna(data, kind, columns)
        if kind == "array":
            if data.ndim == 1:
                data = data[:, None]
            elif data.ndim != 2:
                raise ParameterError(f"a dask array must be 1-D or 2-D, got {data.ndim}-D")
            data = data.rechunk({1: -1})
            names = list(columns) if columns else [str(i) for i in range(data.shape[1])]
            if len(names) != data.shape[1]:
                raise ParameterError(f"{len(names)} names for {data.shape[1]} columns")
            self._parts = list(data.to_delayed().ravel())
            self._convert = ("array", None)
        elif kind == "series":
            names = [str(data.name) if data.name is not None else "0"]
            self._parts = list(data.to_delayed())
            self._convert = ("series", None)
        else:
            names = list(columns) if columns else [str(c) for c in data.columns]
            missing = [c for c in names if c not in data.columns]
            if missing:
                raise InputError(f"the DataFrame has no column {missing[0]!r} (columns: "
                                 f"{', '.join(map(str, data.columns))[:200]})")
            self._parts = list(data[names].to_delayed())
            self._convert = ("frame", names)
        self.columns = tuple(names)
        if self.units is not None and len(self.units) != len(names):
            raise ParameterError("units= must describe every column")

    @property
    def _reading(self):
        """How the workers turn a partition's columns into integers: ``(scale, units)``."""
        return self.scale, self.units

    def prepare(self, domains, progress=None, clip=False):
        self.check_dims(domains)
        return _DaskPrepared(self, tuple(domains), clip)


def _dropna(data, kind, columns):
    """``data`` without the rows holding a missing value in a used column."""
    if kind == "array":
        import dask.array as da

        if data.dtype.kind != "f":
            return data
        two = data[:, None] if data.ndim == 1 else data
        keep = ~da.isnan(two).any(axis=1)
        keep.compute_chunk_sizes()
        return data[keep] if data.ndim == 1 else data[keep, :]
    if kind == "series":
        return data.dropna()
    return data.dropna(subset=list(columns) if columns else None)


def _columns_of(part, convert, names, reading, clip=None):
    """A computed partition as a list of exact integer columns (errors name the column);
    ``reading``: ``(scale, units)`` (:attr:`DaskSource._reading`); ``clip``: per column,
    the bounds to clip to (:func:`to_fixed_point`)."""
    scale, units = reading
    kind, frame_names = convert
    if kind == "array":
        arr = np.asarray(part)
        raw = [arr[:, j] for j in range(arr.shape[1])]
    elif kind == "series":
        raw = [part]
    else:
        raw = [part[c] for c in frame_names]
    if units is not None:       # dates, decimals, resolutions: the local sources' rule
        return convert_chunk(raw, units, names, clip=clip)[0]
    out = []
    for a, (col, name) in enumerate(zip(raw, names)):
        if hasattr(col, "isna"):                      # pandas: NULLs, then numpy
            if bool(col.isna().any()):
                raise InputError(missing_message("", name))
            col = col.to_numpy()
        col = np.asarray(col)
        if col.dtype.kind == "f" and (np.isnan(col).any() if clip else
                                      not np.isfinite(col).all()):
            raise InputError(missing_message("", name))
        out.append(to_fixed_point(col, scale, name, None if clip is None else clip[a]))
    return out


def _pass1(part, convert, names, reading, domains, clip=False):
    """Per axis, the sorted aggregate of one partition; and its row count."""
    cols = _columns_of(part, convert, names, reading, domains if clip else None)
    return len(cols[0]) if cols else 0, [aggregate(column_offsets(col, dom, name, clip))
                                         for col, dom, name in zip(cols, domains, names)]


def _summary(result):
    """Rows and, per axis, aggregate entries of one partition (what the driver learns)."""
    return result[0], [keys.size for keys, _ in result[1]]


def _slice(result, a, start, stop):
    """The part of a partition's axis-a aggregate with offsets in [start, stop)."""
    keys, counts = result[1][a]
    i, j = np.searchsorted(keys, np.array([start, stop], dtype=np.uint64), side="left") \
        if stop < 1 << 64 else (np.searchsorted(keys, np.uint64(start), side="left"), keys.size)
    return keys[i:j], counts[i:j]


def _merge2(x, y):
    return merge([x, y])


def _tree(items, combine):
    """A balanced tree of ``combine`` over delayed items (depth log2 n)."""
    from dask import delayed

    items = list(items)
    while len(items) > 1:
        items = [delayed(combine)(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def _cells(part, convert, names, reading, domains, ends, clip=False):
    """Runs on a worker: the partition cells of one partition's rows, with counts."""
    cols = _columns_of(part, convert, names, reading, domains if clip else None)
    seg = np.stack([SegmentIndex(e).of(column_offsets(col, dom, name, clip))
                    for col, dom, name, e in zip(cols, domains, names, ends)], axis=1)
    sizes = [e.size for e in ends]
    if float(np.prod(np.array(sizes, dtype=float))) < 2.0**63:
        keys, counts = aggregate(np.ravel_multi_index(tuple(seg.astype(np.int64).T),
                                                      sizes).astype(np.uint64))
        seg = np.stack(np.unravel_index(keys.astype(np.int64), sizes), axis=1)
        return seg.astype(np.uint32), counts
    uniq, inv = np.unique(seg, axis=0, return_inverse=True)
    return uniq.astype(np.uint32), histogram(inv.ravel(), None, len(uniq))


class _DaskPrepared(Prepared):
    """Pass 1 persisted on the cluster; partitions and cells computed from it."""

    def __init__(self, source, domains, clip=False):
        import dask
        from dask import delayed

        self._source, self._domains, self._clip = source, domains, clip
        tasks = [delayed(_pass1)(p, source._convert, source.columns, source._reading, domains,
                                 clip)
                 for p in source._parts]
        # held on the workers; validity and the row count reach the driver
        # before anything is released
        self._persisted = list(dask.persist(*tasks))
        summaries = _compute(*[delayed(_summary)(p) for p in self._persisted])
        self.rows = int(sum(rows for rows, _ in summaries))
        self._entries = [sum(sizes[a] for _, sizes in summaries) for a in range(len(domains))]

    def _range(self, a, start, stop):
        """The merged aggregate of axis a's offsets in [start, stop) (delayed, on the cluster)."""
        from dask import delayed

        return _tree([delayed(_slice)(p, a, start, stop) for p in self._persisted], _merge2)

    def _pieces(self, a, k):
        lo, hi = self._domains[a]
        return [(s - lo, t - lo + 1) for s, t in shard_domains((lo, hi), min(k, hi - lo + 1))]

    def axis(self, a):
        """The aggregate of axis a, streamed to the driver one value range at a time."""
        pieces = self._pieces(a, max(1, -(-self._entries[a] // RANGE_ENTRIES)))

        def ranges():
            for start, stop in pieces:
                yield _compute(self._range(a, start, stop))[0]

        return prefetch(ranges())

    def map_shards(self, a, shards, function, arguments):
        """``function(aggregate_i, *arguments[i])`` on the cluster for each public shard i of
        axis ``a`` (the shard's merged sorted aggregate, offsets from the axis's lo), results
        in shard order (:func:`~pydp_synopsis.partitions.runner.partition_source_axis`)."""
        from dask import delayed

        return _compute(*[delayed(function)(self._range(a, start, stop), *args)
                          for (start, stop), args in zip(self._pieces(a, shards), arguments)])

    def cells(self, ends):
        import dask
        from dask import delayed

        src = self._source
        ends = [np.ascontiguousarray(e, dtype=np.uint64) for e in ends]
        tasks = list(dask.persist(*[delayed(_cells)(p, src._convert, src.columns, src._reading,
                                                    self._domains, ends, self._clip)
                                    for p in src._parts]))

        def chunks():
            for task in tasks:
                yield _compute(task)[0]

        return Cells(lambda: prefetch(chunks()))

    def close(self):
        self._persisted = None


def dask_files(spec, columns, *, scale=None, scheduler=None, dropna=False,
               timeout=CLUSTER_TIMEOUT, units=None):
    """CSV or Parquet files read by dask (``--engine dask``), on ``scheduler`` if given.

    Without a scheduler address a ``distributed.LocalCluster`` of worker
    processes is started for the build (one per core) and closed with it.
    ``timeout`` (seconds, :data:`CLUSTER_TIMEOUT`) bounds the connection and
    every message's acknowledgement: a scheduler that accepts and never
    answers, or a server that is no dask scheduler, is one InputError.
    """
    if scheduler is not None:
        check_scheduler(scheduler)
    timeout = check_cluster_timeout(timeout)
    try:
        import dask.dataframe  # noqa: F401 (the reader of the files, on the cluster)
        import distributed  # noqa: F401
    except ImportError:
        raise InputError("--engine dask needs dask: pip install 'pydp-synopsis[dask]'") from None
    paths, fmt = expand_paths(spec)
    if fmt not in ("csv", "parquet"):
        raise InputError(f"--engine dask reads .csv and .parquet files, not .{fmt}")
    if not columns:
        raise InputError("name the columns to use (columns=['a', 'b'])")
    return _ClusterSource(paths, fmt, list(columns), scale, scheduler, dropna, timeout, units)


class _ClusterSource(Source):
    """Files read by dask on a cluster that lives as long as the build."""

    def __init__(self, paths, fmt, columns, scale, scheduler, dropna=False,
                 timeout=CLUSTER_TIMEOUT, units=None):
        self._paths, self._fmt, self.columns = paths, fmt, tuple(columns)
        self._timeout = timeout
        self._dropna = bool(dropna)
        self._scale, self._scheduler = scale, scheduler
        parse_scale(scale)
        self.units = tuple(units) if needs_conversion(units) else None

    @property
    def scale(self):
        """The fixed-point scale of decimal columns (None: integers)."""
        return self._scale

    def prepare(self, domains, progress=None, clip=False):
        import dask
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        self.check_dims(domains)
        wait = f"{self._timeout:g}s"
        # For the build's life: connections time out, an idle one is probed by TCP
        # keepalives (distributed requires at least 11 s there), and a computation
        # asks the scheduler every `wait` whether it still answers (_watched).
        config = dask.config.set({"distributed.comm.timeouts.connect": wait,
                                  "distributed.comm.timeouts.tcp":
                                      f"{max(self._timeout, _MIN_TCP_TIMEOUT):g}s"})
        cluster = None
        try:
            if self._scheduler:
                # distributed's handshake read has no timeout: a server that accepts and
                # never answers hung it; an HTTP server's reply became a message length
                _probe(self._scheduler, self._timeout)
                client = Client(self._scheduler, timeout=wait, set_as_default=True)
            else:
                cluster = LocalCluster(processes=True, dashboard_address=None)
                client = Client(cluster, set_as_default=True, timeout=wait)
        except (Exception, MemoryError) as exc:
            # Its text is the other side's (an HTTP server's bytes read as a message
            # length gave "Unable to allocate 3.07 EiB"): only its class is shown.
            failure = type(exc).__name__
        else:
            failure = None
        if failure is not None:
            if cluster is not None:
                cluster.close()
            config.__exit__(None, None, None)
            _drop_failed_comms()
            where = f"the dask scheduler {self._scheduler}" if self._scheduler else \
                "a local dask cluster"
            raise InputError(f"cannot connect to {where} within --cluster-timeout "
                             f"{self._timeout:g} s ({failure}): is a dask scheduler "
                             f"listening there?")
        try:
            if self._fmt == "parquet":
                frame = dd.read_parquet(self._paths, columns=list(self.columns))
            else:
                # decimals and dates as their text: converted exactly, as the local
                # engines convert them
                frame = dd.read_csv(self._paths, usecols=list(self.columns),
                                    dtype={c: "object" for c in self.columns}
                                    if self._scale or self.units else None)
            prepared = DaskSource(frame, self.columns, scale=self._scale, units=self.units,
                                  dropna=self._dropna).prepare(domains, clip=clip)
        except BaseException:
            client.close()
            if cluster is not None:
                cluster.close()
            config.__exit__(None, None, None)
            raise
        return _WithClient(prepared, client, cluster, config)


def _probe(address, timeout):
    """Raise unless a ``tcp://`` scheduler at ``address`` sends the start of a dask
    handshake within ``timeout`` seconds of the connection (a dask scheduler speaks
    first; a silent server or an HTTP server does not).  ``tls://`` is left to
    distributed (a TLS client speaks first)."""
    if address.startswith("tls://"):
        return
    host, _, port = address.split("://")[-1].rpartition(":")
    deadline = time.monotonic() + timeout
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
        head = b""
        while len(head) < 8:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            more = sock.recv(8 - len(head))
            if not more:
                raise ConnectionError("closed")
            head += more
    # the first frame of a dask message: its little-endian length, a few hundred bytes
    if not 0 < struct.unpack("<Q", head)[0] < 1 << 20:
        raise ConnectionError("no dask handshake")


def _drop_failed_comms():
    """Collect the comms a failed connection left, without distributed's warning about
    each one ("Closing dangling stream"): the failure is already said in one line."""
    log = logging.getLogger("distributed.comm.tcp")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        gc.collect()
    finally:
        log.setLevel(level)


class _WithClient(Prepared):
    """A prepared dask source that closes its client (and cluster) at the end."""

    def __init__(self, inner, client, cluster, config):
        self._inner, self._client, self._cluster = inner, client, cluster
        self._config = config
        self.rows = inner.rows

    def axis(self, a):
        return self._inner.axis(a)

    def map_shards(self, a, shards, function, arguments):
        return self._inner.map_shards(a, shards, function, arguments)

    def cells(self, ends):
        return self._inner.cells(ends)

    def close(self):
        self._inner.close()
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        if self._config is not None:
            self._config.__exit__(None, None, None)
            self._config = None
