"""Encoding class labels of more than two classes where the partitions live."""

from __future__ import annotations

from ..accounting.kinds import Kind
from ..compute.multinomial import class_indices

__all__ = ["encode_class_indices"]


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
