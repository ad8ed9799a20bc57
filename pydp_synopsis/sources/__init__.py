"""Streaming sources: tables read in chunks, with memory independent of their length."""
from .base import Prepared, Source, as_source

__all__ = ["Source", "Prepared", "as_source"]
