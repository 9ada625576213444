"""Run scikit-learn's own test functions against daskglm's estimators.

:func:`translate` loads a scikit-learn test module and returns copies of chosen test functions
whose global names are translated: each ``sklearn.linear_model`` estimator that daskglm also
defines (``LogisticRegression``, ``Ridge``, ...) becomes daskglm's class of the same name,
both as a bare name and as an attribute of the module's ``linear_model``.  The module's
own helpers (data factories, ``SGDClassifier(**kwargs)`` wrappers) are copied with the same
translated globals, and ``pytest.mark.parametrize`` values that are scikit-learn estimators
or those helpers are translated too.  Nothing else changes: the parameters, data and
assertions are scikit-learn's.
"""

from __future__ import annotations

import functools
import importlib
import types

import dask.array as da
import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.linear_model

import daskglm

#: scikit-learn estimator name -> daskglm's class of the same name.
TRANSLATED = {name: getattr(daskglm, name) for name in sklearn.linear_model.__all__
              if isinstance(getattr(daskglm, name, None), type)}


def on_dask(cls):
    """``cls`` fitting Dask arrays of three row chunks made from in-memory dense input."""

    def fit(self, X, y, *args, **kwargs):
        X, y = _chunked(X), _chunked(y)
        if args:
            args = (_chunked(args[0]), *args[1:])
        if kwargs.get("sample_weight") is not None:
            kwargs["sample_weight"] = _chunked(kwargs["sample_weight"])
        return cls.fit(self, X, y, *args, **kwargs)

    return type(cls.__name__, (cls,), {"fit": fit, "__module__": cls.__module__,
                                       "__doc__": cls.__doc__})


def _chunked(values):
    if sp.issparse(values) or values is None or isinstance(values, da.Array):
        return values
    values = np.asarray(values)
    if values.ndim == 0 or values.shape[0] < 3:
        return values
    return da.from_array(values, chunks=(-(-values.shape[0] // 3),) + values.shape[1:])


def _linear_model_namespace(classes):
    namespace = types.ModuleType("sklearn.linear_model")
    namespace.__dict__.update(vars(sklearn.linear_model))
    namespace.__dict__.update(classes)
    return namespace


def _copy_function(function, namespace, translation):
    """``function`` with ``namespace`` as its globals (closures and wrapped functions too)."""
    closure = function.__closure__
    if closure is not None:
        closure = tuple(types.CellType(translation.get(_cell_value(cell), _cell_value(cell)))
                        for cell in closure)
    copy = types.FunctionType(function.__code__, namespace, function.__name__,
                              function.__defaults__, closure)
    functools.update_wrapper(copy, function)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__dict__.pop("__wrapped__", None)
    return copy


def _cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _translate_value(value, translation):
    if isinstance(value, (tuple, list)):
        return type(value)(_translate_value(item, translation) for item in value)
    if isinstance(value, type(pytest.param(0))):
        return value._replace(values=_translate_value(value.values, translation))
    try:
        return translation.get(value, value)
    except TypeError:  # unhashable
        return value


def _translate_marks(marks, translation):
    translated = []
    for mark in marks:
        if mark.name == "parametrize":
            names, values = mark.args[:2]
            mark = pytest.mark.parametrize(names, _translate_value(list(values), translation),
                                           **mark.kwargs).mark
        translated.append(mark)
    return translated


def translate(module_name, test_names, replacements=None, dask=False):
    """Translated copies of ``module_name``'s tests ``test_names`` and its fixtures.

    Parameters
    ----------
    module_name : str
        A scikit-learn test module, e.g. ``"sklearn.linear_model.tests.test_base"``.
    test_names : iterable of str
        The test functions to copy.
    replacements : dict, optional
        Further global names to replace (e.g. a test module's own subclass of a scikit-learn
        estimator, by the same subclass of daskglm's).
    dask : bool, default=False
        Fit Dask arrays (:func:`on_dask`) made from the tests' in-memory data; the copies'
        names end in ``_on_dask``.

    Returns
    -------
    dict
        Name -> object, to add to the calling test module's globals (``globals().update``).
    """
    module = importlib.import_module(module_name)
    namespace = dict(vars(module))
    classes = {name: on_dask(cls) if dask else cls for name, cls in TRANSLATED.items()}
    translation = {getattr(sklearn.linear_model, name): cls for name, cls in classes.items()}
    for name, value in vars(module).items():
        if value is sklearn.linear_model:
            namespace[name] = _linear_model_namespace(classes)
        elif _hashable(value) and value in translation:
            namespace[name] = translation[value]
    namespace.update(replacements or {})
    helpers = {name: value for name, value in vars(module).items()
               if isinstance(value, types.FunctionType) and value.__module__ == module_name}
    for name, value in helpers.items():
        if name not in (replacements or {}):
            namespace[name] = _copy_function(value, namespace, translation)
            translation[value] = namespace[name]
    collected = {name: value for name, value in vars(module).items()
                 if _is_fixture(value)}
    for name in test_names:
        original = getattr(module, name)
        copy = namespace[name]
        copy.pytestmark = _translate_marks(getattr(original, "pytestmark", []), translation)
        collected[name + ("_on_dask" if dask else "")] = copy
    return collected


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _is_fixture(value):
    return type(value).__name__ == "FixtureFunctionDefinition"


class _SparseSGDClassifier(daskglm.SGDClassifier):
    """test_sgd's ``_SparseSGDClassifier`` (``X`` as CSR), on daskglm's SGDClassifier."""

    def fit(self, X, y, *args, **kwargs):
        return super().fit(_csr(X), y, *args, **kwargs)

    def partial_fit(self, X, y, *args, **kwargs):
        return super().partial_fit(_csr(X), y, *args, **kwargs)

    def decision_function(self, X):
        return super().decision_function(_csr(X))

    def predict_proba(self, X):
        return super().predict_proba(_csr(X))


class _SparseSGDRegressor(daskglm.SGDRegressor):
    """test_sgd's ``_SparseSGDRegressor`` (``X`` as CSR), on daskglm's SGDRegressor."""

    def fit(self, X, y, *args, **kwargs):
        return super().fit(_csr(X), y, *args, **kwargs)

    def partial_fit(self, X, y, *args, **kwargs):
        return super().partial_fit(_csr(X), y, *args, **kwargs)


def _csr(X):
    return sp.csr_array(X)


#: test_sgd's own subclasses of scikit-learn's SGD estimators, as daskglm's.
SGD_REPLACEMENTS = {"_SparseSGDClassifier": _SparseSGDClassifier,
                    "_SparseSGDRegressor": _SparseSGDRegressor}
