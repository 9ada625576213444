"""Stochastic gradient descent: :class:`SGDRegressor`, and the base of both SGD estimators.

:class:`_SGDBase` holds what :class:`SGDRegressor` and
:class:`~daskglm.estimators.sgd_classifier.SGDClassifier` share: the options of the
``"sgd"`` solver, the loss (a GLM family, or one of :mod:`daskglm.compute.sgd_losses`),
``fit`` with ``coef_init`` and ``intercept_init``, and ``partial_fit``, which streams the
row chunks of its input and continues the state of the previous run.  ``SGDRegressor``
predicts and scores as the regressors of :mod:`daskglm.estimators.linear`.  Early
stopping's held-out rows (their split, engine and score) are :mod:`.sgd_early_stopping`.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model._base import SparseCoefMixin

from ..accounting.ledger import CommReport
from ..compute.sgd_losses import REGRESSION_LOSSES
from ..engine import stream_engines
from ..engine.driver_passes import records_driver_passes
from ..model.families import Gaussian
from ..model.penalties import make_penalty
from ..optim.schedules import make_step_rule
from ..solvers import Problem, get_solver
from ..solvers.options import options_dict
from .base import _GLMBase, check_numbers_are_not_text
from .linear import _RegressorGLM
from .sgd_docs import SGD_DOC
from .sgd_early_stopping import EarlyStoppingMixin, frames_as_rows, with_frame_names
from .sgd_objective import history_of_objective, rows_per_weight
from .validation import check_feature_names_match

#: The solvers the SGD estimators run (``solver=``).
STOCHASTIC_SOLVERS = ("sgd", "async", "gossip")


class _SGDBase(EarlyStoppingMixin, SparseCoefMixin, _GLMBase):
    """Shared machinery of the SGD estimators: options, ``fit`` and ``partial_fit``.

    The model is scikit-learn's ``sum(sample weight * loss) / n_samples + alpha *
    R(coef)`` (:mod:`.sgd_objective`) with scikit-learn's SGD penalty
    ``R``: ``||coef||^2 / 2`` (``"l2"``), ``||coef||_1`` (``"l1"``) or ``l1_ratio *
    ||coef||_1 + (1 - l1_ratio) / 2 * ||coef||^2`` (``"elasticnet"``); it is minimised by
    the ``"sgd"`` solver (:class:`daskglm.solvers.sgd.SGD`).  The run's state (iterate,
    step-rule state, step count, running mean, seed) is kept after ``fit`` and
    ``partial_fit``, and ``partial_fit`` continues it.
    """

    #: The supported ``loss`` names.
    _losses: tuple = ()
    #: The ``loss`` that is the GLM family of :meth:`_family` (the others are SGD losses).
    _family_loss = ""

    #: Checks of :func:`sklearn.utils.estimator_checks.check_estimator` that fail by
    #: design, ``{check name: reason}``, the same as scikit-learn declares for its own SGD
    #: estimators: a stochastic fit with sample weights is not the fit with the rows
    #: repeated or removed.  scikit-learn has no tag through which a third-party estimator
    #: declares them, so pass this dict as ``check_estimator(estimator,
    #: expected_failed_checks=type(estimator)._expected_failed_checks)`` (or return it from
    #: the ``expected_failed_checks`` callable of ``parametrize_with_checks``).
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": (
            "sample_weight is not equivalent to removing/repeating samples."
        ),
        "check_sample_weight_equivalence_on_sparse_data": (
            "sample_weight is not equivalent to removing/repeating samples."
        ),
    }

    def _family(self):
        """The GLM family that checks the targets and gives predictions and scores."""
        raise NotImplementedError

    def _sgd_loss(self):
        """The SGD loss of ``loss=`` other than the family's own, from its name."""
        raise NotImplementedError

    def _loss_function(self):
        """What SGD minimises: the family for its own loss, else an SGD loss."""
        return self._family() if self.loss == self._family_loss else self._sgd_loss()

    def _penalty(self, total_weight):
        return make_penalty(self.penalty, self.alpha, self.l1_ratio)

    def _rescalable(self):
        return False  # partial_fit would see each chunk in its own scales

    def _check_params(self):
        name = type(self).__name__
        check_numbers_are_not_text(self)
        if self.loss not in self._losses:
            supported = ", ".join(repr(loss) for loss in self._losses)
            raise ValueError(f"{name} supports loss={supported} only; got loss={self.loss!r}.")
        epsilon = self.epsilon
        if not (isinstance(epsilon, (int, float, np.number)) and not isinstance(epsilon, bool)
                and np.isfinite(epsilon) and epsilon >= 0):
            raise ValueError(f"epsilon must be a finite number >= 0; got {epsilon!r}.")
        if self.penalty not in ("l2", "l1", "elasticnet", None):
            raise ValueError(
                f"penalty must be 'l2', 'l1', 'elasticnet' or None; got {self.penalty!r}."
            )
        if self.penalty == "elasticnet" and self.l1_ratio is None:
            raise ValueError("l1_ratio must be set when penalty is 'elasticnet'")
        l1_ratio = self.l1_ratio  # checked whatever the penalty, as scikit-learn
        if l1_ratio is not None and not (
                isinstance(l1_ratio, (int, float, np.number)) and not isinstance(l1_ratio, bool)
                and 0 <= l1_ratio <= 1):
            raise ValueError(f"The 'l1_ratio' parameter of {name} must be a float in the range "
                             f"[0.0, 1.0] or None. Got {l1_ratio!r} instead.")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}.")
        if not isinstance(self.shuffle, (bool, np.bool_)):
            raise ValueError(f"shuffle must be True or False; got {self.shuffle!r}.")
        if self.cache not in ("auto", "memory", "none"):
            raise ValueError(f"cache must be 'auto', 'memory' or 'none'; got {self.cache!r}.")
        max_iter = self.max_iter  # at least one epoch, as scikit-learn's SGD (no None, no 0)
        if not (isinstance(max_iter, (int, np.integer)) and not isinstance(max_iter, bool)
                and max_iter >= 1):
            raise ValueError(f"max_iter must be an integer >= 1; got {max_iter!r}.")
        if not isinstance(self.early_stopping, (bool, np.bool_)):
            raise ValueError(f"early_stopping must be True or False; got {self.early_stopping!r}.")
        fraction = self.validation_fraction
        if not (isinstance(fraction, (int, float, np.number)) and not isinstance(fraction, bool)
                and 0 < fraction < 1):
            raise ValueError(f"The 'validation_fraction' parameter of {name} must be a float in "
                             f"the range (0.0, 1.0). Got {fraction!r} instead.")
        if self.early_stopping and self.solver != "sgd":
            raise ValueError(f"early_stopping is an option of solver='sgd'; got "
                             f"solver={self.solver!r}.")

    def _problem(self, n_features, rows_per_weight=1.0):
        """The problem with ``alpha * R`` on the solver's weighted-mean-loss scale:
        ``alpha`` times ``n_samples / sum of the weights`` (:mod:`.sgd_objective`)."""
        penalty = self._penalty(1.0)
        if rows_per_weight != 1.0:
            penalty = make_penalty(self.penalty, self.alpha * rows_per_weight, self.l1_ratio)
        return Problem(self._loss_function(), penalty, bool(self.fit_intercept), int(n_features))

    def _solver(self, problem, tol, max_iter, validation=None):
        name = self.solver
        if name not in STOCHASTIC_SOLVERS:
            raise ValueError(f"solver must be one of {list(STOCHASTIC_SOLVERS)}; got {name!r}.")
        extra = options_dict(self.solver_options, name, given=True)
        options = {
            "batch_size": self.batch_size, "learning_rate": self.learning_rate, "eta0": self.eta0,
            "power_t": self.power_t, "n_iter_no_change": self.n_iter_no_change,
            "random_state": self.random_state,
        }
        if name == "sgd":
            options.update(average=self.average, sync_every=self.sync_every,
                           validation=validation, shuffle=bool(self.shuffle))
        elif self.average is not False or self.sync_every not in (None, "auto") \
                or not self.shuffle:
            raise ValueError(f"average, sync_every and shuffle=False are options of "
                             f"solver='sgd'; solver={name!r} takes none of them.")
        options.update(extra or {})
        solver = get_solver(name, problem, tol=tol, max_iter=max_iter, options=options)
        # "optimal" needs alpha > 0: say so before any pass
        make_step_rule(solver.opts["learning_rate"], solver.opts["eta0"], solver.opts["power_t"],
                       alpha=getattr(problem.penalty, "alpha", 0.0))
        return solver

    @records_driver_passes
    def fit(self, X, y, coef_init=None, intercept_init=None, sample_weight=None):
        """Fit by SGD for up to ``max_iter`` epochs, from zero or from the given start.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
        coef_init : array-like of shape (n_features,), optional
            The starting coefficients (zero by default; with ``warm_start``, those of the
            previous fit).
        intercept_init : array-like of shape (1,), optional
            The starting intercept.
        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.

        Returns
        -------
        self
        """
        self._check_params()
        held_out = names = None
        if self.early_stopping:
            (X, y, sample_weight), names = frames_as_rows(X, y, sample_weight)
            (X, y, sample_weight), held_out = self._split_held_out(X, y, sample_weight)
        self._fit_template(X, y, sample_weight, init=(coef_init, intercept_init),
                           held_out=held_out)
        return with_frame_names(self, names)

    def _previous_params(self, init, n_features):
        """``coef_init`` and ``intercept_init`` (``init``), else with ``warm_start`` the
        previous fit's parameters."""
        if init is not None and (init[0] is not None or init[1] is not None):
            return _initial_params(n_features, *init, self.fit_intercept)
        return super()._previous_params(init, n_features)

    _iterations = "epochs"
    _converged_means_optimum = False

    def _planned_solver(self, n_features, has_offset=False, n_samples=1, link=None):
        problem = self._problem(n_features)
        return self.solver, problem, self._solver(problem, self.tol, self.max_iter)

    def _configure(self, plan, name, engines):
        """The plan's problem, and its solver, scoring the held-out rows with early
        stopping; with sample or class weights, ``alpha`` and the stopping rule's ``tol``
        scaled to the solver's objective (:mod:`.sgd_objective`)."""
        scale = self._rows_per_weight = rows_per_weight(engines.training)
        if engines.held_out is None and scale == 1.0:
            return plan.problem, plan.solver
        problem = self._problem(plan.problem.n_features, scale)
        if engines.held_out is not None:  # the rule compares held-out scores: no scaling
            return problem, self._solver(problem, self.tol, self.max_iter,
                                         self._validation_score(problem, engines.held_out))
        tol = None if self.tol is None else self.tol * scale
        return problem, self._solver(problem, tol, self.max_iter)

    def _record_fit(self, problem, result):
        self.history_ = []
        history = history_of_objective(result.history,
                                       self.__dict__.pop("_rows_per_weight", 1.0))
        if self.solver != "sgd":  # no SGD state to keep: partial_fit is sgd's alone
            self.__dict__.pop("_sgd_state", None)
            self.__dict__.pop("t_", None)
            coef, intercept = problem.split(result.params)
            self._set_coef(coef, intercept)
            self.history_ = history
            self.n_iter_ = int(result.n_iter)
            self.solver_ = self.solver
        else:
            self._store(problem, result.state, history, result.n_iter)
        self.converged_ = bool(result.converged)

    _PARTIAL_FIT_DOC = """One epoch of SGD over the given data, continuing from the current state.

        A Dask array is streamed: its row chunks are computed and processed one after the
        other (on the cluster when there is an active client), never all at once.  Each
        chunk gets ``ceil(chunk rows / batch_size)`` steps on its own rows, with gradients
        scaled to its own weighted mean loss, and the step count, step-rule state and
        running mean carry over from chunk to chunk and from call to call.  Calling it on
        the chunks one by one gives exactly the same model as one call on the Dask array,
        and ``E`` calls on the same data give exactly what ``fit`` with ``max_iter=E,
        tol=None`` gives on it when ``fit`` sees it as one partition (a Dask array of one
        chunk).  A ``fit`` over several partitions draws each mini-batch from all of them,
        which a stream, seeing one chunk at a time, cannot do.

        Parameters
        ----------
        X : array-like, sparse matrix, Dask array or Dask DataFrame of shape (n_samples, n_features)
        y : array-like or Dask array of shape (n_samples,)
%(classes)s        sample_weight : array-like or Dask array of shape (n_samples,), optional
            Non-negative row weights.

        Returns
        -------
        self
        """

    def _partial_fit(self, X, y, sample_weight, classes):
        """:meth:`partial_fit` of both estimators; ``classes`` is None for regressors."""
        self._check_params()
        if self.early_stopping:
            raise ValueError("early_stopping should be False with partial_fit")
        if self.solver != "sgd":
            raise ValueError(f"partial_fit runs solver='sgd' only; got solver={self.solver!r}.")
        state = getattr(self, "_sgd_state", None)
        n_features = getattr(self, "n_features_in_", None)
        first_names = getattr(self, "feature_names_in_", None)
        X, y, sample_weight = self._validate_input(X, y, sample_weight)
        if state is not None:
            # the first call's names and width stay, whichever check below fails
            names = self.__dict__.pop("feature_names_in_", None)
            if first_names is not None:
                self.feature_names_in_ = first_names
            found, self.n_features_in_ = self.n_features_in_, n_features
            check_feature_names_match(self, names)
        if state is not None and found != n_features:
            raise ValueError(
                f"X has {found} features, but {type(self).__name__} is expecting {n_features} "
                "features as input."
            )
        y = self._partial_target(y, classes, first=state is None)
        problem = self._problem(X.shape[1])
        solver = self._solver(problem, None, 1)
        if state is None:
            state = solver.initial_state(problem, np.zeros(problem.n_params))
            self.comm_, self.history_, self.n_iter_ = CommReport(), [], 0
        n_epochs = self.n_iter_ + 1
        for engine in stream_engines(X, y, sample_weight, family=problem.family, ledger=self.comm_):
            scale = rows_per_weight(engine)  # each chunk's own scale, as its mean loss
            chunk_problem = problem if scale == 1.0 else self._problem(X.shape[1], scale)
            result = solver.solve(chunk_problem, engine, state.params, state=state)
            state = result.state
            self._store(problem, state, history_of_objective(result.history, scale), n_epochs)
        self.converged_ = True
        return self

    def _partial_target(self, y, classes, first):
        return self._prepare_target(y)

    def _store(self, problem, state, history, n_iter):
        """Fitted attributes from the state of a run and its history entries."""
        self._sgd_state = state
        coef, intercept = problem.split(state.solution)
        self._set_coef(coef, intercept)
        for entry in history:
            self.history_.append({**entry, "iteration": len(self.history_) + 1})
        self.n_iter_ = int(n_iter)
        self.t_ = int(state.step)
        self.solver_ = "sgd"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class SGDRegressor(_SGDBase, _RegressorGLM):
    __doc__ = (
        """Linear regression by SGD, as :class:`sklearn.linear_model.SGDRegressor`.

    Minimises ``sum(sample_weight * loss(y, X coef + intercept)) / n_samples + alpha *
    R(coef)`` (scikit-learn's SGD objective) by mini-batch or local SGD on the
    partitions of the data.

    Parameters
    ----------
    loss : {"squared_error", "huber", "epsilon_insensitive", \
"squared_epsilon_insensitive"}, default="squared_error"
        ``(y - p)^2 / 2``; Huber's ``(y - p)^2 / 2`` for ``|y - p| <= epsilon`` and
        ``epsilon * |y - p| - epsilon^2 / 2`` beyond; ``max(0, |y - p| - epsilon)`` (that of
        support vector regression) or its square; all exactly scikit-learn's.
    epsilon : float, default=0.1
        The ``epsilon`` of the Huber and epsilon-insensitive losses, >= 0.
"""
        + SGD_DOC % {"learning_rate": "invscaling", "eta0": 0.01, "power_t": 0.25}
    )

    _losses = ("squared_error", *REGRESSION_LOSSES)
    _family_loss = "squared_error"

    def __init__(self, loss="squared_error", *, penalty="l2", alpha=0.0001, l1_ratio=0.15,
                 fit_intercept=True, max_iter=1000, tol=1e-3, shuffle=True,
                 learning_rate="invscaling", eta0=0.01, power_t=0.25, average=False,
                 random_state=None, n_iter_no_change=5, batch_size=16, sync_every="auto",
                 solver="sgd", solver_options=None, cache="auto", verbose=0, warm_start=False,
                 epsilon=0.1, early_stopping=False, validation_fraction=0.1, missing="error"):
        self.loss = loss
        self.epsilon = epsilon
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol
        self.shuffle = shuffle
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.power_t = power_t
        self.average = average
        self.random_state = random_state
        self.n_iter_no_change = n_iter_no_change
        self.batch_size = batch_size
        self.sync_every = sync_every
        self.solver = solver
        self.solver_options = solver_options
        self.cache = cache
        self.verbose = verbose
        self.warm_start = warm_start
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.missing = missing

    def _family(self):
        return Gaussian()

    def _sgd_loss(self):
        return REGRESSION_LOSSES[self.loss](float(self.epsilon))

    def _set_coef(self, coef, intercept):
        self.coef_ = coef
        self.intercept_ = np.array([intercept])

    def partial_fit(self, X, y, sample_weight=None):
        return self._partial_fit(X, y, sample_weight, None)

    partial_fit.__doc__ = _SGDBase._PARTIAL_FIT_DOC % {"classes": ""}


def _initial_params(n_features, coef_init, intercept_init, fit_intercept):
    """The starting parameters from ``coef_init`` and ``intercept_init``, checked against
    the ``n_features`` columns before any work; None when neither is given."""
    if coef_init is None and intercept_init is None:
        return None
    coef = np.zeros(n_features)
    if coef_init is not None:
        coef = np.asarray(coef_init, dtype=np.float64)
        if coef.size != n_features or coef.ndim > 2:
            raise ValueError(
                f"Provided coef_init does not match dataset: shape {coef.shape}, expected "
                f"({n_features},)."
            )
        coef = coef.ravel()
    if not np.all(np.isfinite(coef)):
        raise ValueError("coef_init must be finite.")
    if not fit_intercept:
        return coef.copy()
    intercept = 0.0
    if intercept_init is not None:
        intercept = np.asarray(intercept_init, dtype=np.float64)
        if intercept.size != 1:
            raise ValueError(
                f"Provided intercept_init does not match dataset: shape {intercept.shape}, "
                "expected (1,)."
            )
        intercept = float(intercept.ravel()[0])
        if not np.isfinite(intercept):
            raise ValueError("intercept_init must be finite.")
    return np.append(coef, intercept)
