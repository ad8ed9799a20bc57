"""MkDocs hooks.

* ``on_config``: a "Security" nav section listing every ``docs/security-*.md``
  page.  The security pages are written separately; listing them by pattern
  keeps the strict build green whichever of them exist.
* ``on_page_markdown``: a line ``<!-- measured: NAME -->`` becomes the result
  that ``benchmarks/record.py`` wrote to ``docs/measured/NAME.json``: the
  command, the date, the machine and the benchmark's output as printed.  A
  page naming a result that does not exist stops the build.
* ``on_page_content``: the docstrings' Sphinx roles (``:class:`~a.b.C```,
  ``:func:`f```) shown as code (``C``, ``f``), as numpydoc renders them.
"""
import json
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

__all__ = ["measured_block", "on_config", "on_page_content", "on_page_markdown"]

_MEASURED = re.compile(r"^<!-- measured: ([a-z0-9][a-z0-9_-]{0,63}) -->$", re.M)

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|exc|obj|math):<code>(~?)([^<]*)</code>")

_TITLES = {"overview": "Threat model", "cli": "Command line", "databases": "Databases",
           "checkpoints": "Checkpoints",
           "files": "Files", "timing": "Timing", "messages": "Messages"}


def on_config(config):
    pages = sorted(Path(config["docs_dir"]).glob("security-*.md"),
                   key=lambda p: (p.stem != "security-overview", p.stem))
    if pages and config["nav"] is not None:
        section = [{_TITLES.get(p.stem[len("security-"):], p.stem): p.name} for p in pages]
        nav = config["nav"]
        at = next((i for i, item in enumerate(nav) if "API reference" in item), len(nav))
        nav.insert(at, {"Security": section})
    return config


def measured_block(result):
    """The Markdown that shows one recorded result (a dict of ``record.py``)."""
    m = result["machine"]
    where = f"{m['cores']} cores, {m['memory_gib']} GiB, {m['processor']}, Python {m['python']}"
    commit = f", commit `{result['commit']}`" if result.get("commit") else ""
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", result["output"])), default=0))
    return (f"Measured {result['date']}{commit} ({where}; {result['seconds']:.0f} s) by\n\n"
            f"```sh\n{result['command']}\n```\n\n{fence}text\n{result['output']}\n{fence}\n")


def on_page_markdown(markdown, page, config, **kwargs):
    folder = Path(config["docs_dir"]) / "measured"

    def include(match):
        path = folder / f"{match.group(1)}.json"
        if not path.is_file():
            raise PluginError(f"{page.file.src_path}: no measured result {match.group(1)!r} "
                              f"(run: python benchmarks/record.py SCRIPT --as {match.group(1)})")
        return measured_block(json.loads(path.read_text()))

    return _MEASURED.sub(include, markdown)


def _role(match):
    tilde, target = match.groups()
    return "<code>" + (target.rsplit(".", 1)[-1] if tilde else target) + "</code>"


def on_page_content(html, **kwargs):
    return _ROLE.sub(_role, html)
