"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb + pg_ctl on a Unix socket
in a temporary directory, no TCP port, trust authentication, removed at stop().

initdb refuses to run as root; as root the cluster runs as the ``postgres`` system user
(created by Debian's postgresql package)."""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile

__all__ = ["postgres_bin", "Cluster"]


def postgres_bin():
    """The directory of initdb and pg_ctl, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(candidates[-1]) if candidates else None


class Cluster:
    """``with Cluster() as pg: pg.url`` -- a running server; ``pg.url`` connects as superuser."""

    def __init__(self, port=54329):
        self.bin = postgres_bin()
        if self.bin is None:
            raise RuntimeError("PostgreSQL binaries not found")
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="pydp-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("postgres")
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.url = f"postgresql://postgres@/postgres?host={self.dir}&port={port}"

    def _run(self, *args):
        cmd = [os.path.join(self.bin, args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    def start(self):
        self._run("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "--no-sync",
                  "-E", "UTF8", "--locale=C")
        opts = f"-c listen_addresses='' -c unix_socket_directories={self.dir} -p {self.port} " \
               "-c fsync=off -c full_page_writes=off -c shared_buffers=32MB"
        self._run("pg_ctl", "-D", self.data, "-o", opts, "-w", "-t", "60",
                  "-l", os.path.join(self.dir, "log"), "start")
        return self

    def stop(self):
        try:
            self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def role_url(self, role):
        """The URL connecting as ``role`` (trust authentication: no password)."""
        return self.url.replace("postgres@", f"{role}@", 1)

    def reader(self, *tables, role="reader"):
        """A login role that may only SELECT ``tables``; returns its URL (the sources refuse
        a superuser or a role that may write)."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f'CREATE ROLE "{role}" LOGIN')
            for table in tables:
                con.execute(f"GRANT SELECT ON {table} TO \"{role}\"")
        return self.role_url(role)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
