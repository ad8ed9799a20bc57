"""Hostile command lines and inputs: one clear line and exit 2, never a traceback,
never a destroyed input, never a release printed before its state is saved."""
import os
import resource
import signal
import sqlite3
import stat
import subprocess
import time

import numpy as np
import pytest

import pydp_synopsis as ps
from clirun import PACKAGE_PARENT, command, one_line_error, run

pytestmark = pytest.mark.integration     # the command line in subprocesses


def popen(args, **kw):
    return subprocess.Popen(command() + [str(a) for a in args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT),
                            cwd=os.path.dirname(PACKAGE_PARENT), **kw)


def write_csv(path, text):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ------------------------------------------------------- outputs never destroy inputs

def test_build_refuses_to_overwrite_its_input(tmp_path):
    src = write_csv(tmp_path / "x.csv", "a\n1\n2\n")
    before = src.read_bytes()
    proc = run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
               "--output", src)
    one_line_error(proc, "also an input")
    assert src.read_bytes() == before


def test_query_refuses_to_overwrite_the_synopsis_or_the_queries(tmp_path):
    syn = tmp_path / "s.pds"
    ps.IntervalSynopsis.build([1, 2], domain=(0, 9), epsilon=1, rng=ps.Rng(seed=1)).save(syn)
    queries = write_csv(tmp_path / "q.csv", "lo,hi\n0,5\n")
    for target in (syn, queries):
        before = target.read_bytes()
        one_line_error(run("query", syn, "--queries", queries, "--output", target), "also an input")
        assert target.read_bytes() == before


# -------------------------------------------------------------- one line, exit 2

def test_csv_header_field_over_the_csv_limit(tmp_path):
    src = write_csv(tmp_path / "big.csv", "a" * (200 * 1024) + "\n1\n")
    one_line_error(run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
                       "--output", tmp_path / "o.pds"), "header")


def test_corrupt_npz(tmp_path):
    src = tmp_path / "bad.npz"
    src.write_bytes(b"PK\x03\x04 this is not a zip archive")
    one_line_error(run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
                       "--output", tmp_path / "o.pds"))


@pytest.mark.parametrize("token, message", [("99999999999999999999", "int64"), ("--5", "not an integer"),
                                            ("1.5", "not an integer"), ("0x1", "not an integer")])
def test_count_stream_bad_tokens_name_the_item_not_its_text(token, message):
    proc = run("count-stream", "--horizon", 100, "--epsilon", 1, stdin=f"1\n0\n{token}\n1\n")
    line = one_line_error(proc, message, "item 3")
    assert token not in line


def test_positions_need_the_sparse_counter():
    one_line_error(run("count-stream", "--horizon", 100, "--epsilon", 1, "--positions", stdin="3\n"),
                   "--positions needs --counter sparse")


def test_broken_pipe_exits_quietly():
    proc = subprocess.run(" ".join(map(str, command())) + " count-stream --horizon 2000000 --epsilon 1"
                          " | head -n 2", shell=True, input="1\n" * 1_000_000, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), timeout=120)
    assert len(proc.stdout.splitlines()) == 2
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr


# ------------------------------------------------------------------ strict CSV

@pytest.mark.parametrize("text, fragment", [
    ("a,b\n1,2\n3\n", "a row has a different"),        # ragged row (never its number)
    ("a,b\n1,2\n#3,4\n", "column 'a': a value is not a number"),   # '#' is data
    ("a,a\n1,2\n", "more than once"),                  # duplicate header name
])
def test_malformed_csv_is_refused_in_one_line(tmp_path, text, fragment):
    src = write_csv(tmp_path / "m.csv", text)
    one_line_error(run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
                       "--output", tmp_path / "o.pds"), fragment)
    assert not (tmp_path / "o.pds").exists()


@pytest.mark.parametrize("text", [
    b"\xef\xbb\xbfa,b\r\n1,2\r\n3,4\r\n",              # UTF-8 BOM, CRLF
    b"a,b\n1,2\n\n3,4\n\n",                            # blank lines
])
def test_tolerated_csv_variants_read_every_row(tmp_path, text):
    src = write_csv(tmp_path / "t.csv", text)
    proc = run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 10**6,
               "--seed", 1, "--output", tmp_path / "o.pds")
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert round(ps.load(tmp_path / "o.pds").count(0, 9)) == 2


def test_header_only_csv_is_an_empty_table(tmp_path):
    src = write_csv(tmp_path / "h.csv", "a,b\n")
    proc = run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
               "--seed", 1, "--output", tmp_path / "o.pds")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_twenty_digit_integers_for_uint64_and_int64_domains(tmp_path):
    src = write_csv(tmp_path / "u.csv", "a\n18446744073709551615\n0\n9223372036854775808\n")
    proc = run("build", "--input", src, "--columns", "a", "--domain", "uint64", "--epsilon", 10**6,
               "--seed", 1, "--output", tmp_path / "o.pds")
    assert proc.returncode == 0, proc.stderr
    assert round(ps.load(tmp_path / "o.pds").count(2**63, 2**64 - 1)) == 2
    src = write_csv(tmp_path / "i.csv", "a\n-9223372036854775808\n9223372036854775807\n")
    proc = run("build", "--input", src, "--columns", "a", "--domain", "int64", "--epsilon", 10**6,
               "--seed", 1, "--output", tmp_path / "o2.pds")
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------- read-only SQL

@pytest.mark.parametrize("sql, made", [("VACUUM INTO '{d}/v.db'", "v.db"),
                                       ("ATTACH '{d}/w.db' AS w", "w.db")])
