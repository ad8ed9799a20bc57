"""The README's command-line examples run as written, on files the package ships.

Every fenced ``sh`` block of README.md is run by bash (``set -e -o pipefail``)
in an empty directory, with ``pydp-synopsis`` being this checkout's command.
Plain fenced blocks are templates for the user's own files and are not run;
the test checks that each ``sh`` block names only files it creates itself.
"""
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from test_cli import PACKAGE_PARENT

README = Path(__file__).resolve().parents[1] / "README.md"


def sh_blocks():
    return re.findall(r"```sh\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_has_runnable_cli_examples():
    blocks = sh_blocks()
    assert blocks
    commands = " ".join(blocks)
    for sub in ("demo", "build", "query", "info", "count-stream", "plot"):
        assert f"pydp-synopsis {sub}" in commands


def _inputs_are_made_in_the_block(block):
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


@pytest.mark.parametrize("index", range(len(sh_blocks())))
def test_readme_cli_block_runs(tmp_path, index):
    pytest.importorskip("matplotlib")
    block = sh_blocks()[index]
    _inputs_are_made_in_the_block(block)
    script = ("set -e -o pipefail\n"
              f"pydp-synopsis() {{ {shlex.quote(sys.executable)} -m pydp_synopsis.cli \"$@\"; }}\n"
              + block)
    env = dict(os.environ, PYTHONPATH=PACKAGE_PARENT)
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    for name in re.findall(r"(?:--output|-o|--write-data)\s+(\S+)", block):
        assert (tmp_path / name).stat().st_size > 0, name


def test_the_check_refuses_files_the_block_does_not_make():
    with pytest.raises(AssertionError, match="flights.csv"):
        _inputs_are_made_in_the_block("pydp-synopsis build --input flights.csv --output m.pds\n")
    with pytest.raises(AssertionError, match="other.pds"):
        _inputs_are_made_in_the_block("pydp-synopsis info other.pds\n")
    _inputs_are_made_in_the_block("pydp-synopsis demo --write-data z.csv\n"
                                  "pydp-synopsis build --input z.csv --output z.pds\n"
                                  "pydp-synopsis info z.pds\n")
