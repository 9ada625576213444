"""scikit-learn's solver names on daskglm's :class:`~daskglm.Ridge` and
:class:`~daskglm.LogisticRegression`.

scikit-learn's solvers of one estimator minimise the same objective, so each of its names is
taken as the daskglm solver that minimises it too: Ridge's direct and iterative least-squares
solvers (``"svd"``, ``"cholesky"``, ``"lsqr"``, ``"sparse_cg"``, ``"sag"``, ``"saga"``) as
the normal equations, logistic regression's Newton solvers (``"newton-cg"``,
``"newton-cholesky"``) as ``"newton"`` and its stochastic ones (``"sag"``, ``"saga"``) as
``"lbfgs"``, or proximal gradient with an L1 term.  scikit-learn's own restrictions come
with them: Ridge's ``positive=True`` takes ``"auto"`` and ``"lbfgs"`` only.
``"liblinear"`` is refused: it penalises the intercept, a different objective.
"""

from __future__ import annotations

__all__ = ["RIDGE_SOLVERS", "LOGISTIC_SOLVERS", "sklearn_solver"]

#: scikit-learn's Ridge solver names -> daskglm's.
RIDGE_SOLVERS = {name: "normal" for name in ("svd", "cholesky", "lsqr", "sparse_cg", "sag",
                                             "saga")}

#: scikit-learn's LogisticRegression solver names -> daskglm's (for a smooth penalty).
LOGISTIC_SOLVERS = {"newton-cg": "newton", "newton-cholesky": "newton", "sag": "lbfgs",
                    "saga": "lbfgs"}


def sklearn_solver(estimator):
    """``{"solver": name}``: daskglm's solver for ``estimator``'s scikit-learn solver name,
    empty when ``solver`` is not one of scikit-learn's names for it.

    Raises
    ------
    ValueError
        For Ridge's ``positive=True`` with a solver other than ``"auto"`` or ``"lbfgs"``, and
        for logistic regression's ``"liblinear"``, as scikit-learn does for the first.
    """
    names = getattr(type(estimator), "_sklearn_solvers", None)
    solver = getattr(estimator, "solver", None)
    if names is None or not isinstance(solver, str):
        return {}
    if names is LOGISTIC_SOLVERS and solver == "liblinear":
        raise ValueError("solver='liblinear' penalises the intercept, a different objective "
                         "from daskglm's; use solver='auto', 'lbfgs' or 'newton' (with "
                         "penalty='l1': 'proximal').")
    if solver not in names:
        return {}
    if names is RIDGE_SOLVERS and getattr(estimator, "positive", False):
        raise ValueError(f"solver={solver!r} does not support positive fitting. Please set "
                         "the solver to 'auto' or 'lbfgs'.")
    if names is LOGISTIC_SOLVERS and solver in ("sag", "saga") and _has_l1_term(estimator):
        return {"solver": "proximal"}
    return {"solver": names[solver]}


def _has_l1_term(estimator):
    """Whether logistic regression's penalty (or a CV's mixings ``l1_ratios``) has an L1 term."""
    if hasattr(estimator, "l1_ratios"):
        return any(ratio not in (None, 0) for ratio in (estimator.l1_ratios or []))
    return estimator._penalty_name() in ("l1", "elasticnet")
