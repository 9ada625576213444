"""Class labels where the partitions live: found with their weighted counts in the
validation round (``validate(family, labels="counts")``), then encoded, and the rows
weighted by class, in one round."""

from __future__ import annotations

import numpy as np

from ..accounting.kinds import Kind
from ..compute.label_counts import encode_and_weigh
from ..compute.multinomial import class_indices
from ..compute.summaries import ColumnMoments, column_moments

__all__ = ["encode_class_indices", "encode_and_weigh_classes"]


def encode_class_indices(engine, classes):
    """One round: replace every partition's labels by their indices in sorted ``classes``.

    The multi-class counterpart of :meth:`Engine.relabel` (recorded as an ``encode``
    round, and replayed like it when a lost partition is rebuilt).

    Parameters
    ----------
    engine : Engine
        A validated engine whose targets are class labels.
    classes : ndarray
        The sorted distinct labels (``engine.labels``).
    """
    engine._transform(class_indices, classes, Kind.ENCODE)


def encode_and_weigh_classes(engine, codes, class_weights=None):
    """One ``encode`` round: every partition's label ``engine.label_counts.labels[k]``
    becomes ``codes[k]`` and, with ``class_weights``, the row's weight is multiplied by
    ``class_weights[k]``.

    The engine's total weight and column moments then follow from the weighted counts of
    the validation round (and its per-class column moments, ``labels="moments"``) without
    reading the data again; only when those moments are missing (more classes than
    :data:`~daskglm.compute.label_counts.MAX_MOMENT_CLASSES`) does one ``class_moments``
    round recompute them.

    Parameters
    ----------
    engine : Engine
        An engine validated with ``labels="counts"`` or ``"moments"``.
    codes : array-like of float
        The code of each label, in the order of ``engine.label_counts.labels``.
    class_weights : array-like of float, optional
        The weight of each label's rows, in the same order.
    """
    counts = engine.label_counts
    if counts is None:
        raise RuntimeError("The engine was not validated with labels='counts'.")
    codes = np.asarray(codes, dtype=np.float64)
    weights = None if class_weights is None else np.asarray(class_weights, dtype=np.float64)
    engine._transform(encode_and_weigh, (counts.labels, codes, weights), Kind.ENCODE)
    if weights is None:
        return
    engine.sum_weight = float(np.sum(weights * counts.weights))
    if not engine.sum_weight > 0:
        raise ValueError("The sample weights sum to zero; at least one must be positive.")
    if engine.column_moments is None:
        return
    if counts.has_moments():
        # the sample keeps the rows' first weights: it preconditions, no more
        engine.column_moments = ColumnMoments(engine.sum_weight, weights @ counts.sums,
                                              weights @ counts.squares,
                                              engine.column_moments.sample)
    else:
        engine.column_moments = engine.reduce(column_moments, engine.sample_rows,
                                              kind=Kind.CLASS_MOMENTS)
