"""The package's boundaries that review keeps and CI checks: no module over
:data:`MAX_LINES` lines (the benchmarks' included), no private name (a leading
underscore) imported from another subpackage and at most
:data:`MAX_PRIVATE_IMPORTS_ACROSS_MODULES` from another module,
no two modules that import each other, and no estimator that calls the
engine's verbs (its rounds belong in ``daskglm/fitting/``), and no module outside
``daskglm/model/`` that asks a penalty or a family for its class (``isinstance``) rather
than for what it can do (its declared capabilities).

The modules over the limit today are listed by name in :data:`TOO_LONG`; the list may only
shrink: a listed module that is back under the limit, or gone, fails the test until its
line is removed, and a module not listed that grows past the limit fails it too.  The
same holds for the two-module import cycles of :data:`CYCLES` and the estimator modules
still running rounds of :data:`ROUNDS_IN_ESTIMATORS`, and the type checks of
:data:`TYPE_CHECKS`.
"""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "daskglm"

#: Most lines a module of the package may have.
MAX_LINES = 500

#: Modules over :data:`MAX_LINES` lines, waiting to be split (paths under ``daskglm/``).
#: Remove a line when its module is split; never add one.
TOO_LONG = frozenset()

#: Most imports of a private name (a leading underscore) from another module of the
#: package, within a subpackage too: a name other modules use is part of its module's
#: interface, public and documented.  Lower it when you can; never raise it.
MAX_PRIVATE_IMPORTS_ACROSS_MODULES = 7

#: Pairs of modules that import each other, waiting to be untangled.  Remove a pair when
#: it is; never add one.
CYCLES = frozenset()


#: Modules of ``estimators/`` that still call a verb of the engine (paths under
#: ``daskglm/``), waiting for their rounds to move to ``daskglm/fitting/``.  Remove a line
#: when they move; never add one.
ROUNDS_IN_ESTIMATORS = frozenset()

#: The modules of ``daskglm/model/`` whose classes are penalties, families and their parts:
#: no module outside ``daskglm/model/`` calls ``isinstance`` with one of them.
CAPABILITY_MODULES = ("penalties.py", "families.py", "distributions.py",
                      "distributions_extra.py", "multinomial.py")

#: ``(path under daskglm/, class)`` of the ``isinstance`` checks on a penalty or family
#: class still made outside ``daskglm/model/``, waiting for a capability to ask instead.
#: Remove a line when its check goes; never add one.
TYPE_CHECKS = frozenset()


