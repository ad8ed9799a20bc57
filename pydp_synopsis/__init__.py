"""pydp_synopsis: pure epsilon-differentially-private synopses with exact noise.

See README.md for the guarantees and examples.  Importing fails if the C
core is missing (no pure-Python fallback).
"""
from .budget import Budget
from .counters import BinaryTreeCounter, KaryTreeCounter
from .sparse_counter import SparseStreamCounter
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
from .rectangles import RectangleSynopsis
from .noise import discrete_laplace, discrete_laplace_variance
from .params import exact_epsilon, exact_scale
from .rng import Rng
from .partition import OnlinePartition, Partition, private_partition
from .persist import load, save

__version__ = "0.1.0"

__all__ = [
    "Budget",
    "BinaryTreeCounter",
    "KaryTreeCounter",
    "SparseStreamCounter",
    "IntervalSynopsis",
    "RectangleSynopsis",
    "Rng",
    "discrete_laplace",
    "discrete_laplace_variance",
    "exact_epsilon",
    "exact_scale",
    "private_partition",
    "OnlinePartition",
    "Partition",
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
]
