"""``daskglm demo``: every method at its defaults, warm seconds, passes counted from the
ledger, a legend that defines each column, and ``--plot``."""

import contextlib
import importlib.util
import io
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import daskglm
from daskglm.accounting.kinds import Kind
from daskglm.accounting.ledger import CommReport
from daskglm.accounting.round_record import RoundRecord
from daskglm.cli import DEMO_COLUMNS, main
from daskglm.comparison import EVERY_METHOD, compare
from daskglm.comparison.passes import (
    EPOCH_KINDS,
    LOCAL_KINDS,
    NO_PASS_KINDS,
    PASS_KINDS,
    UNCOUNTED_KINDS,
    passes_over_data,
)
from daskglm.solvers import SOLVERS

from .conftest import make_data

HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One small demo (all eleven methods on a two-worker LocalCluster): its output and
    the plot's path (None without matplotlib)."""
    plot = tmp_path_factory.mktemp("demo") / "demo.png" if HAS_MATPLOTLIB else None
    argv = ["demo", "--n", "4000", "--d", "4", "--partitions", "4"]
    argv += ["--plot", str(plot)] if plot else []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == 0
    return SimpleNamespace(text=out.getvalue(), plot=plot)


def _table(text):
    """``{method: line}`` of the demo's table, and its header line."""
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("method"))
    body = lines[lines.index(header) + 2:]
    body = body[:body.index("")]
    return {line.split()[0]: line for line in body}, header


def test_the_table_lists_every_method_or_says_why_it_does_not_apply(demo_run):
    rows, header = _table(demo_run.text)
    assert set(rows) == set(EVERY_METHOD) == {"auto", *SOLVERS}
    for column in DEMO_COLUMNS:
        assert column in header
    assert "n/a:" in rows["normal"] and "squared error" in rows["normal"]  # binomial family
    chosen = rows["auto"].split()[1]
    assert chosen.startswith("(") and chosen.strip("()") in SOLVERS
    for method, line in rows.items():
        if method == "normal":
            continue
        cells = line.split()
        if method == "auto":
            del cells[1]
        rounds, passes = int(cells[1]), float(cells[2].lstrip(">="))
        assert rounds >= 1 and passes >= 1
        assert 0.5 < float(cells[-1]) <= 1.0  # held-out accuracy
    assert rows["admm"].split()[2].startswith(">=")  # local solves: a lower bound


def test_the_legend_defines_every_column_and_the_gap(demo_run):
    legend = demo_run.text[demo_run.text.index("\nmethod  "):]
    starts = [line.split("  ")[0] for line in legend.strip().splitlines()]
    for column in DEMO_COLUMNS:
        assert column in starts
    flat = " ".join(legend.split())
    assert ("objective gap the method's training objective minus the lowest objective any "
            "method reached") in flat
    assert "mean log-loss" in flat and "alpha/2 * |coef|^2" in flat
    assert "passes over the 3,200 training rows" in flat
    assert "rounds: passes over the data" not in flat  # the old, false definition


