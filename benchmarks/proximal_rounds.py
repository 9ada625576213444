"""Rounds of proximal gradient and proximal Newton on L1 GLMs: where the cost model's
``PROXIMAL_ROUNDS_PER_DECADE`` comes from.

L1-penalised logistic and Poisson regressions on 1e5 rows of correlated columns (20, 100
and 400 of them, a tenth of them in the model), two penalties and two tolerances, fitted
in this process with ``solver="proximal"`` and ``solver="newton"``.  Each line gives the
rounds and seconds of both, and proximal gradient's rounds per decade of ``tol``; the
last line their median, against the constant in :mod:`daskglm.accounting.choice`.

``python -m benchmarks proximal-rounds [--rows 100000]`` (about 2 minutes on two cores).
"""

from __future__ import annotations

import math
import statistics
import time
import warnings

__all__ = ["main", "add_parser"]


def _data(family, rows, features, rng):
    import numpy as np

    mixing = rng.standard_normal((features, features)) * 0.3 / np.sqrt(features)
    X = rng.standard_normal((rows, features)) @ (mixing + np.eye(features))
    active = max(3, features // 10)
    coef = np.zeros(features)
    coef[:active] = rng.standard_normal(active) * 0.5
    eta = X @ coef
    if family == "binomial":
        y = (rng.random(rows) < 1 / (1 + np.exp(-eta))).astype(float)
    else:
        y = rng.poisson(np.exp(0.3 * eta)).astype(float)
    return X, y


def main(args):
    import numpy as np

    import daskglm
    from daskglm.accounting.choice import PROXIMAL_ROUNDS_PER_DECADE

    rng = np.random.default_rng(0)
    per_decade = []
    print("| family | features | alpha | tol | proximal rounds | s | newton rounds | s "
          "| proximal rounds per decade |")
    print("|---|---|---|---|---|---|---|---|---|")
    for family in ("binomial", "poisson"):
        for features in (20, 100, 400):
            X, y = _data(family, args.rows, features, rng)
            for alpha in (1e-3, 1e-2):
                for tol in (1e-4, 1e-8):
                    cells = []
                    for solver in ("proximal", "newton"):
                        start = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            model = daskglm.GLM(family=family, penalty="l1", alpha=alpha,
                                                solver=solver, tol=tol, max_iter=5000).fit(X, y)
                        cells.append((model.comm_.rounds, time.perf_counter() - start))
                    decades = max(1.0, -math.log10(tol))
                    per_decade.append(cells[0][0] / decades)
                    print(f"| {family} | {features} | {alpha:g} | {tol:g} | {cells[0][0]} | "
                          f"{cells[0][1]:.2f} | {cells[1][0]} | {cells[1][1]:.2f} | "
                          f"{per_decade[-1]:.1f} |", flush=True)
    print(f"\nmedian proximal rounds per decade: {statistics.median(per_decade):.1f} "
          f"(from {min(per_decade):.1f} to {max(per_decade):.1f}); the cost model uses "
          f"{PROXIMAL_ROUNDS_PER_DECADE}; {args.rows} rows, in process; "
          f"{time.strftime('%Y-%m-%d')}")
    return 0


def add_parser(commands):
    """Register ``proximal-rounds`` on ``commands`` (argparse sub-parsers)."""
    parser = commands.add_parser("proximal-rounds",
                                 help="proximal gradient and proximal Newton rounds on L1 GLMs")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.set_defaults(handler=main)
