"""Text columns as hashed features, partition by partition: a scikit-learn transformer that
takes a Dask Series (or a Dask Bag, or a list) of strings and gives a Dask array of CSR
chunks, so that ``Pipeline([("hash", HashingFeatures()), ("clf", LogisticRegression())])``
fits a text column of any size without code written per partition.

Hashing needs no vocabulary, so the transformer is stateless: every partition is hashed
where it lives with scikit-learn's :class:`~sklearn.feature_extraction.text.HashingVectorizer`
(the same parameters), and the same column hashes the same at fit and at prediction.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

__all__ = ["HashingFeatures"]


class HashingFeatures(BaseEstimator):
    """Hashed token counts of a text column, one CSR chunk per partition.

    Parameters
    ----------
    n_features : int, default=2**20
        Columns of the output (hash buckets).
    ngram_range : tuple of int, default=(1, 1)
    analyzer : {"word", "char", "char_wb"}, default="word"
    lowercase : bool, default=True
    alternate_sign : bool, default=True
        As scikit-learn's: half the tokens count negatively, so that collisions cancel
        in expectation.
    norm : {"l2", "l1"} or None, default="l2"
        Each row's norm.
    binary : bool, default=False
    dtype : type, default=numpy.float64

    Notes
    -----
    ``transform`` of a Dask Series or Bag computes the partitions' lengths first (one pass
    over the text) so that the array's chunks are known, as the estimators need.
    """

    def __init__(self, n_features=2**20, ngram_range=(1, 1), analyzer="word", lowercase=True,
                 alternate_sign=True, norm="l2", binary=False, dtype=np.float64):
        self.n_features = n_features
        self.ngram_range = ngram_range
        self.analyzer = analyzer
        self.lowercase = lowercase
        self.alternate_sign = alternate_sign
        self.norm = norm
        self.binary = binary
        self.dtype = dtype

    def _vectorizer(self):
        from sklearn.feature_extraction.text import HashingVectorizer

        return HashingVectorizer(n_features=self.n_features, ngram_range=self.ngram_range,
                                 analyzer=self.analyzer, lowercase=self.lowercase,
                                 alternate_sign=self.alternate_sign, norm=self.norm,
                                 binary=self.binary, dtype=self.dtype)

    def fit(self, X, y=None):
        """Check the parameters (hashing learns nothing)."""
        self._vectorizer()._validate_params()
        self.n_features_out_ = int(self.n_features)
        return self

    def fit_transform(self, X, y=None):
        """:meth:`fit`, then :meth:`transform` (a pipeline's step)."""
        return self.fit(X, y).transform(X)

    def transform(self, X):
        """The hashed features of ``X``: a CSR matrix for in-memory text, a Dask array of
        CSR chunks (one per partition) for a Dask Series or Bag."""
        vectorizer = self._vectorizer()
        if not hasattr(X, "__dask_graph__"):
            return vectorizer.transform(_strings(X)).tocsr()
        import dask
        import dask.array as da

        parts = X.to_delayed()
        lengths = dask.compute(*(dask.delayed(_length)(part) for part in parts))
        hashed = dask.delayed(_hash_partition, pure=True)
        meta = sp.csr_matrix((0, self.n_features), dtype=self.dtype)
        blocks = [da.from_delayed(hashed(part, vectorizer), shape=(rows, self.n_features),
                                  dtype=self.dtype, meta=meta)
                  for part, rows in zip(parts, lengths) if rows]
        if not blocks:
            return da.from_array(meta, chunks=(0, self.n_features))
        return da.concatenate(blocks, axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        tags.requires_fit = False
        return tags


def _strings(part):
    """A partition's texts as a list of str (a pandas Series, a list, a 1-D array)."""
    values = part.tolist() if hasattr(part, "tolist") else list(part)
    return ["" if v is None else str(v) for v in values]


def _length(part):
    return len(part)


def _hash_partition(part, vectorizer):
    return vectorizer.transform(_strings(part)).tocsr()