def test_the_seconds_are_timed_after_a_set_up_reported_apart(demo_run):
    """The warm-up (compiling every method's loops) runs and is reported before the
    table, so no method's seconds include it; how fast they are is for the benchmarks."""
    text = demo_run.text
    setup = text.index("one-time set-up, not in the seconds below: ")
    assert setup < text.index("\nmethod  ")
    assert float(text[setup:].split(": ")[1].split()[0]) > 0
    rows, _ = _table(text)
    for method, line in rows.items():
        if method != "normal":
            seconds = float(line.split()[-3])
            assert seconds >= 0, (method, seconds)
    assert "\ndemo wall time: " in text


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="needs matplotlib")
def test_plot_writes_a_png(demo_run):
    assert f"plot written to {demo_run.plot}" in demo_run.text
    assert demo_run.plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_one_line_before_any_cluster(monkeypatch, capsys):
    import daskglm.cli

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib fails
    clusters = []
    monkeypatch.setattr(daskglm.cli, "_local_cluster", lambda args: clusters.append(args))
    assert main(["demo", "--plot", "demo.png"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("daskglm demo: error: --plot needs matplotlib")
    assert clusters == []  # no cluster started


# passes over the data, from the ledger --------------------------------------------------------
def test_every_kind_of_round_is_classified_once():
    kinds = {value for name, value in vars(Kind).items() if name.isupper()}
    groups = [PASS_KINDS, EPOCH_KINDS, LOCAL_KINDS, NO_PASS_KINDS, UNCOUNTED_KINDS,
              {Kind.STEP_PROBE}]
    for kind in kinds:
        assert sum(kind in group for group in groups) == 1, kind
    assert set().union(*groups) == kinds


@pytest.mark.parametrize("solver", ["lbfgs", "newton", "gd"])
def test_batch_methods_pass_once_per_round(solver):
    X, y, _ = make_data("binomial", n=1000, d=4)
    model = daskglm.GLM(family="binomial", alpha=1e-3, solver=solver, tol=1e-8).fit(X, y)
    report = model.comm_
    full = (report.count(Kind.GRADIENT) + report.count(Kind.HESSIAN)
            + report.count(Kind.VALIDATE) + report.count(Kind.VALIDATE_GRADIENT)
            + report.count(Kind.VALIDATE_HESSIAN))
    assert full == report.rounds > 1
    assert passes_over_data(model, 1000) == (full, False)


def test_sgd_passes_once_per_epoch():
    X, y, _ = make_data("binomial", n=400, d=3)
    model = daskglm.GLM(family="binomial", solver="sgd", tol=None, max_iter=3,
                        solver_options={"batch_size": 50}).fit(X, y)
    report = model.comm_
    assert sum(report.count(kind) for kind in EPOCH_KINDS) >= 3  # rounds of 3 epochs
    assert passes_over_data(model, 400) == (1 + 3, False)  # validation + 1 per epoch


def test_local_solves_count_a_lower_bound():
    X, y, _ = make_data("binomial", n=1000, d=4)
    model = daskglm.GLM(family="binomial", alpha=1e-3, solver="admm").fit(X, y)
    local = [entry["local_iterations"] for entry in model.history_]
    passes, at_least = passes_over_data(model, 1000)
    assert at_least and passes == 1 + sum(1 + n for n in local)


def test_sgd_timing_rounds_add_the_share_of_an_epoch_they_read():
    report = CommReport()
    for kind in [Kind.VALIDATE, Kind.SIZES] + [Kind.STEP_PROBE] * 3 + [Kind.LOCAL_SGD] * 2:
        report.records.append(RoundRecord(kind, 4, 0, 0, 0.0))
    model = SimpleNamespace(comm_=report, n_iter_=2, history_=[{"steps": 1000}] * 2,
                            solver_options_={"batch_size": 16})
    passes, at_least = passes_over_data(model, 16_000)
    assert not at_least
    assert passes == pytest.approx(1 + 2 + (64 + 128 + 256) * 16 / 16_000)
    report.records.append(RoundRecord(Kind.HELD_OUT, 4, 0, 0, 0.0))
    assert passes_over_data(model, 16_000) == (None, False)  # not counted: no number


def test_compare_at_defaults_names_what_auto_chose():
    X, y, _ = make_data("gaussian", n=600, d=3)
    result = compare(X, y, ["auto", "normal", "sgd"], family="gaussian", at_defaults=True,
                     warm_up=None)
    auto = result["auto"]
    assert auto.chosen == "normal" and auto.label == "auto (normal)"
    assert result["normal"].passes == 1 and result["normal"].chosen is None
    sgd = result["sgd"].model
    assert (sgd.tol, sgd.max_iter, sgd.solver_options) == (1e-4, 100, None)  # GLM's own
    assert "auto (normal)" in result.table()
    assert np.isfinite(result["sgd"].objective_gap)
