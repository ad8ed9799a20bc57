"""MkDocs hooks.

* ``on_config``: a "Security" nav section listing every ``docs/security-*.md``
  page.  The security pages are written separately; listing them by pattern
  keeps the strict build green whichever of them exist.
* ``on_page_content``: the docstrings' Sphinx roles (``:class:`~a.b.C```,
  ``:func:`f```) shown as code (``C``, ``f``), as numpydoc renders them.
"""
import re
from pathlib import Path

__all__ = ["on_config", "on_page_content"]

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


def _role(match):
    tilde, target = match.groups()
    return "<code>" + (target.rsplit(".", 1)[-1] if tilde else target) + "</code>"


def on_page_content(html, **kwargs):
    return _ROLE.sub(_role, html)
