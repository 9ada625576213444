"""Text classification on a Dask cluster: documents, tokens, hashed sparse features, a model.

A pipeline in the style of Spark ML's ``Tokenizer -> HashingTF -> LogisticRegression``,
every stage running partition by partition on the workers:

1. a Dask DataFrame of short synthetic reviews, each partition generated from its own
   seed (``dask.dataframe.from_map``);
2. tokenise: lower-case words, per partition;
3. hash the tokens into a fixed number of columns with scikit-learn's
   ``HashingVectorizer``: each partition becomes one scipy CSR chunk of a Dask array, no
   vocabulary is shared and nothing dense of the feature width is ever made;
4. fit :class:`daskglm.LogisticRegression` on the sparse chunks (the kernels work on CSR
   directly) and print the accuracy on held-out partitions.

Run it with::

    python examples/text_classification.py
"""

import re
import time

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import scipy.sparse as sp
from distributed import Client, LocalCluster
from sklearn.feature_extraction.text import HashingVectorizer

import daskglm

N_PARTITIONS = 8
DOCUMENTS_PER_PARTITION = 5_000
TEST_PARTITIONS = 2
N_FEATURES = 2**16
SEED = 0

FILLER = [f"word{i}" for i in range(2_000)]
POSITIVE = ["great", "excellent", "loved", "wonderful", "fantastic", "superb", "enjoyable"]
NEGATIVE = ["awful", "boring", "hated", "terrible", "dull", "poor", "disappointing"]


def make_documents(partition):
    """One partition of reviews: filler words, then one to three opinion words, each from the
    label's side with probability 0.8 and from the other side otherwise."""
    rng = np.random.default_rng([SEED, partition])
    n = DOCUMENTS_PER_PARTITION
    labels = rng.integers(0, 2, size=n)
    lengths = rng.integers(8, 20, size=n)
    filler = np.asarray(FILLER)[rng.integers(0, len(FILLER), size=lengths.sum())]
    opinions = rng.integers(1, 4, size=n)
    owner = np.repeat(np.arange(n), opinions)
    positive = (labels[owner] == 1) == (rng.random(owner.size) < 0.8)
    pick = rng.integers(0, len(POSITIVE), size=owner.size)
    opinion_words = np.where(positive, np.asarray(POSITIVE)[pick], np.asarray(NEGATIVE)[pick])
    texts = [
        " ".join(words) + " " + " ".join(opinion).upper() + "."
        for words, opinion in zip(np.split(filler, np.cumsum(lengths)[:-1]),
                                  np.split(opinion_words, np.cumsum(opinions)[:-1]))
    ]
    return pd.DataFrame({"text": texts, "label": labels})


def tokenise(texts):
    """Lower-case word tokens of each text of a partition."""
    return texts.map(lambda text: re.findall(r"\w+", text.lower()))


def hash_features(tokens):
    """A partition's token lists as a CSR matrix of ``N_FEATURES`` hashed columns."""
    vectoriser = HashingVectorizer(
        n_features=N_FEATURES, analyzer=lambda words: words, alternate_sign=False, norm="l2"
    )
    return vectoriser.transform(list(tokens)).tocsr()


def main():
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None,
                     worker_dashboard_address=None) as cluster,
        Client(cluster),
    ):
        start = time.perf_counter()
        documents = dd.from_map(make_documents, range(N_PARTITIONS))
        tokens = documents["text"].map_partitions(tokenise, meta=("text", object))

        # one CSR chunk per partition; the row counts are known, the columns fixed by hashing
        rows = DOCUMENTS_PER_PARTITION
        meta = sp.csr_matrix((0, 0))
        chunks = [
            da.from_delayed(dask.delayed(hash_features)(part), shape=(rows, N_FEATURES),
                            dtype=np.float64, meta=meta)
            for part in tokens.to_delayed()
        ]
        X = da.concatenate(chunks, axis=0)
        y = documents["label"].to_dask_array(lengths=[rows] * N_PARTITIONS)
        X, y = dask.persist(X, y)  # hashed once, kept on the workers

        split = (N_PARTITIONS - TEST_PARTITIONS) * rows
        X_train, y_train, X_test, y_test = X[:split], y[:split], X[split:], y[split:]
        nnz = sum(dask.compute(*[dask.delayed(lambda c: c.nnz)(c) for c in X.to_delayed().ravel()]))
        print(f"documents: {X.shape[0]} in {N_PARTITIONS} partitions "
              f"({X_train.shape[0]} to train, {X_test.shape[0]} held out)")
        print(f"features: {N_FEATURES} hashed columns, {nnz / X.shape[0]:.1f} non-zeros per row")

        model = daskglm.LogisticRegression(C=1.0, solver="lbfgs", tol=1e-5, max_iter=200)
        model.fit(X_train, y_train)
        print(f"fitted with {model.solver_!r} in {model.n_iter_[0]} iterations "
              f"({model.comm_.rounds} rounds, converged: {model.converged_})")
        print(f"held-out accuracy: {model.score(X_test, y_test):.4f}")

        coef = model.coef_.ravel()
        vectoriser = HashingVectorizer(n_features=N_FEATURES, analyzer=lambda w: w,
                                       alternate_sign=False, norm=None)
        for word in ("excellent", "terrible", "word7"):
            column = vectoriser.transform([[word]]).indices[0]
            print(f"weight of {word!r}: {coef[column]:+.2f}")
        print(f"total time: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
