"""Progress of a fit: a progress bar and log lines, one update per solver iteration.

Solvers report each iteration through :func:`report` (from their history), without
knowing whether anyone listens; an estimator fitted with ``verbose`` listens for the
duration of its fit with :func:`watch`.  The bar is tqdm's text bar, full when the fit
ends.  In a terminal it redraws its line (``\r``); in a Jupyter kernel it is one text
output updated in place (a display with an id), which needs no widget library and which a
notebook saved during or after the fit holds once, in its last state (a stream of ``\r``
redraws would be saved whole, every state on its own line).  Every iteration is also
logged on the ``daskglm`` logger.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import sys

__all__ = ["report", "report_part", "watch"]

logger = logging.getLogger("daskglm")

#: The current listener: a callable taking each iteration's history entry, with an
#: optional ``part(share)`` for the share done of the iteration under way.
_listener = contextvars.ContextVar("daskglm_progress", default=None)


def report(entry):
    """Tell the current listener, if any, about one iteration's history entry."""
    listener = _listener.get()
    if listener is not None:
        listener(entry)


def report_part(share):
    """Tell the current listener, if any, that ``share`` (in [0, 1]) of the iteration under
    way is done: an SGD epoch's rounds, so that a long epoch moves the bar."""
    part = getattr(_listener.get(), "part", None)  # a listener may follow iterations only
    if part is not None:
        part(share)


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
    from tqdm.std import tqdm

    shown_in = _NotebookLine() if _in_notebook() else None
    bar = tqdm(total=total, desc=description, unit="it", leave=True,
               dynamic_ncols=shown_in is None, file=shown_in)

    listener = _BarListener(bar, description)
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
        # a fit that stopped before ``total`` (converged) ends its bar full, not at n/total
        listener.whole()
        bar.total = bar.n
        bar.refresh()
        bar.close()


#: The bar while an iteration is partly done: its count with two decimals.
_PART_FORMAT = "{l_bar}{bar}| {n:.2f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]"


class _BarListener:
    """Moves ``bar`` by one per iteration (showing its figures), and by the share done of
    an iteration under way."""

    def __init__(self, bar, description):
        self.bar = bar
        self.description = description
        self.done = 0.0  # share of the iteration under way

    def part(self, share):
        share = max(float(share), 0.0)
        if self.done < share < 1.0:  # a whole iteration is moved by its record
            self.bar.bar_format = _PART_FORMAT
            self.bar.update(share - self.done)
            self.done = share

    def whole(self):
        """Back to the count of whole iterations."""
        self.bar.n = round(self.bar.n - self.done)
        self.bar.bar_format = None
        self.done = 0.0

    def __call__(self, entry):
        # the figures first, then the step, so that the bar shows the iteration it counts
        shown = {"objective": f"{entry['objective']:.6g}"}
        if math.isfinite(entry.get("grad_norm", math.nan)):
            shown["grad"] = f"{entry['grad_norm']:.2e}"
        self.bar.set_postfix(shown, refresh=False)
        self.whole()
        self.bar.update(1)
        logger.info("%s iteration %d: objective %.10g, gradient %.3e, %d rounds, %.2f s",
                    self.description, entry["iteration"], entry["objective"],
                    entry["grad_norm"], entry["rounds"], entry["seconds"])


def _in_notebook():
    """Whether this process is a Jupyter kernel (IPython's kernel shell is running)."""
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    return shell is not None and hasattr(shell, "kernel")


class _NotebookLine:
    """A file for tqdm that shows what it writes as one text output of the current cell,
    replaced at every write (``display`` once, then ``update_display`` by its id)."""

    def __init__(self):
        self.handle = None

    def write(self, text):
        from IPython.display import display

        line = text.replace("\r", "").strip("\n")
        if not line.strip():
            return
        data = {"text/plain": line}
        if self.handle is None:
            self.handle = display(data, raw=True, display_id=True)
        else:
            self.handle.update(data, raw=True)

    def flush(self):
        pass
