"""Issue 30, the command line's boundary: outputs that are regular files only, inputs
never overwritten, signals that leave no raw rows on disk, one line for every failure
(never a count or a width from numpy), numbers read one way, clusters that time out."""
import http.server
import os
import re
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import pydp_synopsis as ps
from pydp_synopsis import persist
from pydp_synopsis.cli import main
from pydp_synopsis.outputs import OutputError, check_target
from pydp_synopsis.sources import ArraySource
from clirun import PACKAGE_PARENT, one_line_error, run
from clirun import command


def cli(capsys, *args):
    """``pydp-synopsis ARGS`` in this process: (status, stdout, stderr)."""
    rc = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, *args, fragments=()):
    rc, out, err = cli(capsys, *args)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (rc, err)
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def csv_input(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("x\n1\n2\n5\n")
    return path


@pytest.fixture
def synopsis(tmp_path):
    path = tmp_path / "s.syn"
    ps.IntervalSynopsis.build([1, 2, 5], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(path)
    return path


def special_outputs(tmp_path):
    """A FIFO, a symbolic link to it, a directory: none may be replaced."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    directory = tmp_path / "dir"
    directory.mkdir()
    return [fifo, link, directory]


def still_special(path):
    st = os.lstat(path)
    return not stat.S_ISREG(st.st_mode)


# ------------------------------------------------------------ 1. non-regular outputs

def test_build_refuses_a_fifo_a_link_to_one_and_a_directory_before_reading(capsys, tmp_path):
    # the input is not even valid: the output is refused first, before any work
    bad = tmp_path / "bad.csv"
    bad.write_text("x\nnot-a-number\n")
    for target in special_outputs(tmp_path):
        line = refused(capsys, "build", "--input", bad, "--columns", "x", "--domain=0:9",
                       "--epsilon", 1, "--output", target,
                       fragments=("--output", str(target), "not a regular file"))
        assert "number" not in line
        assert still_special(target)


def test_every_command_refuses_a_fifo_output(capsys, tmp_path, synopsis):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused(capsys, "query", synopsis, "--lo", 0, "--hi", 5, "--output", fifo,
            fragments=("--output", "FIFO"))
    refused(capsys, "demo", "--write-data", fifo, fragments=("--write-data", "FIFO"))
    refused(capsys, "demo", "--plot", fifo, fragments=("--plot", "FIFO"))
    refused(capsys, "plot", synopsis, "-o", fifo, fragments=("--output", "FIFO"))
    # an existing checkpoint is read, then replaced: a FIFO would block the read
    refused(capsys, "count-stream", "--horizon", 8, "--epsilon", 1, "--checkpoint", fifo,
            fragments=("--checkpoint", "FIFO"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_the_one_writer_refuses_special_files(tmp_path):
    for target in special_outputs(tmp_path):
        with pytest.raises(OutputError, match="not a regular file"):
            persist.atomic_write(target, lambda fh: fh.write(b"x"))
        assert still_special(target)
    # /dev/null itself is only checked, never offered to a writer: on code without the
    # check, a test run as root would replace the machine's /dev/null
    with pytest.raises(OutputError, match="character device"):
        check_target("/dev/null", "--output")
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".pdsyn-")]
    syn = ps.IntervalSynopsis.build([1], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1))
    with pytest.raises(OutputError):
        syn.save(tmp_path / "fifo")


def test_a_link_to_a_regular_file_is_replaced_not_written_through(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("kept")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    check_target(link)
    persist.atomic_write(link, lambda fh: fh.write(b"new"))
    assert target.read_text() == "kept" and not link.is_symlink() and link.read_text() == "new"
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="dangling"):
        check_target(dangling, "--output")


# ---------------------------------------------------------------- 2. inputs vs outputs

def test_plot_refuses_to_overwrite_its_release_log(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    checkpoint = tmp_path / "c.ckpt"
    persist.save(ps.KaryTreeCounter(horizon=8, epsilon=1, rng=ps.Rng(seed=1)), checkpoint)
    releases = tmp_path / "rel.txt"
    releases.write_text("1\n2\n")
    hard = tmp_path / "hard.txt"
    os.link(releases, hard)
    soft = tmp_path / "soft.txt"
    soft.symlink_to(releases)
    for output in (releases, hard, soft):
        refused(capsys, "plot", checkpoint, "--releases", releases, "-o", output,
                fragments=("also an input",))
        assert releases.read_text() == "1\n2\n" and soft.is_symlink()


# ------------------------------------------------------------ 3. disk full names the file

def limited(fsize=None, address_space=None):
    """A preexec function: the child's file size limit (SIGXFSZ is ignored by Python,
    so a write past it fails with EFBIG, as on a full disk) and address space."""
    def apply():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    return apply


def run_limited(args, tmp_path, **limits):
    return subprocess.run(command() + [str(a) for a in args], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT, TMPDIR=str(tmp_path)),
                          cwd=tmp_path, timeout=300, preexec_fn=limited(**limits))


@pytest.mark.integration
def test_a_full_disk_names_the_file(tmp_path):
    out = tmp_path / "zip.csv"
    proc = run_limited(["demo", "--write-data", out], tmp_path, fsize=20_000)
    line = one_line_error(proc, str(out))
    assert "too large" in line.lower() and not out.exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".pdsyn-")]


# ------------------------------------------------------ 4. query --lo/--hi --output

def test_query_lo_hi_writes_its_output(capsys, tmp_path, synopsis):
    out = tmp_path / "a.csv"
    rc, stdout, err = cli(capsys, "query", synopsis, "--lo", 0, "--hi", 5, "--confidence", 0.9,
                          "--output", out)
    assert rc == 0 and stdout == "" and err == ""
    header, row = out.read_text().splitlines()
    assert header == "lo,hi,answer,std,low,high,simultaneous_bound"
    assert row.startswith("0,5,") and len(row.split(",")) == 7


# ------------------------------------------------------------ 5. signals and spills

@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    """~2.5 M rows: a build spills for a few seconds (room to signal it mid-build)."""
    path = tmp_path_factory.mktemp("big") / "big.csv"
    values = np.arange(2_500_000, dtype=np.int64) * 7919 % 1_000_000_007
    path.write_text("x\n" + "\n".join(map(str, values.tolist())) + "\n")
    return path


def spill_files(tmpdir):
    return [os.path.join(root, name) for root, _, names in os.walk(tmpdir) for name in names
            if "pydp-" in root]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_build_removes_the_spilled_rows(tmp_path, big_csv, sig):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "s.syn"
    proc = subprocess.Popen(command() + ["build", "--input", str(big_csv), "--columns", "x",
                                         "--domain=0:1000000007", "--epsilon", "1",
                                         "--output", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT, TMPDIR=str(tmpdir)),
                            cwd=tmp_path)
    deadline = time.monotonic() + 120
    modes = None
    while time.monotonic() < deadline and proc.poll() is None:
        files = [f for f in spill_files(tmpdir) if f.endswith(".u64")]
        if files and os.path.getsize(files[0]) > 0:
            try:
                modes = (stat.S_IMODE(os.stat(os.path.dirname(files[0])).st_mode),
                         stat.S_IMODE(os.stat(files[0]).st_mode))
            except FileNotFoundError:
                continue
            proc.send_signal(sig)
            break
        time.sleep(0.005)
    _, err = proc.communicate(timeout=120)
    assert modes is not None, "the build ended before it could be signalled"
    assert os.listdir(tmpdir) == [] and not out.exists()
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    lines = err.strip().splitlines()
    assert lines == [f"pydp-synopsis: interrupted ({signal.Signals(sig).name})"], err
    assert modes == (0o700, 0o600), modes
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".pdsyn-")]


@pytest.mark.integration
def test_spill_files_are_private_while_they_exist(tmp_path):
    seen = []
    source = ArraySource([np.arange(5000) % 97, np.arange(5000) % 89], names=["a", "b"],
                         chunk_rows=1000)
    source.spill_directory = str(tmp_path)
    source.spill_offsets = True          # as a CSV source: offsets, then cells spilled
    source.memory_entries = 64           # sorted runs spilled too
    prepared = source.prepare([(0, 96), (0, 88)])
    try:
        cells = prepared.cells([np.array([40, 96], dtype=np.uint64),
                                np.array([88], dtype=np.uint64)])
        for _ in cells:
            pass
        for root, dirs, names in os.walk(tmp_path):
            if root != str(tmp_path):
                seen.append(stat.S_IMODE(os.stat(root).st_mode))
            seen += [stat.S_IMODE(os.stat(os.path.join(root, n)).st_mode) for n in names]
        kinds = {os.path.splitext(n)[1] for _, _, names in os.walk(tmp_path) for n in names}
    finally:
        prepared.close()
    assert {".u64", ".u32", ".keys", ".counts"} <= kinds, kinds
    assert set(seen) == {0o700, 0o600}, seen
    assert os.listdir(tmp_path) == []


# ----------------------------------------- 6. spill failures: no numpy text, no counts

def _spill_failure(tmp_path, rows):
    work = tmp_path / f"n{rows}"
    work.mkdir()
    (work / "x.csv").write_text("x\n" + "3\n" * rows)
    proc = run_limited(["build", "--input", "x.csv", "--columns", "x", "--domain=0:9",
                        "--epsilon", 1, "--output", "s.syn"], work, fsize=4096)
    line = one_line_error(proc, "could not write the temporary file", "offsets0.u64")
    return re.sub(r"pydp-source-\w+", "pydp-source-*", line.replace(str(work), "WORK"))


@pytest.mark.integration
def test_a_failed_spill_write_is_the_same_line_for_neighbouring_inputs(tmp_path):
    a, b = _spill_failure(tmp_path, 3000), _spill_failure(tmp_path, 3001)
    assert a == b, (a, b)
    assert "requested" not in a and "written" not in a.split("could not write")[1]
    assert not re.search(r"\b300[01]\b|\b2400[08]\b", a)


def test_a_text_column_never_tells_its_longest_string(tmp_path):
    messages = []
    for longest in ("abcdef", "abcdefg"):
        source = ArraySource([np.array(["ab", longest])], names=["x"])
        with pytest.raises(TypeError) as info:
            ps.IntervalSynopsis.build(source, domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1))
        messages.append(str(info.value))
    assert messages[0] == messages[1] == "column 'x' must be an array of integers, got dtype str"


# ------------------------------------------- 7. memory, numbers, scheduler addresses

@pytest.mark.integration
def test_out_of_memory_is_one_line(tmp_path):
    # 10^9 random queries need ~16 GB: refused by a 3 GB address space
    proc = run_limited(["demo", "--queries", 10**9], tmp_path, address_space=3 << 30)
    line = one_line_error(proc, "out of memory")
    assert "GiB" not in line and "Unable to allocate" not in line


_BUILD = ["build", "--input", "x.csv", "--columns", "x", "--domain=0:9", "--output", "o"]


@pytest.mark.parametrize("option, args", [
    ("--epsilon", _BUILD + ["--epsilon", "1_0"]),
    ("--beta", _BUILD + ["--epsilon", "1", "--beta", "0_05"]),
    ("--shards", _BUILD + ["--epsilon", "1", "--shards", "1_6"]),
    ("--seed", _BUILD + ["--epsilon", "1", "--seed", "1_2"]),
    ("--queries", ["demo", "--queries", "1_000"]),
    ("--epsilon", ["demo", "--epsilon", " 1"]),
    ("--horizon", ["count-stream", "--horizon", "1_0", "--epsilon", "1"]),
    ("--epsilon", ["count-stream", "--horizon", "10", "--epsilon", "nan"]),
    ("--k", ["count-stream", "--horizon", "10", "--epsilon", "1", "--k", "1_9"]),
    ("--confidence", ["query", "s.syn", "--lo", "0", "--hi", "1", "--confidence", "0_9"]),
    ("--confidence", ["plot", "s.syn", "-o", "p.png", "--confidence", "inf"]),
    ("--epsilon", ["demo", "--epsilon", "1e999"]),
])
def test_numbers_are_digits_only(capsys, option, args):
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"argument {option}: " in err, err


def test_a_scheduler_address_is_checked_first(capsys, csv_input, tmp_path):
    for address in ("inproc://x", "tcp://host", "ucx://h:1", "h:99999"):
        refused(capsys, "build", "--input", csv_input, "--columns", "x", "--domain=0:9",
                "--epsilon", 1, "--output", tmp_path / "o.syn", "--engine", "dask",
                "--scheduler", address, fragments=("--scheduler", "tcp://HOST:PORT"))
    refused(capsys, "build", "--input", csv_input, "--columns", "x", "--domain=0:9",
            "--epsilon", 1, "--output", tmp_path / "o.syn", "--engine", "dask",
            "--cluster-timeout", 0.5, fragments=("--cluster-timeout", "1 and 86400"))
    refused(capsys, "build", "--input", csv_input, "--columns", "x", "--domain=0:9",
            "--epsilon", 1, "--output", tmp_path / "o.syn", "--cluster-timeout", 5,
            fragments=("--cluster-timeout needs --engine dask",))


# ---------------------------------------------------------------- 8. dead clusters

class _Silent:
    """A loopback server that accepts every connection and never answers."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self):
        self.sock.close()
        for conn in self.conns:
            conn.close()


class _Http:
    """A loopback HTTP server: it answers, but no dask message."""

    def __init__(self):
        self.server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("server", [_Silent, _Http])
def test_a_server_that_is_no_scheduler_is_refused_in_time(tmp_path, csv_input, server):
    pytest.importorskip("distributed")
    srv = server()
    try:
        start = time.monotonic()
        proc = run("build", "--input", csv_input, "--columns", "x", "--domain=0:9",
                   "--epsilon", 1, "--output", tmp_path / "o.syn", "--engine", "dask",
                   "--scheduler", f"tcp://127.0.0.1:{srv.port}", "--cluster-timeout", 2)
        elapsed = time.monotonic() - start
    finally:
        srv.close()
    line = one_line_error(proc, "cannot connect to the dask scheduler", f"127.0.0.1:{srv.port}",
                          "--cluster-timeout 2 s")
    assert "EiB" not in line and "Unable to allocate" not in line
    assert elapsed < 60, elapsed           # 2 s, plus starting Python and dask on a busy machine
    assert not (tmp_path / "o.syn").exists()


@pytest.fixture
def scheduler_process(tmp_path):
    """A dask scheduler and one worker in their own processes (loopback only)."""
    pytest.importorskip("distributed")
    info = tmp_path / "scheduler.json"
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = subprocess.Popen(dask + ["--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                         "--scheduler-file", str(info)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    worker = None
    try:
        deadline = time.monotonic() + 60
        while not info.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                   "--scheduler-file", str(info), "--nthreads", "1",
                                   "--no-dashboard", "--host", "127.0.0.1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        yield scheduler, info
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()


@pytest.mark.integration
@pytest.mark.slow
def test_a_scheduler_that_stops_answering_mid_computation_is_one_error(scheduler_process):
    import dask
    from dask import delayed
    from distributed import Client

    from pydp_synopsis.errors import InputError
    from pydp_synopsis.sources.dask import _compute

    scheduler, info = scheduler_process
    with dask.config.set({"distributed.comm.timeouts.connect": "2s",
                          "distributed.comm.timeouts.tcp": "11s"}):
        client = Client(scheduler_file=str(info), timeout="30s", set_as_default=True)
        try:
            client.wait_for_workers(1, timeout=60)
            # alive and slow: a computation longer than the timeout is not cut short
            assert _compute(delayed(time.sleep)(3), delayed(int)(7))[1] == 7
            threading.Timer(1.0, scheduler.send_signal, (signal.SIGSTOP,)).start()
            start = time.monotonic()
            with pytest.raises(InputError, match="lost the dask scheduler"):
                _compute(delayed(time.sleep)(30))
            assert time.monotonic() - start < 20
        finally:
            scheduler.send_signal(signal.SIGCONT)
            client.close(timeout=10)
