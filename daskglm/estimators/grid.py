"""Many models of one estimator on one data set, their reads of the data shared:
:func:`fit_grid` and its result, :class:`GridFit`.

The input is checked and read once (one validation round for every model); the models
that differ only in the strength of their penalty (``C`` or ``alpha``) form a path, fitted
from the strongest penalty to the weakest, each fit starting from the previous solution;
and the paths run side by side with their rounds shared
(:class:`daskglm.engine.folds.SharedRounds`): one round carries the requests of every
path, and one read of ``X`` evaluates the loss and gradient of all of them
(:func:`daskglm.compute.kernels.loss_grads`, dense and CSR partitions).  Every model is
the estimator a ``fit`` of its own would give, its coefficients within the solver's
``tol`` of the same optimum.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import ParameterGrid

from ..accounting.ledger import CommReport
from ..engine.driver_passes import add_to, collecting
from ..engine.folds import AllRows, SharedRounds
from .dask_ml_params import dask_ml_parameters
from .plan import FitEngines

__all__ = ["fit_grid", "GridFit", "GRID_PARAMETERS"]

#: The parameters a grid may vary: those of the penalty, the solver and its stopping
#: rule, none of which changes the data a fit reads.
GRID_PARAMETERS = frozenset({"C", "alpha", "l1_ratio", "penalty", "tol", "max_iter",
                             "solver", "fit_intercept"})

#: The solvers whose rounds are all ``reduce`` rounds, which paths side by side share.
#: A fit of another solver (or L-BFGS on column shards, which ``solver="auto"`` leaves
#: out of a grid) keeps state on the workers: the paths then run one after the other,
#: still sharing the validation round.
SHARED_SOLVERS = frozenset({"normal", "newton", "lbfgs", "proximal", "gd"})


@dataclasses.dataclass
class GridFit:
    """The fitted models of :func:`fit_grid` and what they cost.

    Attributes
    ----------
    models : list of estimators
        One fitted clone of the estimator per setting, in the order of ``params``.
    params : list of dict
        The settings, in the order of :class:`sklearn.model_selection.ParameterGrid`.
    comm_ : CommReport
        Every round of the fits, validation included; a shared round is one record.
        Every model's ``comm_`` is this ledger.
    seconds : float
        Wall time of the whole call.
    shared : bool
        Whether the paths ran side by side with their rounds shared (False when a fit's
        solver keeps state on the workers; see :data:`SHARED_SOLVERS`).
    paths : list of list of int
        The indices of the models of each path, strongest penalty first.
    """

    models: list
    params: list
    comm_: CommReport
    seconds: float
    shared: bool
    paths: list

    def summary(self):
        """One dict per model: its settings, ``n_iter`` and ``converged``."""
        return [{**params, "n_iter": int(np.max(model.n_iter_)),
                 "converged": bool(model.converged_)}
                for params, model in zip(self.params, self.models)]

    def __repr__(self):
        return (f"GridFit({len(self.models)} models in {len(self.paths)} paths, "
                f"{self.comm_.rounds} rounds, {self.seconds:.3g} s, shared={self.shared})")


def fit_grid(estimator, param_grid, X, y, sample_weight=None, offset=None, exposure=None):
    """Fit one model of ``estimator`` for every setting of ``param_grid``, reading the
    data once per round for all of them.

    Spark MLlib's ``Estimator.fitMultiple`` for daskglm's estimators: the input is
    checked and validated once; the settings that differ only in ``C`` (or ``alpha``)
    form a regularisation path, fitted from the strongest penalty to the weakest, each
    fit starting from the previous solution; the paths run side by side, one round
    serving a step of every path, and one read of ``X`` giving the loss and gradient of
    all of them.  Each model is the estimator a ``fit`` of its own would give (its
    coefficients within ``tol`` of the same optimum), with ``converged_``, ``n_iter_``
    and ``history_`` of its own solve.

    Parameters
    ----------
    estimator : daskglm estimator
        A batch-fitted estimator (``LogisticRegression``, ``Ridge``, ``Lasso``,
        ``ElasticNet``, ``GLM``, ``PoissonRegressor``, ...; not the SGD estimators or
        the cross-validated ones); it is cloned, never fitted.
    param_grid : dict or list of dict
        As :class:`sklearn.model_selection.ParameterGrid`; only the parameters of
        :data:`GRID_PARAMETERS` may vary.
    X, y, sample_weight, offset, exposure
        As for the estimator's ``fit``.

    Returns
    -------
    GridFit
        The fitted models, in the order of ``ParameterGrid(param_grid)``, and the rounds
        they took together.

    Raises
    ------
    TypeError
        For an estimator that is not a batch-fitted daskglm estimator.
    ValueError
        For an empty grid, a parameter outside :data:`GRID_PARAMETERS`, or a setting the
        estimator refuses; all before any work starts.
    """
    started = time.perf_counter()
    _check_estimator(estimator)
    settings = list(ParameterGrid(param_grid))
    if not settings:
        raise ValueError("param_grid holds no setting.")
    varied = sorted({name for setting in settings for name in setting} - GRID_PARAMETERS)
    if varied:
        raise ValueError(
            f"fit_grid varies only {sorted(GRID_PARAMETERS)}, which leave the data as they "
            f"are; got {varied}.  Use sklearn.model_selection.GridSearchCV for those.")
    models = [clone(estimator).set_params(**setting) for setting in settings]
    for model in models:
        model._in_grid = True
        with dask_ml_parameters(model):
            model._check_params()
    try:
        with collecting() as driver_passes:
            fitted = _fit_models(models, X, y, sample_weight, offset, exposure, started)
    finally:
        for model in models:
            vars(model).pop("_in_grid", None)
    ledger, shared, paths, results = fitted
    add_to(ledger, driver_passes)
    for model, (name, result) in zip(models, results):
        warn = getattr(model, "_warn_ignored_parameters", None)
        if warn is not None:
            warn()
        model._finish_fit(name, result)
    return GridFit(models, settings, ledger, time.perf_counter() - started, shared, paths)


def _check_estimator(estimator):
    if not hasattr(estimator, "_fit_on_engines") or not estimator._converged_means_optimum \
            or _defining_module(estimator, "_open_engines") != f"{__package__}.base":
        raise TypeError(f"fit_grid fits daskglm's batch-fitted estimators; got "
                        f"{type(estimator).__name__}.")


def _defining_module(estimator, name):
    """The module of the class in ``estimator``'s hierarchy that defines method ``name``."""
    owner = next(cls for cls in type(estimator).__mro__ if name in vars(cls))
    return owner.__module__


