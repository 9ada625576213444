"""Compute once, solve many: cross-validated ridge and the multinomial model, in rounds and seconds.

Two comparisons on one ``distributed.LocalCluster`` (data persisted on the workers before
anything is timed):

1. ``RidgeCV`` (every fold's Gram statistics in one round, every alpha and fold solved on
   the driver) against scikit-learn's ``GridSearchCV`` over ``daskglm.Ridge`` on the same
   folds (one fit per fold and alpha, each reading its training rows); ``LassoCV``'s paths
   solved the same way (``solver="auto"``) against fitting them through the engine
   (``solver="proximal"``: every iteration of every fold's fit a round).
2. ``GLMCV`` (a Poisson lasso path with proximal Newton) and ``LogisticRegressionCV``
   (L-BFGS) with their folds' fits side by side and their rounds shared
   (:class:`daskglm.engine.folds.SharedRounds`), against the same fits one fold after
   another (``daskglm.shared-fold-rounds`` set to False).
3. The multinomial ``LogisticRegression`` (all classes' gradients from one read of ``X``
   per evaluation) against ``OneVsRestClassifier(LogisticRegression)`` (one binary fit
   per class).

Each line gives seconds, rounds of the engine and the reads of ``X`` they make.

``python -m benchmarks cv [--rows 200000] [--features 20] [--folds 3] [--alphas 5]
[--classes 4]``; the defaults take about a minute on two idle cores.  The larger run of
the documentation: ``python -m benchmarks cv --rows 2000000 --features 50 --folds 5
--alphas 20 --classes 5``.
"""

from __future__ import annotations

import time
import warnings

__all__ = ["main"]


def _rounds(models):
    return sum(len(model.comm_.records) for model in models)


def _ridge(client, X, y, folds, n_alphas):
    import numpy as np
    from sklearn.model_selection import GridSearchCV, KFold

    import daskglm

    alphas = np.logspace(-2, 3, n_alphas)
    start = time.perf_counter()
    one_pass = daskglm.RidgeCV(alphas=alphas, cv=KFold(folds)).fit(X, y)
    one_pass_seconds = time.perf_counter() - start
    start = time.perf_counter()
    search = GridSearchCV(daskglm.Ridge(solver="normal"), {"alpha": list(alphas)},
                          cv=KFold(folds), refit=True).fit(X, y)
    search_seconds = time.perf_counter() - start
    fits = folds * n_alphas + 1
    print(f"| RidgeCV, one fold_gram round | {one_pass_seconds:.2f} | "
          f"{len(one_pass.comm_.records)} | 2 | alpha_={one_pass.alpha_:.4g} |")
    print(f"| GridSearchCV(Ridge), {fits} fits | {search_seconds:.2f} | "
          f"{2 * fits} (validate + gram per fit) | {2 * fits} (of training rows) "
          f"| alpha={search.best_params_['alpha']:.4g} |")


def _lasso(client, X, y, folds, n_alphas):
    from sklearn.model_selection import KFold

    import daskglm

    rows = []
    for label, solver in (("LassoCV, paths from one fold_gram round", "auto"),
                          ("LassoCV(solver='proximal'), a round per iteration", "proximal")):
        start = time.perf_counter()
        model = daskglm.LassoCV(alphas=n_alphas, cv=KFold(folds), solver=solver).fit(X, y)
        seconds = time.perf_counter() - start
        rounds = len(model.comm_.records)
        rows.append(f"| {label} | {seconds:.2f} | {rounds} | {rounds} | "
                    f"alpha_={model.alpha_:.4g} |")
    print("\n".join(rows))


def _glm_paths(client, X, y, labels, folds, n_alphas):
    """GLMCV (a Poisson lasso path, proximal Newton) and LogisticRegressionCV (L-BFGS),
    each with its folds' fits side by side, their rounds shared, and one after another."""
    import dask
    import dask.array as da
    from sklearn.model_selection import KFold

    import daskglm

    counts = da.random.default_rng(1).poisson(da.exp(0.3 * X[:, 0] - 0.2 * X[:, 1]))
    counts = client.persist(counts.astype(float))
    binary = client.persist((labels == 0).astype(float))
    fits = (("GLMCV(family='poisson', l1_ratio=1, solver='newton')", counts,
             lambda: daskglm.GLMCV(family="poisson", l1_ratio=1.0, alphas=n_alphas,
                                   cv=KFold(folds), solver="newton")),
            ("LogisticRegressionCV(solver='lbfgs')", binary,
             lambda: daskglm.LogisticRegressionCV(Cs=n_alphas, cv=KFold(folds),
                                                  solver="lbfgs")))
    for label, target, make in fits:
        for shared in (True, False):
            with dask.config.set({"daskglm.shared-fold-rounds": shared}):
                start = time.perf_counter()
                model = make().fit(X, target)
                seconds = time.perf_counter() - start
            rounds = len(model.comm_.records)
            how = "folds side by side, rounds shared" if shared else "folds one after another"
            chosen = getattr(model, "alpha_", None)
            chosen = f"alpha_={chosen:.4g}" if chosen is not None else f"C_={model.C_[0]:.4g}"
            print(f"| {label}, {how} | {seconds:.2f} | {rounds} | {rounds} | {chosen} |",
                  flush=True)


def _multinomial(client, X, labels):
    from sklearn.multiclass import OneVsRestClassifier

    import daskglm

    start = time.perf_counter()
    softmax = daskglm.LogisticRegression(solver="lbfgs", tol=1e-6, max_iter=500).fit(X, labels)
    softmax_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ovr = OneVsRestClassifier(daskglm.LogisticRegression(solver="lbfgs", tol=1e-6,
                                                         max_iter=500)).fit(X, labels)
    ovr_seconds = time.perf_counter() - start
    softmax_rounds = len(softmax.comm_.records)
    ovr_rounds = _rounds(ovr.estimators_)
    print(f"| multinomial LogisticRegression | {softmax_seconds:.2f} | {softmax_rounds} | "
          f"{softmax_rounds} | {len(softmax.classes_)} classes in one problem |")
    print(f"| OneVsRest(LogisticRegression) | {ovr_seconds:.2f} | {ovr_rounds} | "
          f"{ovr_rounds} | {len(ovr.estimators_)} binary fits (another model) |")


def main(args):
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        rng = da.random.default_rng(0)
        chunk = -(-args.rows // 8)
        X = rng.standard_normal((args.rows, args.features), chunks=(chunk, args.features))
        coef = rng.standard_normal(args.features, chunks=args.features)
        y = X @ coef + 3.0 * rng.standard_normal(args.rows, chunks=chunk)
        scores = X[:, : args.classes] + rng.standard_normal((args.rows, args.classes),
                                                            chunks=(chunk, args.classes))
        labels = scores.argmax(axis=1)
        X, y, labels = client.persist([X, y, labels])
        wait([X, y, labels])
        print(f"{args.rows} x {args.features} in 8 partitions, 2 workers of one thread; "
              f"{args.folds} folds, {args.alphas} alphas, {args.classes} classes; "
              f"{time.strftime('%Y-%m-%d')}\n")
        print("| method | seconds | rounds | reads of X | result |")
        print("|---|---|---|---|---|")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _ridge(client, X, y, args.folds, args.alphas)
            _lasso(client, X, y, args.folds, args.alphas)
            _glm_paths(client, X, y, labels, args.folds, args.alphas)
            _multinomial(client, X, labels)
    return 0
