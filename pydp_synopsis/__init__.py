"""pydp_synopsis: pure epsilon-differentially-private synopses with exact noise.

See the documentation (docs/, starting at docs/index.md) for the guarantees
and examples.  Importing fails if the C
core is missing (no pure-Python fallback).
"""
from .accounting import l2_laplace_epsilon, l2_laplace_scale
from .budget import Budget
from .counters import BinaryTreeCounter, KaryTreeCounter
from .sparse_counter import SparseStreamCounter
from .errorbars import ErrorBars
from .errors import (
    BudgetError,
    DomainError,
    EntropyError,
    FormatError,
    HorizonError,
    NativeError,
    ParameterError,
    SynopsisError,
)
from .intervals import IntervalSynopsis
from .level_histogram import LevelHistogram, category_synopsis
from .rectangles import RectangleSynopsis
from .noise import discrete_laplace, discrete_laplace_variance
from .gaussian import discrete_gaussian
from .params import exact_epsilon, exact_scale
from .flip_quantiles import private_quantiles
from .rng import Rng
from .partitions import (CellPartition, OnlinePartition, Partition, TreePartition,
                         private_partition)
from .persist import load, save
from .sqrt_counter import SqrtFactorizationCounter
from .units import Column
from ._threads import get_threads, set_threads

__version__ = "0.2.0"

__all__ = [
    "Budget",
    "BinaryTreeCounter",
    "KaryTreeCounter",
    "SparseStreamCounter",
    "SqrtFactorizationCounter",
    "IntervalSynopsis",
    "RectangleSynopsis",
    "LevelHistogram",
    "category_synopsis",
    "Rng",
    "Column",
    "ErrorBars",
    "discrete_laplace",
    "discrete_laplace_variance",
    "discrete_gaussian",
    "l2_laplace_scale",
    "l2_laplace_epsilon",
    "exact_epsilon",
    "exact_scale",
    "private_partition",
    "private_quantiles",
    "OnlinePartition",
    "Partition",
    "TreePartition",
    "CellPartition",
    "save",
    "load",
    "SynopsisError",
    "ParameterError",
    "DomainError",
    "HorizonError",
    "FormatError",
    "BudgetError",
    "EntropyError",
    "NativeError",
    "get_threads",
    "set_threads",
]
