"""The code blocks of README.md and the pages under docs/, and how the tests run them.

* ``python`` blocks of one page run in order, in one namespace, in an empty
  directory (the examples save files).
* ``sh`` blocks run by bash (``set -e -o pipefail``) in an empty directory,
  with ``pydp-synopsis`` being this checkout's command; each must name only
  files it creates itself (plain fenced blocks are templates for the user's
  own files and are not run).
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pydp_synopsis as ps

__all__ = ["ROOT", "README", "DOCS", "doc_pages", "blocks", "run_python_blocks",
           "inputs_are_made_in_the_block", "run_sh_block"]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(ps.__file__)))


def doc_pages():
    """Every Markdown page of the docs site, as paths relative to docs/."""
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))


def blocks(path, lang):
    """The fenced blocks of ``path`` opened with ```` ```lang ````, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```", Path(path).read_text(encoding="utf-8"),
                      flags=re.S | re.M)


def run_python_blocks(path, workdir):
    """Run the page's python blocks in one namespace inside ``workdir``; return how many."""
    namespace = {"__name__": "__docs__"}
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        codes = blocks(path, "python")
        for i, code in enumerate(codes):
            try:
                exec(compile(code, f"{Path(path).name} python block {i}", "exec"), namespace)
            except Exception as exc:  # the message is the point
                raise AssertionError(f"{path} python block {i} failed: {exc!r}\n{code}") from exc
        return len(codes)
    finally:
        os.chdir(cwd)


def inputs_are_made_in_the_block(block):
    """Every --input/--queries/--releases file and queried synopsis is written earlier."""
    made = set()
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        for flag, value in zip(words, words[1:]):
            if flag in ("--input", "--queries", "--releases", "--checkpoint"):
                assert value in made or flag == "--checkpoint", f"{value} is not made by the block"
        for flag, value in zip(words, words[1:]):
            if flag in ("--output", "--write-data", "-o", "--checkpoint", ">"):
                made.add(value)
        if ">" in line:
            made.add(line.rsplit(">", 1)[1].split()[0])
        if len(words) > 2 and words[:2] in (["pydp-synopsis", "query"], ["pydp-synopsis", "info"],
                                            ["pydp-synopsis", "plot"]):
            assert words[2] in made, f"{words[2]} is not made by the block"


def run_sh_block(block, workdir):
    """Run one sh block with bash in ``workdir``; check it ran cleanly and wrote its outputs."""
    inputs_are_made_in_the_block(block)
    script = ("set -e -o pipefail\n"
              f"pydp-synopsis() {{ {shlex.quote(sys.executable)} -m pydp_synopsis.cli \"$@\"; }}\n"
              + block)
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run(["bash", "-c", script], cwd=workdir, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    for name in re.findall(r"(?:--output|-o|--write-data)\s+(\S+)", block):
        assert (Path(workdir) / name).stat().st_size > 0, name
