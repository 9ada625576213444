"""The round of SGD's early stopping: the score of the current parameters on the
held-out rows (the accuracy for a classifier, R^2 for a regressor, as scikit-learn's
``score``; :mod:`daskglm.compute.sgd_validation`)."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.sgd_validation import score_of_sums, validation_sums

__all__ = ["held_out_score"]


def held_out_score(engine, params, fit_intercept, classification):
    """The score at ``params`` of the rows ``engine`` holds (the held-out rows): the
    weighted accuracy when ``classification``, else the weighted R^2.  One
    ``Kind.VALIDATION_SCORE`` round."""
    sums = engine.reduce(validation_sums, np.asarray(params, dtype=float), bool(fit_intercept),
                         classification, kind=Kind.VALIDATION_SCORE)
    return score_of_sums(sums, classification)
