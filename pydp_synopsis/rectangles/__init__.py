"""The rectangle synopsis (DNRR section 3.3): every axis-parallel rectangle count, 1 to 8 axes.

Modules: :mod:`.synopsis` (the public class: checks, partitions, budget,
delegation), :mod:`.options` (named option profiles and how keywords
override them), :mod:`.axes` (the per-axis private partitions),
:mod:`.multitree` (DNRR's pruned multi-tree), :mod:`.grid` (the adaptive
two-level grid) and :mod:`.kernels` (their C calls).  docs/guide/rectangles.md
and docs/benchmarks/rectangles.md have the mechanism's evidence and benchmarks.
"""
from .synopsis import RectangleSynopsis

__all__ = ["RectangleSynopsis"]