def test_sql_cannot_write_files(tmp_path, sql, made):
    db = tmp_path / "t.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x INTEGER)")
    con.commit()
    con.close()
    proc = run("build", "--sql", sql.format(d=tmp_path), "--database", f"sqlite:///{db}",
               "--columns", "x", "--domain=0:9", "--epsilon", 1, "--output", tmp_path / "o.pds")
    one_line_error(proc)
    assert not (tmp_path / made).exists()


# --------------------------------------------------------------------- umask

def test_synopses_honour_the_umask_and_checkpoints_stay_private(tmp_path):
    src = write_csv(tmp_path / "x.csv", "a\n1\n")
    old = os.umask(0o077)
    try:
        proc = run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
                   "--output", tmp_path / "s.pds")
        ck = run("count-stream", "--horizon", 10, "--epsilon", 1, "--checkpoint", tmp_path / "c.pds",
                 stdin="1\n")
    finally:
        os.umask(old)
    assert proc.returncode == 0 and ck.returncode == 0
    assert stat.S_IMODE(os.stat(tmp_path / "s.pds").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "c.pds").st_mode) == 0o600
    old = os.umask(0o022)
    try:
        run("build", "--input", src, "--columns", "a", "--domain=0:9", "--epsilon", 1,
            "--output", tmp_path / "s2.pds")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "s2.pds").st_mode) == 0o644


# ------------------------------------------------------- streams: never release twice

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_termination_signals_save_everything_that_was_printed(tmp_path, sig):
    ck = tmp_path / "live.pds"
    common = ["--horizon", 1000, "--epsilon", 1, "--seed", 5]
    full = run("count-stream", *common, stdin="1\n" * 300).stdout.split()
    proc = popen(["count-stream", *common, "--checkpoint", ck])
    proc.stdin.write("1\n" * 50)
    proc.stdin.flush()
    first = [proc.stdout.readline().strip() for _ in range(50)]
    time.sleep(0.2)
    proc.send_signal(sig)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and rest == "", err
    assert "saved after 50 positions" in err
    resumed = run("count-stream", "--checkpoint", ck, stdin="1\n" * 250)
    assert resumed.returncode == 0, resumed.stderr
    assert "saved after 300 positions (resumed after 50)" in resumed.stderr
    assert first + resumed.stdout.split() == full


def test_a_failed_save_prints_nothing_and_names_the_file(tmp_path):
    ck = tmp_path / "c.pds"

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))

    proc = subprocess.run(command() + ["count-stream", "--horizon", "1000", "--epsilon", "1",
                                       "--checkpoint", str(ck)],
                          input="1\n" * 100, capture_output=True, text=True, preexec_fn=small_files,
                          env=dict(os.environ, PYTHONPATH=PACKAGE_PARENT), timeout=60)
    one_line_error(proc, "could not save the checkpoint", str(ck))
    assert proc.stdout == ""
    assert not ck.exists() and os.listdir(tmp_path) == []


@pytest.mark.parametrize("flag, value", [("--counter", "binary"), ("--k", 5), ("--horizon", 999),
                                         ("--epsilon", 2)])
def test_resume_refuses_options_that_differ_from_the_checkpoint(tmp_path, flag, value):
    ck = tmp_path / "c.pds"
    assert run("count-stream", "--horizon", 1000, "--epsilon", 1, "--checkpoint", ck,
               stdin="1\n").returncode == 0
    before = ck.read_bytes()
    one_line_error(run("count-stream", "--checkpoint", ck, flag, value, stdin="1\n"), flag,
                   "differs from the checkpoint")
    assert ck.read_bytes() == before


def test_after_sigkill_the_last_batch_is_printed_again_unchanged(tmp_path):
    """Killed between the save and the print: the resumed run prints that batch first,
    the same values (no new noise), then continues; no position is skipped."""
    ck = tmp_path / "c.pds"
    common = ["--horizon", 1000, "--epsilon", 1, "--seed", 9]
    full = run("count-stream", *common, stdin="1\n" * 40).stdout.split()
    counter = ps.KaryTreeCounter(horizon=1000, epsilon=1, rng=ps.Rng(seed=9))
    batch = counter.update_many(np.ones(10, dtype=np.int64))
    # the state a killed run leaves: saved with its batch, the batch never printed
    ps.save(counter, ck, annex={"pending": "".join(f"{v}\n" for v in batch.tolist())})
    # a file written by the API has no journal: the command line adopts it only when told
    resumed = run("count-stream", "--checkpoint", ck, "--adopt-checkpoint", stdin="1\n" * 30)
    assert resumed.returncode == 0, resumed.stderr
    assert "printing again" in resumed.stderr
    assert resumed.stdout.split() == full


def test_an_error_mid_stream_keeps_the_checkpoint_exact(tmp_path):
    """An update refused mid-stream (here: the horizon) leaves the saved state as the last
    printed batch's: the resumed run neither reprints nor skips anything."""
    ck = tmp_path / "c.pds"
    proc = run("count-stream", "--horizon", 5, "--epsilon", 1, "--checkpoint", ck, stdin="1\n" * 5)
    assert proc.returncode == 0 and len(proc.stdout.split()) == 5
    again = run("count-stream", "--checkpoint", ck, stdin="1\n")
    one_line_error(again, "horizon of 5 positions", "resumed after 5")
    assert again.stdout == ""
    counter, annex = ps.load(ck, with_annex=True)
    assert counter.time == 5 and annex["pending"] == ""
