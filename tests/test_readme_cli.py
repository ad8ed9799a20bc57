"""The README's command-line examples run as written, on files the package ships.

Every fenced ``sh`` block of README.md is run by bash in an empty directory
(tests/docblocks.py says how); plain fenced blocks are templates for the
user's own files and are not run.
"""
import pytest

from docblocks import README, blocks, inputs_are_made_in_the_block, run_sh_block


def test_readme_has_a_runnable_cli_example():
    (block,) = blocks(README, "sh")
    assert len(block.strip().splitlines()) <= 5
    for sub in ("demo", "build", "query", "info", "count-stream"):
        assert f"pydp-synopsis {sub}" in block


@pytest.mark.integration
@pytest.mark.parametrize("index", range(len(blocks(README, "sh"))))
def test_readme_cli_block_runs(tmp_path, index):
    run_sh_block(blocks(README, "sh")[index], tmp_path)


def test_the_check_refuses_files_the_block_does_not_make():
    with pytest.raises(AssertionError, match="flights.csv"):
        inputs_are_made_in_the_block("pydp-synopsis build --input flights.csv --output m.pds\n")
    with pytest.raises(AssertionError, match="other.pds"):
        inputs_are_made_in_the_block("pydp-synopsis info other.pds\n")
    inputs_are_made_in_the_block("pydp-synopsis demo --write-data z.csv\n"
                                 "pydp-synopsis build --input z.csv --output z.pds\n"
                                 "pydp-synopsis info z.pds\n")
