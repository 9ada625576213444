"""Per-tile kernels of column-block model parallelism (``X`` dense or CSR, many rows and
columns).

``X`` is cut into tiles ``X[r, b]``: row partition ``r``, feature block ``b``, where
block ``b`` is the range of column shard ``b`` (:mod:`daskglm.compute.column_shards`) and
its tiles live on that shard's worker.  One evaluation at ``x + alpha d`` is

1. :func:`tile_predictor` on every tile: pull the block's coefficients from its shard
   (a call on the same worker) and return ``X[r, b] @ w_b``;
2. :func:`row_loss` for every row partition, next to its targets: sum the blocks'
   predictors, return the loss sums and keep the residual ``dloss/deta``;
3. :func:`tile_gradient` on every tile: ``X[r, b]^T residual_r``, pushed to the block's
   shard.

Only vectors of the length of a row partition move between workers (predictors up,
residuals down); the coefficients and gradients never leave their block's worker.  The
intercept is the last parameter, held by the last shard: that block's tiles add it to
their predictor and push the residual's sum as its gradient.  A tile of a CSR partition
is CSR (its columns renumbered from 0): the same kernels run on it, as ``@`` does.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .kernels import kernel_matrix, partition_offset

__all__ = ["take_columns", "tile_predictor", "row_loss", "tile_gradient"]


def take_columns(part, start, stop):
    """Columns ``start:stop`` of a row partition's ``X``: a C-contiguous copy, or a CSR
    matrix with sorted indices when ``X`` is sparse."""
    X = kernel_matrix(part[0])
    if sp.issparse(X):
        tile = sp.csr_matrix(X)[:, start:stop]
        tile.sort_indices()
        return tile
    return np.ascontiguousarray(X[:, start:stop])


def tile_predictor(tile, shards, block, row, alpha, holds_intercept):
    """``X[r, b] @ (x + alpha d)_b`` (plus the intercept on the block that holds it)."""
    (coef,) = shards.call_each("pull", [(block, (row, alpha))])
    eta = np.asarray(tile @ coef[: tile.shape[1]]).ravel()
    if holds_intercept:
        eta = eta + coef[-1]
    return eta


def row_loss(part, *predictors, family):
    """``(array([weight, loss]), residual)`` of row partition ``part`` (``(X, y, weight[,
    offset])``) from the blocks' predictors, summed in block order, plus the offset."""
    y, weight, offset = part[1], part[2], partition_offset(part)
    eta = predictors[0].copy()
    for other in predictors[1:]:
        eta += other
    if offset is not None:
        eta += offset
    loss, residual = family.loss_and_dloss(y, eta, weight)
    total = float(y.shape[0]) if weight is None else float(weight.sum())
    return np.array([total, float(loss)]), residual


def tile_gradient(tile, row_output, shards, block, row, round_id, holds_intercept):
    """Push ``X[r, b]^T residual_r`` (and the residual's sum for the intercept) to the
    block's shard; return the number of values pushed."""
    residual = row_output[1]
    grad = np.asarray(tile.T @ residual, dtype=np.float64).ravel()
    if holds_intercept:
        grad = np.append(grad, residual.sum())
    shards.call_each("push", [(block, (row, round_id, grad))])
    return grad.size
