"""Progress of a fit: a progress bar and log lines, one update per solver iteration.

Solvers report each iteration through :func:`report` (from their history), without
knowing whether anyone listens; an estimator fitted with ``verbose`` listens for the
duration of its fit with :func:`watch`.  The bar is tqdm's (a widget in notebooks, a line
in terminals); every iteration is also logged on the ``daskglm`` logger.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging

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
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=description, unit="it", leave=True)

    def listen(entry):
        bar.update(1)
        bar.set_postfix(objective=f"{entry['objective']:.6g}",
                        grad=f"{entry['grad_norm']:.2e}", refresh=False)
        logger.info("%s iteration %d: objective %.10g, gradient %.3e, %d rounds, %.2f s",
                    description, entry["iteration"], entry["objective"], entry["grad_norm"],
                    entry["rounds"], entry["seconds"])

    token = _listener.set(listen)
    try:
        yield
    finally:
        _listener.reset(token)
        bar.close()
