"""Consensus ADMM: local solves on the workers, consensus and duals on the driver."""

from __future__ import annotations

import math

import numpy as np

from ..accounting.kinds import Kind
from ..compute.coordinates import Standardised
from ..compute.local_solves import proximal_point
from ..model.problem import Feature
from .base import History, Objective, Solver, SolverResult, StallMonitor

__all__ = ["ADMM", "RHO_FACTOR", "RHO_FACTOR_L1"]

#: ``rho="auto"`` is this fraction of the loss's curvature at the starting point, for
#: smooth penalties (none, L2).  A small ``rho`` makes the first iteration close to one-shot
#: averaging, which is where most of the way to the optimum is made on row partitions of
#: the same distribution; residual balancing then raises it.  In 8 partitions, to relative
#: objective gaps of 1e-4 / 1e-6 / 1e-8, it took 1 / 2 / 3 iterations on 1,000,000 x 50
#: L2-logistic (0.05: 2 / 3 / 6), and 2 / 2 / 14 and 2 / 2 / 13 on 200,000 x 50 logistic
#: and Poisson problems with intercepts (0.05: 2 / 4 / 13 and 2 / 3 / 14).
RHO_FACTOR = 0.02

#: ``rho="auto"`` for penalties with an L1 part, where the consensus step also selects the
#: non-zero coefficients.  On 200,000 x 50 L1-logistic it took 7 / 14 / 20 iterations to
#: the gaps above against 8 / 17 / 27 at 0.02; on the lasso the two were within one
#: iteration of each other (11 / 16 / 20 and 11 / 15 / 19).
RHO_FACTOR_L1 = 0.05

#: Iterations without a new best objective, optimality or residual before a stall is
#: declared (residual balancing makes the residuals move in bursts).
_PATIENCE = 20


