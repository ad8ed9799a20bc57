"""The package's import graph keeps the rules of docs/architecture.md.

Every module of ``pydp_synopsis`` is parsed with :mod:`ast` (nothing is
imported), and the package-internal import graph is built from its imports:
relative and absolute, at module level and inside functions.  The test fails on

(a) an import cycle between modules of the package (a hidden cycle is what an
    import inside a function used to hide);
(b) an import inside a function or method, unless it is of an optional
    dependency (duckdb, psycopg, pyarrow, dask, distributed, pandas,
    matplotlib) or of the standard library modules named below with a reason;
(c) an import of a private name (``_x``) from another module of the package,
    except the allowed ones named below with a reason.
"""
import ast
import pathlib

import pytest

PACKAGE = "pydp_synopsis"
ROOT = pathlib.Path(__file__).resolve().parent.parent / PACKAGE

#: optional dependencies may be imported where they are used (the package
#: works without them)
OPTIONAL = {"duckdb", "psycopg", "pyarrow", "dask", "distributed", "pandas", "matplotlib",
            "starlette", "uvicorn", "orjson"}

#: standard-library imports allowed inside a function, with the reason (none)
LOCAL_STDLIB = {}

#: private names (``_x``) that may be imported from another module of the
#: package, as (importing module, imported module, name): reason.  None today.
PRIVATE_ALLOWED = {}

#: private *modules* of the package and who may import them (None: any module),
#: with the reason: their names are private to the package, not to one module
PRIVATE_MODULES = {
    "_native": (("_core",), "cffi's compiled module: _core is its one loader (status -> "
                            "exception, LIMITS, buffer views)"),
    "_core": (None, "the one loader of the compiled C core; every wrapper calls C through it"),
    "_threads": (None, "the package's thread pool and parallel sort"),
    "_exact": (None, "the exact decimal decisions of the kernels' rare undecided cases"),
}

#: modules that run a mechanism (draw noise or decide a release): the sources
#: read data and may import none of them
MECHANISMS = ("partitions.entry", "partitions.dnrr", "partitions.online", "partitions.privtree",
              "partitions.merge",
              "partitions.runner", "noise", "gaussian", "trees", "counters", "sparse_counter",
              "intervals", "rectangles", "partition", "privtree", "shards")


def _module_name(path, root):
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root):
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def _resolve(module, is_package, node):
    """The absolute name a ``from`` import refers to (None if outside the package)."""
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    return base


class _Imports(ast.NodeVisitor):
    """Every import of one module, with whether it sits inside a function."""

    def __init__(self):
        self.depth = 0
        self.found = []      # (node, inside_function)

    def _function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node):
        self.found.append((node, self.depth > 0))

    visit_ImportFrom = visit_Import


def _graph(root=ROOT):
    modules = _modules(root)
    edges = {name: set() for name in modules}
    local_imports = []        # (module, line, what)
    private_imports = []      # (module, line, from, name)
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        visitor = _Imports()
        visitor.visit(ast.parse(path.read_text(), str(path)))
        for node, inside in visitor.found:
            if isinstance(node, ast.Import):
                targets = [(alias.name, None) for alias in node.names]
            else:
                base = _resolve(name, is_package, node)
                targets = []
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    # ``from . import persist`` imports a module; ``from .x import y`` a name of x
                    targets.append((sub if sub in modules else base, alias.name))
            for target, alias in targets:
                top = target.split(".")[0]
                internal = top == PACKAGE
                if inside:
                    if internal:
                        local_imports.append((name, node.lineno, target))
                    elif top not in OPTIONAL and top not in LOCAL_STDLIB:
                        local_imports.append((name, node.lineno, target))
                if not internal:
                    continue
                if target in modules and target != name:
                    edges[name].add(target)
                # importing a.b.c first runs the package a.b's __init__ (a subpackage's
                # __init__ imports its modules: a cycle through it is a real one), unless
                # the importer is inside that package (then it is already initialising)
                parts = target.split(".")
                for cut in range(2, len(parts)):
                    parent = ".".join(parts[:cut])
                    if parent in modules and not (name + ".").startswith(parent + "."):
                        edges[name].add(parent)
                names_module = alias is not None and target.endswith("." + alias) and target in modules
                if alias and alias.startswith("_") and not alias.startswith("__") and not names_module:
                    key = (name.split(".")[-1], target.split(".")[-1], alias)
                    if key not in PRIVATE_ALLOWED:
                        private_imports.append((name, node.lineno, target, alias))
                # a private module imported by name (``from . import _exact``) is fine only
                # for the modules listed in PRIVATE_MODULES
                last = target.split(".")[-1]
                if target in modules and last.startswith("_") and not last.startswith("__"):
                    importers = PRIVATE_MODULES.get(last, ((),))[0]
                    if importers is not None and name.split(".")[-1] not in importers:
                        private_imports.append((name, node.lineno, target, last))
    return edges, local_imports, private_imports


def _cycles(edges):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_graph_sees_the_package():
    edges, _, _ = _graph()
    assert "pydp_synopsis.intervals" in edges
    assert "pydp_synopsis.partitions" in edges
    # a known edge, found through a relative import
    assert "pydp_synopsis.persist" in edges["pydp_synopsis.intervals"]


def test_no_import_cycle():
    edges, _, _ = _graph()
    assert _cycles(edges) == []


def test_no_import_inside_a_function():
    _, local_imports, _ = _graph()
    assert [f"{m}:{line} imports {what}" for m, line, what in local_imports] == []


def test_no_private_name_across_modules():
    _, _, private_imports = _graph()
    assert [f"{m}:{line} imports {name} from {src}" for m, line, src, name in private_imports] == []


def test_sources_import_no_mechanism():
    """Sources read data and never run a mechanism (partitions.runner decides what runs)."""
    edges, _, _ = _graph()
    bad = sorted((m, t) for m, targets in edges.items() if m.startswith(f"{PACKAGE}.sources")
                 for t in targets
                 if any(t == f"{PACKAGE}.{x}" or t.startswith(f"{PACKAGE}.{x}.") for x in MECHANISMS))
    assert bad == []


@pytest.mark.parametrize("source, expected", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_finder(source, expected):
    assert _cycles(source) == expected


def test_checks_catch_what_they_name(tmp_path):
    """The three checks fail on a small package that breaks each rule."""
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("from . import a\n\ndef f():\n    from .c import _hidden\n    import json\n")
    (pkg / "c.py").write_text("_hidden = 1\n")
    edges, local_imports, private_imports = _graph(pkg)
    assert _cycles(edges) == [[f"{PACKAGE}.a", f"{PACKAGE}.b"]]
    assert [(m, what) for m, _, what in local_imports] == [
        (f"{PACKAGE}.b", f"{PACKAGE}.c"), (f"{PACKAGE}.b", "json")]
    assert [(m, src, name) for m, _, src, name in private_imports] == [
        (f"{PACKAGE}.b", f"{PACKAGE}.c", "_hidden")]


def test_no_test_file_imports_another():
    """Shared test helpers live in modules of their own (clirun, dnrr_law, privtree_law,
    stattests, ...), never in a test file: a test file is collected, not imported."""
    tests = pathlib.Path(__file__).resolve().parent
    offenders = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            offenders += [f"{path.relative_to(tests)} imports {n}" for n in names
                          if n.split(".")[-1].startswith("test_")]
    assert offenders == []
