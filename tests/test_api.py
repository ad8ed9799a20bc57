"""The public names are a contract (../shared/DESIGN.md, docs/architecture.md): pin them."""
import pydp_synopsis as ps

EXPECTED = {
    "Rng", "discrete_laplace", "discrete_laplace_variance", "exact_epsilon", "exact_scale",
    "Budget", "BinaryTreeCounter", "KaryTreeCounter", "SparseStreamCounter", "IntervalSynopsis", "RectangleSynopsis",
    "save", "load", "private_partition", "private_quantiles", "OnlinePartition", "Partition", "TreePartition",
    "CellPartition",
    "SynopsisError", "ParameterError", "DomainError", "HorizonError", "FormatError",
    "BudgetError", "EntropyError", "NativeError",
    "discrete_gaussian", "SqrtFactorizationCounter", "l2_laplace_scale", "l2_laplace_epsilon",
    "Column", "get_threads", "set_threads", "ErrorBars",
    "LevelHistogram", "category_synopsis",
}


def test_public_names_are_pinned():
    assert set(ps.__all__) == EXPECTED
    for name in ps.__all__:
        assert getattr(ps, name) is not None


def test_every_module_declares_all():
    import importlib
    import pkgutil

    for mod in pkgutil.walk_packages(ps.__path__, prefix="pydp_synopsis."):
        if mod.name.startswith("pydp_synopsis._native"):
            continue
        module = importlib.import_module(mod.name)
        assert isinstance(getattr(module, "__all__", None), list), mod.name
