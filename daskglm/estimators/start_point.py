"""Where a fit starts: the previous fit's parameters (``warm_start``, ``coef_init``) or
zero coefficients and the start intercept (the family's own, or from the weighted mean
target and offset, which the null model of inference needs too); the solver's first
evaluation, planned for the validation round or made from its per-class column sums; and,
for ``solver="auto"`` on partly kept data, the solution on the kept partitions."""

from __future__ import annotations

import numpy as np

from ..compute.losses import loss_of
from ..engine import is_dask
from ..fitting.inference import start_intercept_of, target_and_offset_sums
from ..fitting.solve import solve_on_kept_part
from .linear_predictors import dense_coef


class StartMixin:
    """The start point of a fit and its solver's first evaluation."""

    def _first_evaluation(self, solver, problem, start):
        """The solver's first evaluation, for the validation round to compute in the same
        read of the data, when its start point is known before that read: zero (or the
        family's own start intercept), or ``start`` (the previous fit's or
        ``coef_init``'s parameters).  None when the start needs the data (the families
        that start the intercept at the mean target) or the solver's first round cannot
        be shared."""
        params0 = start_params(problem, None, start, None)
        return None if params0 is None else solver.first_evaluation(problem, params0)

    def _previous_params(self, init, n_features):
        """The fitted parameters to start from with ``warm_start``, else None."""
        if not self.warm_start or not hasattr(self, "coef_"):
            return None
        coef = np.ravel(dense_coef(self.coef_)).astype(np.float64)
        if self.fit_intercept:
            return np.append(coef, float(np.ravel(self.intercept_)[0]))
        return coef

    def _start_on_kept_part(self, plan, name, problem, solver, engine, params0):
        """With ``solver="auto"`` on data partly kept in memory and partly read from their
        source in every round (``cache_ == "partial"``), start from the same solver's
        solution on the kept partitions alone: it costs no read of the source, and the
        fit on all the data then needs fewer rounds, each a read of the source.  The
        kept part's rounds go to the ledger (no bytes read) and the start to its
        choices (:func:`~daskglm.fitting.solve.solve_on_kept_part`).  ``params0``
        otherwise, and for a start given (``warm_start``, ``coef_init``), the normal
        equations (one round whatever the start) and the multinomial model."""
        if self.solver != "auto" or engine.cache != "partial" or plan.start is not None \
                or params0 is None or name == "normal" or not loss_of(problem).single_output:
            return params0
        found = solve_on_kept_part(solver, problem, engine, params0, name)
        return params0 if found is None else found

    def _first_evaluation_from_classes(self, engine, problem, solver, params0):
        """Hand the solver's first evaluation to the engine as computed, from the per-class
        column sums of the validation round, when that round found the classes (so could
        not run the evaluation) and the coefficients start at zero
        (:meth:`~daskglm.compute.losses.Loss.evaluation_from_class_counts`)."""
        counts = engine.label_counts
        if engine.first_evaluation is not None or counts is None or not counts.has_moments():
            return
        first = solver.first_evaluation(problem, params0)
        if first is None or np.any(problem.coef(params0)):
            return
        if first.loss is None or first.hessian:
            return
        class_weights = None
        if getattr(self, "class_weight", None) is not None:
            class_weights = self._class_weights_of_counts(counts)
        stats = first.loss.evaluation_from_class_counts(counts, class_weights, params0)
        if stats is None:
            return
        engine.keep_first_evaluation(first, stats)


def mean_target_and_offset(engine, family, inference):
    """The weighted mean target and offset of the training rows, when the fit starts from
    them or the null model of inference needs them.

    Parameters
    ----------
    engine : Engine
        The fit's validated engine; one round of it sums the weights, the weighted targets
        and the weighted offsets (:func:`~daskglm.fitting.inference.target_and_offset_sums`).
    family : Family or Loss
        The fit's family: those that declare ``starts_at_mean_target`` start there.
    inference : bool
        Whether the fit computes the statistics of inference (its null model is the
        mean target).

    Returns
    -------
    tuple of float or None
        ``(mean target, mean offset)``, or None (and no round) when neither the start nor
        inference needs them.
    """
    if not (inference or _starts_at_mean_target(family)):
        return None
    target, offset, weight = target_and_offset_sums(engine)
    return target / weight, offset / weight


def _start_intercept(family, means):
    """``g(mean target) - mean offset`` for the families that start there; else the
    family's own start."""
    if means is None or not _starts_at_mean_target(family):
        return family.start_intercept()
    return start_intercept_of(family, means)


def _starts_at_mean_target(family):
    """Whether ``family`` starts its fits from the mean target
    (:attr:`~daskglm.model.families.Family.starts_at_mean_target`; a loss that is not a
    GLM family does not)."""
    return getattr(family, "starts_at_mean_target", False)


def follows_from_class_sums(first, X):
    """Whether the validation round's per-class column sums give a solver's first
    evaluation without a round of its own.

    They do for a loss and gradient at zero coefficients, for two classes or more
    (:meth:`StartMixin._first_evaluation_from_classes`), on dense numpy ``X`` (where those
    sums share the validation's one compiled read).

    Parameters
    ----------
    first : FirstEvaluation or None
        The solver's first evaluation, made before the classes are known (for two
        classes).
    X : ndarray or Dask array
        The training features.

    Returns
    -------
    bool
    """
    if first is None or first.loss is None or first.hessian or not first.loss.single_output:
        return False
    coef = first.params[:-1] if first.loss.fit_intercept else first.params
    meta = X._meta if is_dask(X) else X
    return type(meta) is np.ndarray and meta.dtype in (np.float32, np.float64) \
        and not np.any(coef)


def start_params(problem, means, previous, scale):
    """The parameters a fit starts from.

    ``previous`` (warm start, ``coef_init``) mapped to the engine's column ``scale``, else
    zero coefficients and the start intercept (the family's own, or ``g(mean target) -
    mean offset``, :func:`_start_intercept`).

    Parameters
    ----------
    problem : Problem
        The fit's problem.
    means : tuple of float or None
        ``(mean target, mean offset)`` (:func:`mean_target_and_offset`), None when not
        known yet.
    previous : ndarray or None
        The parameters to start from, if any; used when their shape is the problem's.
    scale : ndarray or None
        The engine's column scale: ``previous`` is divided by it.

    Returns
    -------
    ndarray or None
        None for a family that starts from the mean target when ``means`` is None (not
        known yet).
    """
    params0 = np.zeros(problem.n_params)
    if previous is not None and previous.shape == params0.shape:
        params0 = previous.copy()
        if scale is not None:
            n_coef = n_coef_of(problem)
            params0[:n_coef] /= np.tile(scale, n_coef // problem.n_features)
        return params0
    if problem.fit_intercept:
        if means is None and _starts_at_mean_target(problem.family):
            return None
        params0[-1] = _start_intercept(problem.family, means)
    return params0


def n_coef_of(problem):
    """The number of penalised parameters of ``problem``: the coefficients of every class.

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    int
    """
    return getattr(problem, "n_coef", problem.n_features)