def _modules(root=ROOT):
    """``{module name: path}`` of every module of the package under ``root``."""
    modules = {}
    for path in sorted((root / "daskglm").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(name, path):
    """``(imported module, names imported from it)`` of every import of the package in
    module ``name``, at any depth (imports inside functions count)."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] == "daskglm":
                found.append((target, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names
                         if alias.name.split(".")[0] == "daskglm")
    return found


def _subpackage(module):
    """The subpackage of ``daskglm`` a module belongs to (a top-level module is its own)."""
    return module.split(".")[1] if module.count(".") else module


def _is_private(name):
    return name.startswith("_") and not name.startswith("__")


def _private_imports_across_subpackages(modules):
    return sorted(
        f"{name} imports {target}.{imported}"
        for name, path in modules.items()
        for target, names in _imports(name, path)
        for imported in names
        if _is_private(imported) and _subpackage(target) != _subpackage(name)
    )


def _private_imports_across_modules(modules):
    """``"module imports target.name"`` for each private name a module of ``modules``
    imports from another module of the package, in the same subpackage or not."""
    return sorted(
        f"{name} imports {target}.{imported}"
        for name, path in modules.items()
        for target, names in _imports(name, path)
        for imported in names
        if _is_private(imported) and target != name
    )


def _two_module_cycles(modules):
    edges = {}
    for name, path in modules.items():
        for target, names in _imports(name, path):
            targets = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]
            edges.setdefault(name, set()).update(t for t in targets if t != name)
    return {frozenset({a, b}) for a, targets in edges.items() for b in targets
            if a in edges.get(b, ())}


def _line_counts(package=PACKAGE):
    """``{path under the package: lines}`` of every module over :data:`MAX_LINES` lines."""
    lengths = {path.relative_to(package).as_posix(): len(path.read_text(encoding="utf-8")
                                                         .splitlines())
               for path in package.rglob("*.py")}
    return {path: n for path, n in lengths.items() if n > MAX_LINES}


def _engine_verbs():
    """The names of the engine's verbs that run a round: the methods of
    :class:`~daskglm.engine.protocol.EngineVerbs` that take a ``kind``."""
    import inspect

    from daskglm.engine.protocol import EngineVerbs

    return frozenset(name for name, method in inspect.getmembers(EngineVerbs, inspect.isfunction)
                     if "kind" in inspect.signature(method).parameters)


def _verb_calls(package, verbs):
    """``{path under the package: [lines]}`` of the modules of ``estimators/`` that call one
    of ``verbs``: a method of that name called with a ``kind=`` (every verb takes one)."""
    found = {}
    for path in sorted((package / "estimators").rglob("*.py")):
        lines = [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and node.func.attr in verbs
                 and any(keyword.arg == "kind" for keyword in node.keywords)]
        if lines:
            found[path.relative_to(package).as_posix()] = lines
    return found


def _model_classes(package=PACKAGE):
    """Names of the classes defined in :data:`CAPABILITY_MODULES`."""
    names = set()
    for module in CAPABILITY_MODULES:
        path = package / "model" / module
        if path.exists():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names |= {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    return names


def _type_checks(package, classes):
    """``{(path under the package, class)}`` of the ``isinstance(x, C)`` calls outside
    ``model/`` whose ``C`` (or a member of its tuple, written there or a module constant
    ``KINDS = (C, D)``) names one of ``classes``, imported under its own name or an alias
    (``_C``, ``module.C``)."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("model/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {alias.asname or alias.name: alias.name for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) for alias in node.names}
        tuples = {target.id: node.value.elts for node in tree.body
                  if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
                  for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                continue
            kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
            kinds = [member for kind in kinds
                     for member in (tuples.get(kind.id, [kind]) if isinstance(kind, ast.Name)
                                    else [kind])]
            for kind in kinds:
                name = kind.id if isinstance(kind, ast.Name) else getattr(kind, "attr", None)
                name = aliases.get(name, name)
                if name in classes:
                    found.add((relative, name))
    return found


def test_no_module_outside_the_model_asks_a_penalty_or_family_for_its_class():
    classes = _model_classes()
    assert {"Penalty", "L2", "Family", "Gaussian", "Multinomial"} <= classes
    checks = _type_checks(PACKAGE, classes)
    new = sorted(checks - TYPE_CHECKS)
    assert new == [], ("ask the penalty or family what it can do (a capability it declares "
                       f"in daskglm/model/) instead of its class (path, class): {new}")
    gone = sorted(TYPE_CHECKS - checks)
    assert gone == [], f"no longer a type check: remove them from TYPE_CHECKS {gone}"


def test_no_module_is_over_the_line_limit_but_the_listed_ones():
    lengths = _line_counts()
    too_long = set(lengths)
    assert too_long - TOO_LONG == set(), (
        f"over {MAX_LINES} lines: split them by concept "
        f"{ {path: lengths[path] for path in sorted(too_long - TOO_LONG)} }")
    assert TOO_LONG - too_long == set(), (
        f"no longer over {MAX_LINES} lines (or gone): remove them from TOO_LONG "
        f"{sorted(TOO_LONG - too_long)}")


def test_no_benchmark_module_is_over_the_line_limit():
    lengths = _line_counts(ROOT / "benchmarks")
    assert lengths == {}, f"over {MAX_LINES} lines: split them by concept {lengths}"


def test_no_private_name_is_imported_from_another_subpackage():
    found = _private_imports_across_subpackages(_modules())
    assert found == [], ("make these names public (with a docstring) where they are part of "
                         "their module's interface:\n" + "\n".join(found))


def test_private_names_imported_across_modules_stay_few():
    found = _private_imports_across_modules(_modules())
    assert len(found) <= MAX_PRIVATE_IMPORTS_ACROSS_MODULES, (
        f"{len(found)} imports of a private name from another module, more than "
        f"MAX_PRIVATE_IMPORTS_ACROSS_MODULES = {MAX_PRIVATE_IMPORTS_ACROSS_MODULES}: make the "
        "names other modules use public (with a numpydoc docstring, in the module's "
        "__all__), or move a helper to the module that uses it; do not raise the limit:\n"
        + "\n".join(found))


def test_the_private_import_count_finds_imports_within_a_subpackage(tmp_path):
    package = tmp_path / "daskglm"
    (package / "compute").mkdir(parents=True)
    for init in (package / "__init__.py", package / "compute" / "__init__.py"):
        init.write_text("")
    (package / "compute" / "tree.py").write_text(
        "_LEAF = 0\n\n\ndef _run():\n    pass\n\n\ndef tree_sum():\n    return _LEAF\n")
    (package / "compute" / "rounds.py").write_text(
        "from .tree import _LEAF\n\n\ndef f():\n    from . import tree\n"
        "    from .tree import _run, tree_sum\n")
    modules = _modules(tmp_path)
    assert _private_imports_across_subpackages(modules) == []
    assert _private_imports_across_modules(modules) == [
        "daskglm.compute.rounds imports daskglm.compute.tree._LEAF",
        "daskglm.compute.rounds imports daskglm.compute.tree._run"]


def test_no_two_modules_import_each_other_but_the_listed_ones():
    cycles = _two_module_cycles(_modules())
    new = sorted(sorted(pair) for pair in cycles - CYCLES)
    assert new == [], f"modules importing each other: {new}"
    gone = sorted(sorted(pair) for pair in CYCLES - cycles)
    assert gone == [], f"no longer a cycle: remove them from CYCLES {gone}"


def test_estimators_run_no_rounds_but_the_listed_ones():
    verbs = _engine_verbs()
    assert {"reduce", "map", "reduce_each", "map_stateful"} <= verbs
    calls = _verb_calls(PACKAGE, verbs)
    new = {path: lines for path, lines in calls.items() if path not in ROUNDS_IN_ESTIMATORS}
    assert new == {}, ("estimators describe and call daskglm.fitting, which runs the "
                       f"rounds; these call the engine's verbs (path: lines): {new}")
    gone = sorted(ROUNDS_IN_ESTIMATORS - set(calls))
    assert gone == [], f"no longer calling the engine's verbs: remove them from " \
                       f"ROUNDS_IN_ESTIMATORS {gone}"


def test_the_checks_find_what_they_look_for(tmp_path):
    """Each check fails on a package that breaks its rule."""
    package = tmp_path / "daskglm"
    for sub in ("model", "compute", "estimators"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "model" / "numerics.py").write_text("_EPS = 1e-16\n")
    (package / "compute" / "kernels.py").write_text(
        "from ..model.numerics import _EPS\n" + "x = 1\n" * MAX_LINES)
    (package / "compute" / "a.py").write_text("def f():\n    from .b import g\n")
    (package / "compute" / "b.py").write_text("from .a import f\n\n\ndef g():\n    pass\n")
    modules = _modules(tmp_path)
    assert _private_imports_across_subpackages(modules) == [
        "daskglm.compute.kernels imports daskglm.model.numerics._EPS"]
    assert _two_module_cycles(modules) == {frozenset({"daskglm.compute.a", "daskglm.compute.b"})}
    assert _line_counts(package) == {"compute/kernels.py": MAX_LINES + 1}
    (package / "estimators" / "summary.py").write_text(
        "def mean(engine, kernel, rows):\n"
        "    rows.map(len)\n"  # not a verb: no kind
        "    return engine.reduce(kernel, kind='gradient')\n")
    assert _verb_calls(package, _engine_verbs()) == {"estimators/summary.py": [3]}
    (package / "model" / "penalties.py").write_text("class Penalty:\n    pass\n\n\n"
                                                     "class L2(Penalty):\n    pass\n")
    (package / "compute" / "steps.py").write_text(
        "from ..model.penalties import L2 as _L2\nfrom ..model import penalties\n\n\n"
        "def f(p, q):\n    return isinstance(p, (int, _L2)) or isinstance(q, penalties.Penalty)\n")
    assert _type_checks(package, _model_classes(package)) == {
        ("compute/steps.py", "L2"), ("compute/steps.py", "Penalty")}


#: Test modules (paths under ``tests/``) that still bound elapsed wall-clock seconds in an
#: assert outside tests marked slow.  Remove a line when its module is fixed; never add one:
#: speed is shown by the benchmarks, and a test asserts what the time stood for.
TIMED_ASSERTS = frozenset()

#: Words that name a measured duration in a test's assert.
_TIMING_WORDS = ("perf_counter", "monotonic", "time.time", "elapsed", "seconds")


def _is_slow(function):
    return any("mark.slow" in ast.unparse(decorator) for decorator in function.decorator_list)


def _bounds_elapsed_seconds(test, node):
    """Whether assert ``node`` bounds a duration from above by a number (``seconds < 3``,
    ``time.monotonic() - start < 10``, ``20 > elapsed``)."""
    for compare in ast.walk(node.test):
        if not isinstance(compare, ast.Compare):
            continue
        operands = [compare.left, *compare.comparators]
        for op, lesser, greater in zip(compare.ops, operands, operands[1:]):
            if isinstance(op, (ast.Gt, ast.GtE)):
                lesser, greater = greater, lesser
            elif not isinstance(op, (ast.Lt, ast.LtE)):
                continue
            timed = any(word in ast.get_source_segment(test, lesser) for word in _TIMING_WORDS)
            if timed and isinstance(greater, ast.Constant) and isinstance(greater.value,
                                                                          (int, float)):
                return True
    return False


def _timed_asserts(tests=ROOT / "tests"):
    """``{path under tests/: [line, ...]}`` of the asserts that bound elapsed seconds,
    outside functions marked slow and modules whose ``pytestmark`` is slow."""
    found = {}
    for path in sorted(tests.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        if "pytest.mark.slow" in "".join(ast.unparse(node) for node in tree.body
                                         if isinstance(node, ast.Assign)
                                         and "pytestmark" in ast.unparse(node.targets[0])):
            continue
        slow_lines = set()
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_slow(function):
                slow_lines.update(range(function.lineno, function.end_lineno + 1))
        lines = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)
                 and node.lineno not in slow_lines and _bounds_elapsed_seconds(source, node)]
        if lines:
            found[path.relative_to(tests).as_posix()] = lines
    return found


def test_no_test_bounds_elapsed_seconds_but_the_listed_modules():
    found = _timed_asserts()
    assert set(found) <= TIMED_ASSERTS, {k: v for k, v in found.items()
                                         if k not in TIMED_ASSERTS}
    assert TIMED_ASSERTS <= set(found), f"fixed, remove from TIMED_ASSERTS: {TIMED_ASSERTS - set(found)}"


def test_the_timed_assert_check_finds_what_it_looks_for(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import pytest\nimport time\n\n\ndef test_a():\n    start = time.monotonic()\n"
        "    assert time.monotonic() - start < 10\n    assert 3.0 > record.seconds\n"
        "    assert seconds['ring'] < seconds['tree']\n    assert record.seconds >= 1.0\n\n\n"
        "@pytest.mark.slow\ndef test_b():\n    assert elapsed < 5\n")
    assert _timed_asserts(tmp_path) == {"test_x.py": [7, 8]}
