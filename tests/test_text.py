"""A text column hashed per partition in a scikit-learn pipeline (:mod:`daskglm.estimators.text`)."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression as SkLogistic
from sklearn.pipeline import Pipeline

import daskglm


def _texts(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    good, bad, neutral = ["great", "fine", "love"], ["awful", "broken", "hate"], ["the", "a", "it"]
    labels = rng.integers(0, 2, n)
    texts = [" ".join(rng.choice((good if label else bad) + neutral, size=6)) for label in labels]
    return pd.Series(texts, name="text"), labels


def test_a_dask_text_column_fits_in_a_pipeline_as_in_memory_text_does(tmp_path):
    texts, labels = _texts()
    frame = dd.from_pandas(pd.DataFrame({"text": texts, "label": labels}), npartitions=4)
    make = lambda: Pipeline([("hash", daskglm.HashingFeatures(n_features=2**10)),  # noqa: E731
                             ("clf", daskglm.LogisticRegression(C=10.0, tol=1e-10))])
    on_dask = make().fit(frame["text"], frame["label"])
    in_memory = make().fit(texts, labels)
    reference = SkLogistic(C=10.0, tol=1e-12, max_iter=10_000).fit(
        HashingVectorizer(n_features=2**10).transform(texts), labels)
    np.testing.assert_allclose(on_dask[-1].coef_, reference.coef_, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(in_memory[-1].coef_, reference.coef_, rtol=1e-5, atol=1e-7)
    hashed = on_dask[0].transform(frame["text"])
    assert hashed.numblocks[0] == 4 and hashed.shape == (len(texts), 2**10)
    predicted = np.asarray(on_dask.predict(frame["text"]))
    np.testing.assert_array_equal(predicted, reference.predict(
        HashingVectorizer(n_features=2**10).transform(texts)))
    # the fitted classifier saves and loads; the hashing needs no state
    daskglm.save(on_dask[-1], tmp_path / "clf.npz")
    loaded = Pipeline([("hash", daskglm.HashingFeatures(n_features=2**10)),
                       ("clf", daskglm.load(tmp_path / "clf.npz"))])
    np.testing.assert_array_equal(np.asarray(loaded.predict(frame["text"])), predicted)