def _fit_models(models, X, y, sample_weight, offset, exposure, started):
    """Check the input once, validate it in one engine, fit every path on it."""
    first = models[0]
    with dask_ml_parameters(first):
        data = first._fit_data(X, y, sample_weight, offset, exposure)
    given = set(first.get_params(deep=False))
    checked = {name: value for name, value in vars(first).items() if name not in given}
    for model in models[1:]:
        vars(model).update(checked)  # what checking the input set: n_features_in_, ...
    plans = []
    for model in models:
        with dask_ml_parameters(model):
            plans.append(model._plan(data, None))
    rescale = all(plan.rescale for plan in plans)
    paths = _paths(models)
    with first._engine(data.X, data.y, data.sample_weight, data.family, data.offset,
                       labels=data.labels, rescale=rescale) as engine:
        for model in models:
            model.cache_ = first.cache_
        rounds = SharedRounds(engine)
        engines = FitEngines(AllRows(engine, rounds))
        shared = all(_shares_rounds(plan) for plan in plans)
        results = [None] * len(models)
        fits = [functools.partial(_fit_path, models, plans, path, data, engines, started,
                                  results) for path in paths]
        if shared:
            rounds.run(fits)
        else:
            for fit in fits:
                fit()
        ledger = engine.ledger
    return ledger, shared, paths, results


def _fit_path(models, plans, path, data, engines, started, results):
    """The models of one path in turn, each starting from the previous one's solution."""
    previous = None
    for index in path:
        model, plan = models[index], plans[index]
        if previous is not None and plan.start is None:
            plan = dataclasses.replace(plan, start=previous)
        with dask_ml_parameters(model):
            results[index] = model._fit_on_engines(data, plan, engines, started)
        previous = np.asarray(results[index][1].params, dtype=np.float64)


def _shares_rounds(plan):
    options = getattr(plan.solver, "opts", None) or {}
    return plan.solver_name in SHARED_SOLVERS and not options.get("sharded")


def _paths(models):
    """The indices of the models that differ only in the strength of their penalty, one
    list each, strongest first."""
    paths = {}
    for index, model in enumerate(models):
        params = model.get_params(deep=False)
        key = repr(sorted((name, repr(value)) for name, value in params.items()
                          if name not in ("C", "alpha")))
        paths.setdefault(key, []).append(index)
    return [sorted(path, key=lambda index: -_strength(models[index])) for path in paths.values()]


def _strength(model):
    """How strongly the model's penalty weighs: ``1 / C`` or ``alpha``."""
    C = getattr(model, "C", None)
    if C is not None:
        return 0.0 if math.isinf(C) else 1.0 / C
    return float(getattr(model, "alpha", 0.0) or 0.0)
