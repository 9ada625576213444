"""Bytes per evaluation of the data layouts for many features: whole vector, column shards
over row partitions, column blocks (re-exported by :mod:`daskglm.accounting.costmodel`).

Pure arithmetic on the shape of the problem and the cluster; see
``docs/tutorials/big_d.md`` for the numbers at the sizes of hashed text features.
"""

from __future__ import annotations

import math

__all__ = ["layout_bytes"]


def layout_bytes(n_samples, n_features, *, partitions, blocks, nonzeros_per_row=None,
                 groups=None, workers=None):
    """Bytes one evaluation of the objective moves under three layouts of the data.

    * ``"whole_vector"`` -- row partitions, the coefficient vector sent to every task
      and a gradient of length ``d`` returned from each (``lbfgs``; a task runs the
      partitions of one worker thread): ``16 d G``, all of it through the driver's
      links;
    * ``"sharded_rows"`` -- row partitions with column shards (``lbfgs`` with
      ``sharded``): each worker pulls and pushes 8 bytes per column its partitions
      touch (the union of theirs), ``16 sum_w t_w``, with ``t_w = d`` for dense rows
      and, for ``z`` non-zeros per row at uniformly hashed columns,
      ``t_w = d (1 - exp(-z n_w / d))`` for the ``n_w = n / W`` rows of a worker; with
      ``W`` workers the share ``1 / W`` with the shard on the worker itself never leaves
      it (without ``workers``, each partition is counted as a worker of its own);
    * ``"column_blocks"`` -- ``B`` feature blocks of ``X``, dense or CSR
      (``column_blocks``): one predictor up and one residual down per tile, ``16 n B``,
      less the ``1 / W`` whose row partition lives with the block.

    Column blocks move less than sharded row partitions exactly when
    ``n B < sum_w t_w``; for dense ``X``, when ``n / W < d / B``: a worker has fewer
    rows than a block has columns; for hashed rows, when the workers' unions, summed,
    hold more than ``n B`` columns (at 2^24 features, 1e6 rows of 50 non-zeros on 2
    workers: 16 MB against 208 MB per evaluation; about even at 2^20).  Sharded rows
    move less than the whole vector when ``sum_w t_w (1 - 1 / W) < d G``: when workers touch few of the columns (at ``z n_w``
    comparable to ``d`` nearly all are touched, and the win is only that no vector
    passes through the driver).  The arithmetic per evaluation is the same in
    all three (two passes over the stored entries of ``X``); the vectors of L-BFGS take
    ``8 (2 m + 4) d`` bytes on the driver for the whole vector, ``1 / W`` of that per
    worker with shards.  Commands of the coordinator (a few scalars per shard) and
    Dask's per-task traffic are left out.

    Parameters
    ----------
    n_samples, n_features : int
    partitions : int
        Row partitions ``P``.
    blocks : int
        Feature blocks ``B`` (the column shards, one per worker by default).
    nonzeros_per_row : float, optional
        ``z`` for sparse rows; None for dense ``X``.
    groups : int, optional
        Tasks ``G`` of a row-partitioned round (worker threads); ``partitions`` by default.
    workers : int, optional
        ``W``; without it every byte is counted as crossing the network.

    Returns
    -------
    dict
        Bytes per evaluation by layout and ``"best"``, the layout moving the fewest.
    """
    n, d, P, B = int(n_samples), int(n_features), int(partitions), int(blocks)
    G = P if groups is None else int(groups)
    remote = 1.0 if workers is None else 1.0 - 1.0 / int(workers)
    holders = P if workers is None else int(workers)  # who pulls and pushes
    if nonzeros_per_row is None:
        touched = float(d)
    else:
        touched = d * -math.expm1(-float(nonzeros_per_row) * n / holders / d)
    sizes = {
        "whole_vector": 16.0 * d * G,
        "sharded_rows": 16.0 * touched * holders * remote,
        "column_blocks": 16.0 * n * B * remote,
    }
    sizes["best"] = min(sizes, key=sizes.get)
    return sizes
