"""H2O's GLM (``H2OGeneralizedLinearEstimator``) in a local H2O cluster.

H2O runs in its own JVM (``h2o.init(nthreads=N)``, N the cores the Dask cluster has), so a
data set is loaded into it once, before anything is timed, and that load is reported on
its own: the in-memory copy is written to a Parquet file and imported by H2O, the target
made a factor.

Objective: with ``family="binomial"``, ``alpha=0`` and ``standardize=False``, H2O
minimises ``-loglik / n + lambda ||coef||^2 / 2``: ``LogisticL2(C)`` divided by ``C n`` for
``lambda = 1 / (C n)`` (checked against scikit-learn to 1e-9 on 5,000 x 10).  The knob sets
its three stopping tolerances (``objective_epsilon``, ``beta_epsilon``,
``gradient_epsilon``) together; the solver is its default for this size, IRLSM.  Needs
``h2o`` and a Java runtime; without them the method reports why it did not run.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time

import numpy as np

from benchmarks.methods.base import Fit, Method, Unsupported, ladder
from benchmarks.problems import LogisticL2

__all__ = ["H2OGLM"]


def h2o_available():
    """None when h2o and a Java runtime are present, else the reason they are not."""
    if importlib.util.find_spec("h2o") is None:
        return "h2o is not installed (pip install h2o)"
    if shutil.which("java") is None:
        return "no Java runtime on the PATH"
    return None


class _H2OCluster:
    """One local H2O cluster for the whole suite, and the data sets imported into it."""

    def __init__(self, memory="6G"):
        self.memory = memory
        self.started = False
        self.start_s = None
        self.frames = {}
        self._folder = None

    def frame(self, data, target):
        """The H2O frame of ``data`` with ``target`` as a factor column ``y``, and the
        load's seconds."""
        key = (data.spec, target)
        if key in self.frames:
            return self.frames[key]
        reason = h2o_available()
        if reason is not None:
            raise Unsupported(reason)
        if data.spec.sparse:
            raise Unsupported("the H2O loader here writes dense columns only")
        import h2o
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.started:
            start = time.perf_counter()
            h2o.init(nthreads=len(os.sched_getaffinity(0)), max_mem_size=self.memory,
                     verbose=False)
            h2o.no_progress()
            self.start_s = time.perf_counter() - start
            self.started = True
            self._folder = tempfile.mkdtemp(prefix="daskglm-bench-h2o-")
        start = time.perf_counter()
        X = data.X_local
        columns = {f"x{j}": X[:, j] for j in range(X.shape[1])}
        columns["y"] = data.target_local(target)
        path = f"{self._folder}/{abs(hash(key))}.parquet"
        pq.write_table(pa.table(columns), path)
        frame = h2o.import_file(path)
        frame["y"] = frame["y"].asfactor()
        load = {"load_s": time.perf_counter() - start, "session_start_s": self.start_s}
        self.frames[key] = (frame, load)
        return frame, load

    def stop(self):
        if self.started:
            import h2o

            h2o.cluster().shutdown()
            self.started = False
        self.frames.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


#: The cluster the H2O method uses.
CLUSTER = _H2OCluster()


class H2OGLM(Method):
    """``h2o.estimators.H2OGeneralizedLinearEstimator(family="binomial")``."""

    name = "h2o-glm"
    label = "H2O GLM (IRLSM)"
    library = "h2o"
    where = "h2o"

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def tolerances(self, data, problem):
        return ladder(1e-3, 1e-12, per_decade=2)

    def check(self, data, problem):
        reason = h2o_available()
        if reason is not None:
            raise Unsupported(reason)
        if data.spec.sparse:
            raise Unsupported("the H2O loader here writes dense columns only")

    def prepare(self, data, problem):
        _, load = CLUSTER.frame(data, problem.target)
        return dict(load)

    def run(self, data, problem, tol):
        from h2o.estimators import H2OGeneralizedLinearEstimator

        frame, _ = CLUSTER.frame(data, problem.target)
        features = [f"x{j}" for j in range(data.spec.n_features)]
        model = H2OGeneralizedLinearEstimator(
            family="binomial", lambda_=1.0 / (problem.C * data.spec.n_samples), alpha=0.0,
            standardize=False, intercept=problem.fit_intercept, objective_epsilon=tol,
            beta_epsilon=tol, gradient_epsilon=tol, max_iterations=1000,
            compute_p_values=False, remove_collinear_columns=False)
        model.train(x=features, y="y", training_frame=frame)
        coefficients = model.coef()
        summary = model._model_json["output"]["model_summary"]
        return Fit(coef=np.array([coefficients[name] for name in features]),
                   intercept=float(coefficients["Intercept"]) if problem.fit_intercept else 0.0,
                   n_iter=int(summary["number_of_iterations"][0]))

    def close(self):
        CLUSTER.stop()


def methods():
    """H2O's method of the registry."""
    return [H2OGLM()]
