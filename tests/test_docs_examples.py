"""Every code example of the docs site (docs/*.md) runs as written.

The python blocks of a page run in order in one namespace; the sh blocks run
the command line (see tests/docblocks.py).  New pages are picked up by
pattern, so a page's examples are tested as soon as it exists.
"""
import pytest

from docblocks import DOCS, README, blocks, doc_pages, run_python_blocks, run_sh_block

PY_PAGES = [p for p in doc_pages() if blocks(DOCS / p, "python")]
SH_BLOCKS = [(p, i) for p in doc_pages() for i, _ in enumerate(blocks(DOCS / p, "sh"))]


def test_the_guide_has_examples():
    assert len(PY_PAGES) >= 10
    assert sum(len(blocks(DOCS / p, "python")) for p in PY_PAGES) >= 14


@pytest.mark.parametrize("page", PY_PAGES)
def test_docs_python_examples_run(tmp_path, page):
    assert run_python_blocks(DOCS / page, tmp_path) > 0


def test_every_subcommand_has_a_runnable_example():
    commands = " ".join(b for p in [README, *(DOCS / q for q in doc_pages())] for b in blocks(p, "sh"))
    for sub in ("demo", "build", "query", "info", "count-stream", "plot"):
        assert f"pydp-synopsis {sub}" in commands


@pytest.mark.integration
@pytest.mark.parametrize("page, index", SH_BLOCKS)
def test_docs_cli_block_runs(tmp_path, page, index):
    pytest.importorskip("matplotlib")
    run_sh_block(blocks(DOCS / page, "sh")[index], tmp_path)


def test_a_failing_block_names_its_page(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```python\nassert x == 2\n```\n")
    with pytest.raises(AssertionError, match="page.md python block 1"):
        run_python_blocks(page, tmp_path)
