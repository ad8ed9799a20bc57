"""Run a benchmark and keep what it printed as the docs' measured result.

    python benchmarks/record.py bench_errorbars.py [ARGS ...] [--as NAME]

runs ``python benchmarks/bench_errorbars.py ARGS`` in this checkout, shows its
output as it runs, and writes ``docs/measured/NAME.json`` (NAME defaults to the
script's stem): the exact command, its output, the UTC date, the commit, and the
machine (cores, memory, processor).  A docs page shows a result with the line

    <!-- measured: NAME -->

which the docs build (``docs/hooks.py``) replaces by the command, the date and
the output; a page naming a result that does not exist fails the strict build.
So every figure a benchmark page quotes is one a benchmark printed, with the
command that printed it, and re-running this command is how a change that
moves a figure updates the page.  Nothing is written when the benchmark fails.
"""
import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["MEASURED", "machine", "main", "record"]

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "docs" / "measured"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def machine():
    """The facts about this machine that a reader needs to weigh a timing."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    memory = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory = round(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30)
    return {"cores": os.cpu_count(), "memory_gib": memory, "processor": cpu,
            "python": platform.python_version()}


def _commit():
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out or None


def record(script, args, name=None, *, out_dir=MEASURED):
    """Run ``benchmarks/<script> args``; on success write ``out_dir/<name>.json``.

    Returns the path written; raises ``SystemExit`` with the benchmark's
    status when it fails (nothing is written then).
    """
    path = ROOT / "benchmarks" / script
    if path.parent != ROOT / "benchmarks" or not path.is_file() or path.suffix != ".py":
        raise SystemExit(f"record.py: script must be a benchmarks/*.py file, got {script!r}")
    name = name or path.stem
    if not _NAME.fullmatch(name):
        raise SystemExit(f"record.py: --as must match {_NAME.pattern}, got {name!r}")
    command = " ".join(["python", f"benchmarks/{path.name}", *args])
    data = os.environ.get("PYDP_SYNOPSIS_DATA")
    if data:               # where the real data came from is part of the command
        command = f"PYDP_SYNOPSIS_DATA={data} {command}"
    started = datetime.datetime.now(datetime.timezone.utc)
    proc = subprocess.Popen([sys.executable, str(path), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line)
    status = proc.wait()
    if status != 0:
        raise SystemExit(status)
    seconds = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}.json"
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"command": command, "output": "".join(lines).rstrip("\n"),
                               "date": started.strftime("%Y-%m-%d %H:%M UTC"),
                               "seconds": round(seconds, 1), "commit": _commit(),
                               "machine": machine()}, indent=1) + "\n")
    os.replace(tmp, target)
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", help="a benchmarks/*.py script")
    parser.add_argument("--as", dest="name", help="result name (default: the script's stem)")
    known, rest = parser.parse_known_args(argv)
    print(f"wrote {record(known.script, rest, known.name).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
