"""The rounds of inference after a fit: the mean target and offset, the inference round
(:func:`daskglm.compute.inference.inference_sums`, ``Kind.INFERENCE``) and the
intercept-only model with the fit's offset (scalar Newton steps, ``Kind.NULL_MODEL``)."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.inference import inference_sums, null_model_sums, target_moments

__all__ = ["NULL_MODEL_STEPS", "NULL_MODEL_TOL", "inference_statistics",
           "null_model_with_offset", "start_intercept_of", "target_and_offset_sums"]

#: Newton steps of the null model with an offset, at most; it has converged when a step
#: is below this, relative to the intercept (the deviance is stationary there: its error
#: is of the order of the step squared).
NULL_MODEL_STEPS = 50
NULL_MODEL_TOL = 1e-10


def target_and_offset_sums(engine):
    """``(sum w y, sum w offset, sum w)`` of the engine's rows: from the validation
    round's sums, or one ``Kind.TARGET_MEAN`` round when the targets were encoded after
    it (class labels)."""
    sums = getattr(engine, "target_sums", None)
    if sums is not None:  # summed by the validation round
        return sums[0], sums[1], engine.sum_weight
    moments = engine.reduce(target_moments, kind=Kind.TARGET_MEAN)
    return moments.target, moments.offset, moments.weight


def inference_statistics(engine, problem, params, null_mean, weights_kind="frequency"):
    """The :class:`~daskglm.compute.inference.InferenceStats` of ``problem`` at ``params``
    (the solvers' order, the engine's column scale), the null model at the weighted mean
    target ``null_mean``, the weights taken as ``weights_kind``: one ``Kind.INFERENCE``
    round."""
    return engine.reduce(inference_sums, np.asarray(params, dtype=float), problem.family,
                         problem.fit_intercept, null_mean, weights_kind, kind=Kind.INFERENCE)


def null_model_with_offset(engine, family, means):
    """``(intercept, deviance)`` of the intercept-only model with the fit's offset: scalar
    Newton (Fisher scoring) from ``g(mean target) - mean offset`` (``means``), one
    ``Kind.NULL_MODEL`` round per step; the deviance is NaN if it does not converge (the
    intercept is then the last step's)."""
    intercept = start_intercept_of(family, means)
    for _ in range(NULL_MODEL_STEPS):
        score, curvature, deviance = engine.reduce(null_model_sums, intercept, family,
                                                   kind=Kind.NULL_MODEL)
        if not curvature > 0:
            break
        step = score / curvature
        if abs(step) <= NULL_MODEL_TOL * max(1.0, abs(intercept)):
            return intercept, float(deviance)
        intercept -= step
    return intercept, np.nan


def start_intercept_of(family, means):
    """``g(mean target) - mean offset`` for ``means = (mean target, mean offset)``, or
    the family's own start intercept where that is not finite."""
    target, offset = means
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        eta = float(family.link.link(np.array([target]))[0]) - offset
    return eta if np.isfinite(eta) else family.start_intercept()
