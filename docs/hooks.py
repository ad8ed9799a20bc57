"""MkDocs hook: a "Security" nav section listing every ``docs/security-*.md`` page.

The security pages are written separately; listing them by pattern keeps the
strict build green whichever of them exist.
"""
from pathlib import Path

__all__ = ["on_config"]

_TITLES = {"cli": "Command line", "databases": "Databases", "checkpoints": "Checkpoints",
           "files": "Files", "timing": "Timing", "messages": "Messages"}


def on_config(config):
    pages = sorted(Path(config["docs_dir"]).glob("security-*.md"))
    if pages and config["nav"] is not None:
        section = [{_TITLES.get(p.stem[len("security-"):], p.stem): p.name} for p in pages]
        nav = config["nav"]
        at = next((i for i, item in enumerate(nav) if "API reference" in item), len(nav))
        nav.insert(at, {"Security": section})
    return config
