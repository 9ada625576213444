"""dask-ml's parameters on daskglm's estimators: the signature of
``dask_ml.linear_model.LogisticRegression``, ``LinearRegression`` and ``PoissonRegression``
(``penalty, dual, tol, C, fit_intercept, intercept_scaling, class_weight, random_state,
solver, multi_class, verbose, warm_start, n_jobs, max_iter, solver_kwargs``), taken as
dask-ml takes them.

``__init__`` stores them as given; at fit time :func:`translated` maps them onto
daskglm's (dask-ml's solver names, the keywords of dask-glm's solvers in
``solver_kwargs``), and :func:`with_dask_ml_parameters` fits with the translation in place
of the stored values, which it puts back afterwards: ``get_params``, ``set_params`` and
``clone`` see the parameters as given.  What has no equivalent is refused with a
ValueError naming daskglm's way of doing it.

dask-ml minimises ``sum loss + lamduh * regularizer(coef)`` with ``lamduh = 1 / C``, L2
regularizer ``||coef||^2 / 2``, L1 ``||coef||_1`` and elastic net their mean; its loss is
the log-loss, the residual sum of squares (without a half) or ``sum(exp(eta) - y eta)``.
daskglm solves that objective, but with the intercept unpenalised (dask-ml penalises the
column of ones it appends) and the coefficients of ``X`` as given (dask-glm's solvers
standardise the columns first, by default, and penalise the standardised coefficients).
"""

from __future__ import annotations

import contextlib
import functools
import math

from ..model.penalties import NoPenalty, make_penalty
from ..solvers import SOLVERS
from ..solvers.options import options_dict
from .sklearn_solvers import sklearn_solver

__all__ = ["SOLVER_NAMES", "translated", "with_dask_ml_parameters", "summed_loss_penalty",
           "DASK_ML_DOC"]

#: dask-ml's solver names -> daskglm's.
SOLVER_NAMES = {"gradient_descent": "gd", "proximal_grad": "proximal", "admm": "admm",
                "lbfgs": "lbfgs", "newton": "newton"}

#: dask-glm's regularizer names -> daskglm's penalties.
PENALTY_NAMES = {"l1": "l1", "l2": "l2", "elastic_net": "elasticnet"}

#: Keywords of dask-glm's solvers (``solver_kwargs``) that are estimator parameters here.
_KWARGS_AS_PARAMETERS = {"max_iter": "max_iter", "tol": "tol", "verbose": "verbose",
                         "regularizer": "penalty", "lamduh": "C"}

#: Keywords of dask-glm's solvers with no equivalent, and what to use instead.
_REFUSED_KWARGS = {
    "family": "the estimator sets the family (daskglm.GLM(family=...) fits another)",
    "rho": "use solver_options={'rho': ...} of solver='admm', on the mean-loss scale "
           "(dask-glm's rho times n_partitions / n_samples)",
    "over_relax": "daskglm's ADMM adapts rho by residual balancing instead "
                  "(solver_options 'adaptive_rho', 'mu', 'tau')",
    "abstol": "use tol (every daskglm solver, ADMM too, stops on the objective's gradient)",
    "reltol": "use tol (every daskglm solver, ADMM too, stops on the objective's gradient)",
    "normalize": "standardise X first (a StandardScaler): daskglm penalises the "
                 "coefficients of X as given, as normalize=False does",
}

#: dask-ml's ``multi_class`` values: its default ``"ovr"`` and scikit-learn's.
_MULTI_CLASS = ("ovr", "multinomial", "auto")

DASK_ML_DOC = """
    dual, intercept_scaling, random_state, n_jobs : optional
        Accepted for dask-ml's signature and ignored, as dask-ml ignores them: the
        intercept is never penalised, so its scaling changes nothing; the solvers draw
        no random numbers; Dask's scheduler sets the parallelism.
    multi_class : {"auto", "ovr", "multinomial"}, default="auto"
        dask-ml's parameter (it ignores it).  Two classes fit the binary model with any
        of them; more fit the multinomial model, which ``"ovr"`` refuses (one-vs-rest is
        ``sklearn.multiclass.OneVsRestClassifier`` around this estimator).
    solver_kwargs : dict, optional
        dask-ml's keywords for dask-glm's solvers: ``max_iter``, ``tol``, ``verbose``,
        ``regularizer`` (``penalty``), ``lamduh`` (``1 / C``) and ``normalize=False`` are
        taken as those parameters; the keywords of daskglm's solver (``solver_options``)
        are taken as options; ``family``, ``rho``, ``over_relax``, ``abstol``,
        ``reltol`` and ``normalize=True`` are refused with daskglm's equivalent.  The
        solver may be named as dask-ml names it: ``"gradient_descent"`` (``"gd"``),
        ``"proximal_grad"`` (``"proximal"``), ``"admm"``, ``"lbfgs"``, ``"newton"``.
"""


