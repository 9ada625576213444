"""Spark MLlib's ``LogisticRegression`` and ``LinearRegression`` in a local Spark session.

Spark runs in its own JVM (``local[N]``, N the cores the Dask cluster has), so the data
set is loaded into it once per data set, before anything is timed, and that load is
reported on its own: the in-memory copy is written to a Parquet file (one float64
column per feature), read by Spark, assembled into a vector column, cached and counted.
The fits then run on the cached DataFrame.

Objectives: ``LogisticRegression(regParam=1 / (C n), elasticNetParam=0,
standardization=False)`` minimises ``mean log-loss + regParam ||coef||^2 / 2``, which is
``LogisticL2(C)``'s objective divided by ``C n``; its ``tol`` bounds the relative change
of that objective between iterations.  ``LinearRegression(solver="normal", regParam=0)``
solves ordinary least squares by the normal equations.

Needs ``pyspark`` and a Java runtime; without them the methods report why they did not
run.  Dense data only.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
import time

import numpy as np

from benchmarks.methods.base import Fit, Method, Unsupported, ladder
from benchmarks.problems import LeastSquares, LogisticL2

__all__ = ["SparkSessionHolder", "SparkLogisticRegression", "SparkLinearRegression",
           "spark_available"]


def spark_available():
    """``None`` when pyspark and a Java runtime are present, else the reason they are not."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install pyspark)"
    if shutil.which("java") is None:
        return "no Java runtime on the PATH"
    return None


def java_version():
    """The first line of ``java -version``, or None."""
    java = shutil.which("java")
    if java is None:
        return None
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[0] if lines else None


class SparkSessionHolder:
    """One local Spark session for the whole suite, and the data sets loaded into it.

    Parameters
    ----------
    cores : int
        ``local[cores]``.
    driver_memory : str
        The JVM's heap (Spark's ``spark.driver.memory``).
    """

    def __init__(self, cores=2, driver_memory="6g"):
        self.cores = cores
        self.driver_memory = driver_memory
        self.session = None
        self.start_s = None
        self.frames = {}
        self._folder = None

    def get(self):
        """The session, started on first use (its start-up time is kept in ``start_s``)."""
        if self.session is None:
            reason = spark_available()
            if reason is not None:
                raise Unsupported(reason)
            from pyspark.sql import SparkSession

            start = time.perf_counter()
            self.session = (
                SparkSession.builder.master(f"local[{self.cores}]")
                .appName("daskglm-benchmarks")
                .config("spark.driver.memory", self.driver_memory)
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", str(self.cores))
                .getOrCreate()
            )
            self.session.sparkContext.setLogLevel("ERROR")
            self.start_s = time.perf_counter() - start
            self._folder = tempfile.mkdtemp(prefix="daskglm-bench-spark-")
        return self.session

    def frame(self, data):
        """The cached DataFrame of ``data`` (features, and one column per target).

        Returns
        -------
        frame : pyspark.sql.DataFrame
        load : dict
            ``load_s`` (Parquet write, read, assembly, cache and count) and the session's
            ``session_start_s``.
        """
        if data.spec in self.frames:
            return self.frames[data.spec]
        if data.spec.sparse:
            raise Unsupported("the Spark loader here writes dense columns only")
        import pyarrow as pa
        import pyarrow.parquet as pq
        from pyspark.ml.feature import VectorAssembler

        spark = self.get()
        start = time.perf_counter()
        X = data.X_local
        columns = {f"x{j}": X[:, j] for j in range(X.shape[1])}
        columns.update({f"y_{kind}": values for kind, values in data.targets_local.items()})
        path = f"{self._folder}/{abs(hash(data.spec))}.parquet"
        pq.write_table(pa.table(columns), path)
        raw = spark.read.parquet(path).repartition(data.spec.n_partitions)
        features = [f"x{j}" for j in range(X.shape[1])]
        assembled = VectorAssembler(inputCols=features, outputCol="features").transform(raw)
        frame = assembled.select("features", *[f"y_{k}" for k in data.targets_local]).cache()
        frame.count()
        load = {"load_s": time.perf_counter() - start, "session_start_s": self.start_s}
        self.frames[data.spec] = (frame, load)
        return frame, load

    def stop(self):
        """Unpersist the frames, stop the session and delete the Parquet files."""
        for frame, _ in self.frames.values():
            frame.unpersist()
        self.frames.clear()
        if self.session is not None:
            self.session.stop()
            self.session = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


#: The session the Spark methods share.
SESSION = SparkSessionHolder()


class _SparkMethod(Method):
    library = "pyspark"
    where = "spark"

    def check(self, data, problem):
        reason = spark_available()
        if reason is not None:
            raise Unsupported(reason)
        if data.spec.sparse:
            raise Unsupported("the Spark loader here writes dense columns only")

    def prepare(self, data, problem):
        _, load = SESSION.frame(data)
        return dict(load)

    def close(self):
        SESSION.stop()


class SparkLogisticRegression(_SparkMethod):
    """``pyspark.ml.classification.LogisticRegression`` (L-BFGS); the ladder is its ``tol``."""

    name = "spark-logistic"
    label = "Spark MLlib LogisticRegression"

    def supports(self, problem):
        return isinstance(problem, LogisticL2)

    def tolerances(self, data, problem):
        return ladder(1e-4, 1e-12, per_decade=2)

    def run(self, data, problem, tol):
        from pyspark.ml.classification import LogisticRegression

        frame, _ = SESSION.frame(data)
        model = LogisticRegression(
            featuresCol="features", labelCol=f"y_{problem.target}", maxIter=10_000, tol=tol,
            regParam=1.0 / (problem.C * data.spec.n_samples), elasticNetParam=0.0,
            standardization=False, fitIntercept=problem.fit_intercept,
        ).fit(frame)
        intercept = float(model.intercept) if problem.fit_intercept else 0.0
        return Fit(coef=np.asarray(model.coefficients.toArray(), dtype=np.float64),
                   intercept=intercept, n_iter=int(model.summary.totalIterations))


class SparkLinearRegression(_SparkMethod):
    """``pyspark.ml.regression.LinearRegression(solver="normal")``: the normal equations."""

    name = "spark-linear"
    label = "Spark MLlib LinearRegression(solver='normal')"

    def supports(self, problem):
        return isinstance(problem, LeastSquares) and not problem.alpha

    def run(self, data, problem, tol):
        from pyspark.ml.regression import LinearRegression

        frame, _ = SESSION.frame(data)
        model = LinearRegression(
            featuresCol="features", labelCol=f"y_{problem.target}", solver="normal",
            regParam=0.0, standardization=False, fitIntercept=problem.fit_intercept,
        ).fit(frame)
        intercept = float(model.intercept) if problem.fit_intercept else 0.0
        return Fit(coef=np.asarray(model.coefficients.toArray(), dtype=np.float64),
                   intercept=intercept)


def methods():
    """The Spark methods of the registry (registered whether or not Spark is present)."""
    return [SparkLogisticRegression(), SparkLinearRegression()]
