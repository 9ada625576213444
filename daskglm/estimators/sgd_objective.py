"""scikit-learn's SGD objective on daskglm's stochastic solvers.

scikit-learn's :class:`~sklearn.linear_model.SGDClassifier` and
:class:`~sklearn.linear_model.SGDRegressor` minimise

    J = sum_i w_i loss_i / n + alpha * R(coef),

the weighted losses divided by the number of rows ``n`` (each row's step in its
``_plain_sgd`` is the sample weight times the loss gradient, plus the penalty's).  The
stochastic solvers minimise a weighted mean loss plus a penalty, ``sum_i w_i loss_i /
sum_i w_i + P``: with ``P = alpha * (n / sum_i w_i) * R`` that is ``J`` times ``n / sum_i
w_i``, the same minimiser.  :func:`rows_per_weight` is that factor (exactly 1 without
sample or class weights, so that such fits are unchanged); the estimators scale
``alpha`` and the stopping ``tol`` by it, and divide the objectives of their history
by it (:func:`history_of_objective`) so that ``history_`` reports ``J``.
"""

from __future__ import annotations

__all__ = ["rows_per_weight", "history_of_objective"]

#: The entries of a solver's history that are on the objective's scale.
_OBJECTIVE_ENTRIES = ("objective", "loss", "penalty")


def rows_per_weight(engine):
    """``n / sum of the sample weights`` of the rows an ``engine`` holds (1 when they
    weigh nothing, which the engine's validation refuses anyway)."""
    total = float(engine.sum_weight)
    if not total > 0:
        return 1.0
    return float(engine.n_samples) / total


def history_of_objective(entries, scale):
    """History ``entries`` of the solver's objective (``scale`` times ``J``) as entries of
    ``J``: new dicts, the objective, loss and penalty divided by ``scale``."""
    if scale == 1.0:
        return list(entries)
    return [{key: value / scale if key in _OBJECTIVE_ENTRIES else value
             for key, value in entry.items()} for entry in entries]