class ADMM(Solver):
    """Consensus ADMM (Boyd et al., 2011, section 7.1) with residual balancing.

    The objective is written as ``sum_i f_i(x_i) + g(z)`` subject to ``x_i = z``, with
    ``f_i`` partition ``i``'s share of the mean loss and ``g`` the penalty (the intercept
    is never penalised).  One iteration is one engine round:

    * every partition minimises ``f_i(x) + rho / 2 * |x - z + u_i|^2`` with L-BFGS-B on its
      own rows, warm-started from its previous ``x_i``;
    * the driver sets ``z`` to the proximal operator of ``g`` (step ``1 / (N rho)``) at
      the mean of ``x_i + u_i``, and ``u_i += x_i - z``.

    The iterations run in standardised coordinates (the local solves included), from the
    column moments of ``X`` that the validation round returns.  The partitions' ``x_i`` and
    ``u_i`` live on the driver and travel with each round (two vectors per partition,
    through :meth:`~daskglm.engine.Engine.map_each`).  ``rho`` is rebalanced when the
    primal residual ``|x - z|`` and the dual residual ``rho |z - z_old|`` drift more than
    ``mu`` apart.  Stops when the consensus point ``z`` meets the optimality test of
    every solver (:meth:`~daskglm.solvers.base.Objective.optimality` ``<= tol``) on the
    exact loss and gradient that the round's local solves computed at ``z``: small
    residuals alone do not say that ``z`` is optimal (they fell below Boyd et al.'s
    stacked criteria 1.5% above the optimum of a logistic regression with 1% positives).
    Stops early, with ``converged`` False and a message starting with "stalled", when for
    20 iterations in a row none of the objective and the optimality violation at the
    consensus point and the two residuals improved beyond round-off (the local solves'
    accuracy then limits the consensus).  Every family; no, L2, L1 or elastic-net penalty;
    non-negative coefficients (``positive=True``) through the consensus step's prox.

    Each history entry also reports the objective and the optimality violation at the
    consensus point the iteration started from, computed in the same round.

    Options
    -------
    rho : float or "auto", default "auto"
        Initial augmented-Lagrangian parameter on the mean-loss scale: each partition's
        term is ``rho / (2 N) * |x_i - z + u_i|^2`` for ``N`` partitions.  ``"auto"``
        takes ``RHO_FACTOR`` (``RHO_FACTOR_L1`` for L1 and elastic-net penalties) times
        the family's curvature (its variance function) at the starting point's mean,
        which in standardised coordinates is the scale of the loss's Hessian.  A ``rho``
        well below that curvature makes the consensus move in large steps (its first
        iteration is close to one-shot averaging) and suits row partitions drawn from the
        same distribution, the usual case; residual balancing raises it where the
        partitions disagree.
    adaptive_rho : bool, default True
        Residual balancing.
    mu : float, default 10.0
        Residual ratio that triggers a change of ``rho``.
    tau : float, default 2.0
        Factor by which ``rho`` changes.
    standardize : bool, default True
        Run in standardised coordinates (:mod:`daskglm.compute.coordinates`: as if ``X`` were
        centred and scaled to unit variance), which removes the ill-conditioning column
        offsets and unequal scales cause (no extra round).
    local_max_iter : int, default 500
        Most L-BFGS-B iterations of each local solve.
    """

    name = "admm"
    options = {"rho": "auto", "adaptive_rho": True, "mu": 10.0, "tau": 2.0, "standardize": True,
               "local_max_iter": 500}
    handles = frozenset({Feature.NON_QUADRATIC_LOSS, Feature.NON_QUADRATIC_PENALTY,
                         Feature.NONSMOOTH_PENALTY, Feature.NONNEGATIVE})

    def __init__(self, tol=1e-4, max_iter=100, **options):
        super().__init__(tol=tol, max_iter=max_iter, **options)
        rho = self.opts["rho"]
        if not (isinstance(rho, str) and rho == "auto"):
            if isinstance(rho, str):
                raise ValueError(
                    f"Option 'rho' of solver 'admm' must be 'auto' or a number > 0; got {rho!r}."
                )
            self._check_option("rho", 0, strict=True)
        self._check_option("mu", 1, strict=True)
        self._check_option("tau", 1, strict=True)
        self._check_option("local_max_iter", 1, integer=True)

    def solve(self, problem, engine, params0):
        objective = Objective(problem, engine)
        history = History(engine)
        penalty = problem.penalty
        n_parts, n_params = engine.n_partitions, problem.n_params
        scale = 1.0 / engine.sum_weight
        rho = self._initial_rho(problem, params0) / n_parts
        mu, tau = float(self.opts["mu"]), float(self.opts["tau"])
        local_max_iter = int(self.opts["local_max_iter"])

        coordinates = Standardised()
        if self.opts["standardize"]:
            coordinates = Standardised.from_moments(*objective.column_moments(),
                                                    problem.fit_intercept)
        z = coordinates.to_theta(np.asarray(params0, dtype=float))
        xs = [z.copy() for _ in range(n_parts)]
        us = [np.zeros(n_params) for _ in range(n_parts)]
        converged = False
        monitor = StallMonitor(patience=_PATIENCE)
        message = "maximum number of iterations reached"
        n_iter = 0
        while not converged and n_iter < self.max_iter:
            n_iter += 1
            # local solves tight enough that their error stays well below the stopping test
            local_tol = 0.1 * self.tol * rho
            fits = engine.map_each(
                proximal_point, list(zip(xs, us)), z, rho, problem.family, problem.fit_intercept,
                scale, local_tol, local_max_iter, coordinates, kind=Kind.LOCAL_SOLVE,
            )
            self._record(history, objective, coordinates.to_params(z), fits, rho)
            xs = [fit.params for fit in fits]
            z_old = z
            mean = np.mean([x + u for x, u in zip(xs, us)], axis=0)
            z = coordinates.prox(penalty, mean, 1.0 / (n_parts * rho))
            us = [u + x - z for x, u in zip(xs, us)]

            primal = math.sqrt(sum(float((x - z) @ (x - z)) for x in xs))
            dual = rho * math.sqrt(n_parts) * float(np.linalg.norm(z - z_old))
            history.entries[-1].update(primal_residual=primal, dual_residual=dual)
            entry = history.entries[-1]
            if entry["grad_norm"] <= self.tol:
                converged, z = True, z_old  # the exact criterion at z_old, from this round
                break
            stall = monitor.check(z, None, entry["objective"], entry["grad_norm"], primal, dual)
            if stall:
                message = stall.replace("the objective nor the optimality violation",
                                        "the objective, the optimality violation nor the "
                                        "residuals")
                break
            if self.opts["adaptive_rho"]:
                if primal > mu * dual:
                    rho *= tau
                    us = [u / tau for u in us]
                elif dual > mu * primal:
                    rho /= tau
                    us = [u * tau for u in us]
        message = "converged" if converged else message
        return SolverResult(coordinates.to_params(z), n_iter, converged, history.entries, message)

    def _initial_rho(self, problem, params0):
        """The ``rho`` option, or for ``"auto"`` a fraction of the curvature at the start."""
        if not isinstance(self.opts["rho"], str):
            return float(self.opts["rho"])
        curvature = problem.curvature_at(np.asarray(params0, dtype=float))
        return (RHO_FACTOR if problem.penalty.smooth else RHO_FACTOR_L1) * curvature

    @staticmethod
    def _record(history, objective, z, fits, rho):
        """History entry with the objective and optimality at ``z``, from the round's sums."""
        problem = objective.problem
        coef = problem.coef(z)
        total = objective.total_weight
        loss = sum(fit.loss for fit in fits) / total
        grad = sum(fit.grad for fit in fits) / total
        grad[: problem.n_features] += problem.penalty.grad(coef)
        if Feature.NONNEGATIVE in problem.features():
            # at a bound, a gradient pushing further out is no violation
            n = problem.n_features
            grad[:n] = np.where((coef <= 0) & (grad[:n] > 0), 0.0, grad[:n])
        value = loss + problem.penalty.value(coef)
        history.record(value, objective.optimality(z, grad), rho,
                       local_iterations=max(fit.n_iter for fit in fits))