def translated(estimator):
    """The parameters of ``estimator`` that dask-ml's parameters change, as daskglm's:
    ``{name: value}`` for the fit (empty for an estimator without ``solver_kwargs`` or
    with nothing to translate).

    Raises
    ------
    TypeError
        For ``solver_kwargs`` that are not a dict, or a regularizer that is not named.
    ValueError
        For a value with no daskglm equivalent (the message names the equivalent).
    """
    params = estimator.get_params(deep=False)
    if "solver_kwargs" not in params:
        return {}
    _check_ignored(estimator, params)
    found = {}
    solver = params["solver"]
    if isinstance(solver, str) and SOLVER_NAMES.get(solver, solver) != solver:
        found["solver"] = SOLVER_NAMES[solver]
    if params.get("penalty") in PENALTY_NAMES and PENALTY_NAMES[params["penalty"]] \
            != params["penalty"]:
        found["penalty"] = PENALTY_NAMES[params["penalty"]]
    kwargs = params["solver_kwargs"]
    if kwargs is not None:
        found.update(_solver_kwargs(kwargs, found.get("solver", solver), params))
    if found.get("penalty") == "elasticnet" and "l1_ratio" in params \
            and params["l1_ratio"] in (None, 0.0):
        found["l1_ratio"] = 0.5  # dask-glm's elastic net: the mean of L1 and L2
    return found


def _solver_kwargs(kwargs, name, params):
    """The parameters ``solver_kwargs`` set for solver ``name``."""
    found = {}
    if not isinstance(kwargs, dict):
        raise TypeError(f"solver_kwargs must be a dict or None; got {type(kwargs).__name__}.")
    own = SOLVERS[name].options if name in SOLVERS else {}
    options = dict(options_dict(params["solver_options"], name if name in SOLVERS else None)
                   or {})
    options_given = False
    for key, value in kwargs.items():
        if key == "normalize" and value is False:
            continue
        if key in _REFUSED_KWARGS:
            raise ValueError(f"solver_kwargs {key!r}={value!r} has no daskglm equivalent: "
                             f"{_REFUSED_KWARGS[key]}.")
        if key in _KWARGS_AS_PARAMETERS:
            found[_KWARGS_AS_PARAMETERS[key]] = _as_parameter(key, value)
        elif key in own:
            options[key], options_given = value, True
        else:
            known = sorted((set(_KWARGS_AS_PARAMETERS) | set(own)) - set(_REFUSED_KWARGS))
            raise ValueError(f"Unknown solver_kwargs key {key!r} for solver {name!r}; it "
                             f"takes {known} (daskglm's own options go in solver_options).")
    if options_given:
        found["solver_options"] = options
    return found


def _as_parameter(key, value):
    """A dask-glm keyword's value as the estimator parameter's."""
    if key == "lamduh":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"solver_kwargs 'lamduh' must be a number >= 0; got {value!r}.")
        return math.inf if value == 0 else 1.0 / value
    if key == "regularizer":
        if not isinstance(value, str) or value not in PENALTY_NAMES:
            raise TypeError(f"solver_kwargs 'regularizer' must be one of "
                            f"{sorted(PENALTY_NAMES)}; got {value!r} (penalty= takes the "
                            "same names).")
        return PENALTY_NAMES[value]
    return value


def _check_ignored(estimator, params):
    """ValueError for dask-ml's parameters whose values daskglm cannot honour."""
    multi_class = params.get("multi_class", "auto")
    if multi_class not in _MULTI_CLASS:
        raise ValueError(f"multi_class must be one of {list(_MULTI_CLASS)}; got "
                         f"{multi_class!r}.")
    if not getattr(estimator, "_classifier", False) and params.get("class_weight") is not None:
        raise ValueError(f"class_weight is for classifiers; {type(estimator).__name__} "
                         "takes row weights as fit(..., sample_weight=...).")


@contextlib.contextmanager
def dask_ml_parameters(estimator):
    """Within: ``estimator``'s parameters as :func:`translated` makes them (and
    scikit-learn's solver names as daskglm's, :func:`.sklearn_solvers.sklearn_solver`);
    after: as they were given."""
    found = {**sklearn_solver(estimator), **translated(estimator)}
    given = {name: getattr(estimator, name) for name in found}
    estimator.__dict__.update(found)
    try:
        yield
    finally:
        estimator.__dict__.update(given)


def with_dask_ml_parameters(method):
    """``method`` (a fit) run with dask-ml's parameters translated
    (:func:`dask_ml_parameters`)."""

    @functools.wraps(method)
    def fit_with_translation(self, *args, **kwargs):
        with dask_ml_parameters(self):
            return method(self, *args, **kwargs)

    return fit_with_translation


def summed_loss_penalty(penalty, C, total_weight, loss_scale=1.0):
    """dask-ml's penalty ``lamduh * regularizer(coef)`` (``lamduh = 1 / C``, against the
    summed loss) on the mean-loss scale of a family whose loss is ``loss_scale`` times
    dask-glm's (one half for least squares): ``loss_scale / (C * total_weight)`` times
    the regularizer, whose elastic net is the mean of L1 and L2."""
    if penalty is None or C is None or math.isinf(C):
        return NoPenalty()
    if isinstance(C, bool) or not isinstance(C, (int, float)) or not C > 0:
        raise ValueError(f"C must be a positive number; got {C!r}.")
    name = PENALTY_NAMES.get(penalty, penalty)
    if name not in ("l1", "l2", "elasticnet"):
        raise ValueError(f"penalty must be 'l1', 'l2', 'elastic_net' or None; got "
                         f"{penalty!r}.")
    return make_penalty(name, loss_scale / (C * total_weight), 0.5)
