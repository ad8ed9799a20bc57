"""The README: short, its two set-up commands first, its Python examples run as written."""
import re

from docblocks import README, blocks, run_python_blocks

INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install . && pydp-synopsis demo"
TEST = 'python3 -m venv .venv && . .venv/bin/activate && pip install ".[test]" && pytest'


def test_the_first_code_block_is_the_two_setup_commands():
    first = re.search(r"^```[a-z]*\n(.*?)^```", README.read_text(encoding="utf-8"),
                      flags=re.S | re.M).group(1)
    assert first.splitlines() == [INSTALL, TEST]


def test_ci_finds_the_test_command_first():
    # .ci/run runs the first line containing pip install ".[test]" verbatim
    line = next(l for l in README.read_text(encoding="utf-8").splitlines()
                if 'pip install ".[test]"' in l)
    assert line == TEST


def test_readme_is_short_and_points_to_the_docs():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for page in ("docs/guide/privacy.md", "docs/guide/cli.md", "docs/development.md",
                 "docs/benchmarks/index.md", "CHANGELOG.md", "LICENSE"):
        assert f"]({page})" in text, page


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        assert (README.parent / target).exists(), target


def test_readme_examples_run(tmp_path):
    assert len(blocks(README, "python")) == 1
    assert run_python_blocks(README, tmp_path) == 1
