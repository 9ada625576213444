""":class:`PoissonRegression`: dask-ml's ``dask_ml.linear_model.PoissonRegression``, its
name, parameters and penalty, on daskglm's Poisson regression."""

from __future__ import annotations

from .dask_ml_params import DASK_ML_DOC, summed_loss_penalty
from .docstrings import COMMON_DOC, FITTED_DOC
from .inference import INFERENCE_DOC, INFERENCE_FITTED_DOC
from .linear import PoissonRegressor

__all__ = ["PoissonRegression"]


class PoissonRegression(PoissonRegressor):
    __doc__ = (
        """Poisson regression with a log link and dask-ml's parameters, as
    ``dask_ml.linear_model.PoissonRegression``.

    Minimises ``sum_i w_i (exp(eta_i) - y_i eta_i) + lamduh * regularizer(coef)`` with
    ``lamduh = 1 / C`` (:mod:`~daskglm.estimators.dask_ml_params`): dask-ml's objective,
    the intercept unpenalised.  :class:`PoissonRegressor` is scikit-learn's
    parametrisation of the same model (``alpha = 1 / (C * n_samples)`` for ``"l2"``).

    Parameters
    ----------
    penalty : {"l2", "l1", "elastic_net"} or None, default="l2"
        dask-ml's regularizer; None fits without one.
    C : float, default=1.0
        Inverse regularisation strength against the summed loss; ``inf`` fits without a
        penalty.
    class_weight : None
        dask-ml's parameter; only None (row weights are ``sample_weight``).
"""
        + INFERENCE_DOC
        + COMMON_DOC
        + DASK_ML_DOC
        + FITTED_DOC
        + INFERENCE_FITTED_DOC
    )

    def __init__(self, penalty="l2", dual=False, tol=1e-4, C=1.0, fit_intercept=True,
                 intercept_scaling=1.0, class_weight=None, random_state=None, solver="auto",
                 max_iter=100, multi_class="auto", verbose=0, warm_start=False, n_jobs=None,
                 solver_kwargs=None, *, solver_options=None, cache="auto", inference=False,
                 missing="error"):
        self.penalty = penalty
        self.dual = dual
        self.tol = tol
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.random_state = random_state
        self.solver = solver
        self.max_iter = max_iter
        self.multi_class = multi_class
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.solver_kwargs = solver_kwargs
        self.solver_options = solver_options
        self.cache = cache
        self.inference = inference
        self.missing = missing

    #: ``C`` weighs the summed loss.
    _penalty_scales_with_weight = True

    def _penalty(self, total_weight):
        return summed_loss_penalty(self.penalty, self.C, total_weight)
