"""Progress of a fit: a progress bar and log lines, one update per solver iteration.

Solvers report each iteration through :func:`report` (from their history), without
knowing whether anyone listens; an estimator fitted with ``verbose`` listens for the
duration of its fit with :func:`watch`.  The bar is tqdm's text bar (the same in a
terminal, a notebook and a saved notebook), full when the fit ends; every iteration is
also logged on the ``daskglm`` logger.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math

__all__ = ["report", "watch"]

logger = logging.getLogger("daskglm")

_listener = contextvars.ContextVar("daskglm_progress", default=None)


def report(entry):
    """Tell the current listener, if any, about one iteration's history entry."""
    listener = _listener.get()
    if listener is not None:
        listener(entry)


@contextlib.contextmanager
def watch(description, total, verbose):
    """Show the iterations of the fit run inside this block.

    Parameters
    ----------
    description : str
        The bar's label, e.g. ``"LogisticRegression(lbfgs)"``.
    total : int
        Most iterations (the bar's length).
    verbose : int
        0: nothing; 1 or more: a progress bar and one INFO log line per iteration.
    """
    if not verbose:
        yield
        return
    # the text bar renders the same in a terminal, in a notebook (as its output stream:
    # no widget library needed) and in a saved notebook, which keeps its last state
    from tqdm.std import tqdm

    bar = tqdm(total=total, desc=description, unit="it", leave=True, dynamic_ncols=True)

    def listen(entry):
        # the figures first, then the step, so that the bar shows the iteration it counts
        shown = {"objective": f"{entry['objective']:.6g}"}
        if math.isfinite(entry.get("grad_norm", math.nan)):
            shown["grad"] = f"{entry['grad_norm']:.2e}"
        bar.set_postfix(shown, refresh=False)
        bar.update(1)
        logger.info("%s iteration %d: objective %.10g, gradient %.3e, %d rounds, %.2f s",
                    description, entry["iteration"], entry["objective"], entry["grad_norm"],
                    entry["rounds"], entry["seconds"])

    token = _listener.set(listen)
    try:
        yield
    finally:
        _listener.reset(token)
        # a fit that stopped before ``total`` (converged) ends its bar full, not at n/total
        bar.total = bar.n
        bar.refresh()
        bar.close()
