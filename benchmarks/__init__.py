"""Benchmarks of daskglm against its peers.

Run a suite with ``python -m benchmarks run --suite quick`` (see ``python -m benchmarks
--help``).  A run starts a ``distributed.LocalCluster``, generates the data sets of the
suite with a fixed seed, persists them on the workers, and times every method of every
case; the results are written as JSON and printed as a markdown table.

The package is organised around a few registries, so that a new problem, method or
peer library is one class and one line:

* :mod:`benchmarks.data` -- synthetic data sets (``DataSpec`` -> persisted ``Data``);
* :mod:`benchmarks.problems` -- optimisation problems: one shared numpy objective and a
  tight reference solution each;
* :mod:`benchmarks.methods` -- the ``METHODS`` registry: how each library fits a problem
  (or runs a plain numpy kernel);
* :mod:`benchmarks.cases` -- the ``SUITES`` registry: cases (data x problem x methods)
  and the ratios reported between them;
* :mod:`benchmarks.suite` -- what a suite is made of: ``Case``, ``Ratio``, ``Scaling``,
  ``Suite`` and the entries of a case (``parse_entry``, ``entry_id``);
* :mod:`benchmarks.tuning` -- per-method calibration to a target objective gap;
* :mod:`benchmarks.timing` -- repeated wall-clock measurement;
* :mod:`benchmarks.meters` -- graphs, bytes and peak memory of one fit, from Dask's
  counters and the kernel's high-water mark;
* :mod:`benchmarks.limits` -- the machine's memory bandwidth and BLAS rate;
* :mod:`benchmarks.scaling` -- strong scaling over worker counts and the cost model's
  projection to more workers;
* :mod:`benchmarks.runner` -- runs a suite and assembles its results;
* :mod:`benchmarks.report` -- JSON output, markdown tables and the documentation page;
* :mod:`benchmarks.environment` -- library versions and machine description;
* :mod:`benchmarks.cluster` -- the local Dask cluster a suite runs on;
* :mod:`benchmarks.rounds` -- where the time of one daskglm round goes.
"""
