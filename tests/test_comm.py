"""Communication accounting: records, the byte model against Dask's counters, waiting
time, the tree's fan-in, method comparison and the cost model."""

import warnings
from dataclasses import replace

import dask.array as da
import numpy as np
import pytest
from distributed import Future
from threadpoolctl import threadpool_limits

import daskglm
from daskglm.accounting.bytemodel import TASK_BYTES, nbytes, payload_model, tree_tasks
from daskglm.accounting.calibration import calibrate
from daskglm.accounting.costmodel import Cluster, measured_seconds, predict
from daskglm.accounting.kinds import Kind
from daskglm.accounting.ledger import CommReport
from daskglm.accounting.projection import project, ranking_changes
from daskglm.accounting.round_record import RoundRecord, round_timing
from daskglm.comparison import compare
from daskglm.compute.kernels import loss_grad
from daskglm.engine import DistributedEngine, LocalEngine, make_engine
from daskglm.model.families import Binomial, Gaussian
from daskglm.model.penalties import L2
from daskglm.solvers import Problem, get_solver
from tests.conftest import make_data


def fit_on_engine(engine, method, family, alpha=1e-3, max_iter=20, tol=1e-6):
    """Run one solver on an engine built by the test (so the test picks the partitions)."""
    n_features = engine.n_features
    problem = Problem(family, L2(alpha), True, n_features)
    solver = get_solver(method, problem, tol=tol, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.solve(problem, engine, np.zeros(problem.n_params))


# records and reports ---------------------------------------------------------------------
def test_in_process_rounds_measure_zero_bytes_and_time_partitions():
    X, y, _ = make_data("binomial", n=3000, d=4)
    model = daskglm.LogisticRegression(solver="lbfgs").fit(X, y)
    report = model.comm_
    assert isinstance(report, CommReport) and not hasattr(daskglm, "CommLedger")
    assert report.engine == "local" and report.method == "lbfgs"
    assert report.bytes_measured == 0  # nothing crosses a process boundary
    assert all(r.bytes_measured == 0 and r.bytes_overhead == 0 for r in report.records)
    assert report.bytes_modelled == sum(r.bytes_sent + r.bytes_returned for r in report.records)
    assert all(r.seconds_compute > 0 and r.seconds_waiting >= 0 for r in report.records)
    assert report.bytes_read == 0 and report.split_every == 8


def test_report_table_dict_and_frame():
    X, y, _ = make_data("binomial", n=2000, d=3)
    report = daskglm.LogisticRegression(solver="newton").fit(X, y).comm_
    text = repr(report)
    for piece in ("validate", "hessian", "total", "modelled B", "measured B", "waiting s"):
        assert piece in text
    as_dict = report.to_dict()
    assert as_dict["rounds"] == report.rounds == len(as_dict["records"])
    assert as_dict["records"][0]["kind"] == "validate_hessian"  # with the first evaluation
    assert {"bytes_modelled", "split_every", "bytes_read"} <= set(as_dict["records"][0])
    pd = pytest.importorskip("pandas")
    frame = report.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == report.rounds
    assert frame["bytes_modelled"].sum() == report.bytes_modelled


def test_waiting_time_is_idle_thread_seconds_until_the_slowest_partition():
    # two threads: thread "a" ends its partitions at 3, thread "b" at 5; a combine after
    spans = [(True, "a", 0.0, 1.0), (True, "a", 1.0, 3.0), (True, "b", 0.0, 5.0),
             (False, "b", 5.5, 6.0)]
    timing = round_timing(spans)
    assert timing["seconds_waiting"] == pytest.approx(2.0)  # "a" idles from 3 to 5
    assert timing["seconds_compute"] == pytest.approx(1 + 2 + 5 + 0.5)
    assert timing["seconds_span"] == pytest.approx(5.0)
    assert timing["seconds_tree"] == pytest.approx(1.0)
    balanced = round_timing([(True, "a", 0.0, 2.0), (True, "b", 0.0, 2.0)])
    assert balanced["seconds_waiting"] == 0.0 and balanced["seconds_tree"] is None


# the analytic model ------------------------------------------------------------------------
PAYLOAD_CASES = {
    # name: (estimator, family, payload_model kind for local solves)
    "lbfgs": (lambda: daskglm.LogisticRegression(solver="lbfgs"), "binomial"),
    "newton": (lambda: daskglm.LogisticRegression(solver="newton"), "binomial"),
    "normal": (lambda: daskglm.LinearRegression(solver="normal"), "gaussian"),
    "averaging": (lambda: daskglm.LogisticRegression(solver="averaging"), "binomial"),
    "admm": (lambda: daskglm.LogisticRegression(solver="admm", max_iter=3), "binomial"),
}


@pytest.mark.parametrize("method", list(PAYLOAD_CASES))
def test_the_model_table_is_what_the_engine_counts(method):
    make, family = PAYLOAD_CASES[method]
    X, y, _ = make_data(family, n=2000, d=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = make().fit(X, y).comm_
    for record in report.records:
        kind = {"local_solve": method}.get(record.kind, record.kind)
        # only L-BFGS (of these) reads the validation round's sample of rows
        down, up = payload_model(kind, n_params=6, n_features=5, partitions=record.partitions,
                                 split_every=record.split_every or 8, groups=record.groups,
                                 sample_rows=method == "lbfgs")
        assert (record.bytes_sent, record.bytes_returned) == (down, up), record.kind


# measured against modelled on a real cluster ------------------------------------------------
def test_measured_bytes_stay_within_half_and_twice_the_model(client):
    kinds, routes = {}, {}
    cases = [("binomial", 6, 8, ["lbfgs", "newton", "admm", "averaging"]),
             ("gaussian", 6, 4, ["normal"]),
             ("binomial", 120, 8, ["newton", "averaging"])]  # payload-dominated rounds
    for family_name, d, partitions, methods in cases:
        X, y, _ = make_data(family_name, n=4000, d=d)
        family = Gaussian() if family_name == "gaussian" else Binomial()
        for method in methods:
            with make_engine(X, y, family=family, client=client,
                             n_partitions=partitions) as engine:
                fit_on_engine(engine, method, family, max_iter=3)
            for record in engine.ledger.records:
                assert record.bytes_measured is not None, record
                ratio = record.bytes_measured / record.bytes_modelled
                kinds.setdefault(record.kind, []).append(ratio)
                routes[record.route] = record
                assert 0.5 <= ratio <= 2.0, (method, d, record)
    assert {"validate", "gradient", "hessian", "gram", "local_solve"} <= set(kinds)
    # a task round's measurement is made of Dask's counters, every one of them non-zero
    # here; a direct round's of the calls and answers, none through the scheduler
    assert set(routes) == {"tasks", "direct"}
    record = routes["tasks"]
    assert record.bytes_submitted > 0 and record.bytes_dispatched > 0
    assert record.bytes_transferred > 0 and record.transfers > 0
    record = routes["direct"]
    assert record.bytes_submitted > 0 and record.bytes_dispatched == 0
    assert record.bytes_transferred > 0 and record.transfers is None


def test_cluster_report_has_timings_and_identifies_the_cluster(client):
    X, y, _ = make_data("binomial", n=3000, d=4)
    X = da.from_array(X, chunks=(375, -1))  # eight partitions, spread over both workers
    model = daskglm.LogisticRegression(solver="lbfgs").fit(X, y)
    report = model.comm_
    assert report.engine == "distributed" and report.cores == 2 and report.workers == 2
    assert "Dask counters" in report.measurement
    for record in report.records:
        assert record.seconds_compute > 0 and record.seconds_waiting >= 0
        # two groups of partitions, one per worker: the driver sums them, no combine task
        assert record.seconds_span is not None and record.seconds_tree is None
        assert record.tasks == 2 and record.depth == 0
    assert report.seconds_waiting == pytest.approx(sum(r.seconds_waiting for r in report.records))


# the tree's fan-in ---------------------------------------------------------------------------
def test_split_every_is_recorded_and_a_smaller_fan_in_runs_more_tasks(client):
    X, y, _ = make_data("binomial", n=3200, d=4)
    tasks, measured = {}, {}
    for split_every in (2, 8):
        with make_engine(X, y, family=Binomial(), client=client, n_partitions=16,
                         split_every=split_every, group_partitions=False) as engine:
            assert isinstance(engine, DistributedEngine)
            fit_on_engine(engine, "gd", Binomial(), max_iter=2)
        report = engine.ledger
        assert report.split_every == split_every
        assert {r.split_every for r in report.records} == {split_every}
        gradient = [r for r in report.records if r.kind == "gradient"]
        tasks[split_every] = gradient[0].tasks
        measured[split_every] = np.mean([r.bytes_measured for r in gradient])
        # combine levels on the workers until at most split_every partials are left,
        # which the driver sums: 16 -> 8 -> 4 -> 2 (then the driver), 16 -> 2 (the driver)
        assert gradient[0].depth == {2: 3, 8: 1}[split_every]
        assert all(r.seconds_tree is not None for r in gradient)
    assert tasks[2] == 16 + tree_tasks(16, 2) == 30
    assert tasks[8] == 16 + tree_tasks(16, 8) == 18
    assert measured[2] > measured[8]  # more combine tasks, more messages


# comparing methods ---------------------------------------------------------------------------
def test_compare_tabulates_every_method_in_process():
    X, y, _ = make_data("binomial", n=3000, d=4)
    result = compare(X, y, methods=["lbfgs", "newton", "normal"], alpha=1e-3, tol=1e-8)
    assert [r.method for r in result.rows] == ["lbfgs", "newton", "normal"]
    assert not result["normal"].ok and "squared error" in result["normal"].error
    done = [r for r in result.rows if r.ok]
    assert min(r.objective_gap for r in done) == 0.0
    assert all(0 <= r.objective_gap < 1e-6 for r in done)  # both converge to the optimum
    assert all(r.bytes_measured == 0 and r.bytes_modelled > 0 for r in done)
    assert all(0 < r.score <= 1 for r in done)
    text = repr(result)
    for column in ("iterations", "rounds", "bytes measured", "bytes modelled", "seconds waiting",
                   "objective gap", "held-out score"):
        assert column in text
    assert "n/a" in result.table().splitlines()[-1]
    pytest.importorskip("pandas")
    frame = result.to_frame()
    assert list(frame["method"]) == ["lbfgs", "newton", "normal"]
    curves = result.curves()
    assert set(curves) == {"lbfgs", "newton"}
    assert curves["lbfgs"]["rounds"][-1] == result["lbfgs"].rounds


def test_compare_plot_writes_a_figure(tmp_path):
    pytest.importorskip("matplotlib")
    X, y, _ = make_data("binomial", n=1500, d=3)
    result = compare(X, y, methods=["gd", "lbfgs"], alpha=1e-3, tol=1e-6)
    path = result.plot(tmp_path / "costs.png")
    assert path.stat().st_size > 0


# the cost model ------------------------------------------------------------------------------
def synthetic_report(kind, rounds, seconds, partitions=16, split_every=8, compute=0.001):
    """A report of identical rounds on 2 single-threaded workers, for the cost model's
    arithmetic: balanced partitions, 1 ms transfer round trips, 4 ms tree levels (one
    level of combine tasks with 16 partitions and fan-in 8)."""
    report = CommReport()
    report.engine, report.workers, report.cores = "distributed", 2, 2
    tasks = partitions + (tree_tasks(partitions, split_every) if split_every else 0)
    for _ in range(rounds):
        report.records.append(RoundRecord(
            kind, tasks, 80 * partitions, 80 * tasks, seconds, partitions, split_every,
            bytes_overhead=TASK_BYTES * tasks, bytes_measured=TASK_BYTES * tasks,
            seconds_compute=compute, seconds_waiting=0.0, seconds_span=compute / 2,
            seconds_tree=0.004 if tasks > partitions else None, bytes_transferred=80 * tasks,
            transfers=4, seconds_transferring=0.004,
        ))
    return report


def test_cost_model_arithmetic_and_ranking_changes():
    many_cheap = synthetic_report("gradient", 100, 0.03)  # e.g. gradient descent: 3 s
    few_heavy = synthetic_report("local_solve", 5, 1.05, split_every=None, compute=2.0)
    reports = {"many rounds": many_cheap, "few rounds": few_heavy}
    calibration = calibrate(reports)
    here = calibration.cluster
    assert here.workers == 2 and here.latency == pytest.approx(0.0005)  # half of 1 ms trips
    assert here.step_overhead == pytest.approx(0.001 - 0.0005)  # tree level of 4 ms / 4
    # more latency hurts the method with many rounds: the ranking flips somewhere
    slow_network = replace_cluster(here, latency=0.05)
    fast = predict(many_cheap, here, calibration)["total"]
    slow = predict(many_cheap, slow_network, calibration)["total"]
    assert slow - fast == pytest.approx(100 * 12 * (0.05 - here.latency))
    projection = project(reports, slow_network, calibration)
    assert projection.ranking_here == ["many rounds", "few rounds"]
    assert projection.ranking_there == ["few rounds", "many rounds"]
    assert projection.changes and projection.changes[0].startswith("latency")
    assert ranking_changes(reports, calibration, here) == []
    # more cores shrink the compute of the heavy local solves
    wide = project(reports, "workers=8", calibration).rows[1]
    assert wide.terms_there["compute"] < predict(few_heavy, here, calibration, here=True)["compute"]
    assert "ranking changes" in repr(projection)


def test_cost_model_without_combine_tasks_puts_a_rounds_fixed_cost_in_its_steps():
    # two partitions, fan-in 8: the driver sums both partials, no round has a tree level
    report = synthetic_report("gradient", 20, 0.0165, partitions=2)
    assert {r.tasks for r in report.records} == {2}
    assert {r.seconds_tree for r in report.records} == {None}
    here = calibrate(report).cluster
    # 16 ms beyond the span over 8 message steps, less half of the 1 ms round trips
    assert here.step_overhead == pytest.approx(0.016 / 8 - 0.0005)
    assert here.scheduler_overhead == pytest.approx(0.0, abs=1e-12)
    assert predict(report, here, calibrate(report), here=True)["total"] == pytest.approx(
        20 * 0.0165, rel=0.05)


def replace_cluster(cluster, **changes):
    from dataclasses import replace

    return replace(cluster, **changes)


def test_cluster_specification_is_parsed():
    cluster = Cluster.parse("workers=64,bandwidth=1e9,latency=1e-3,threads=2")
    assert (cluster.workers, cluster.threads_per_worker, cluster.cores) == (64, 2, 128)
    assert cluster.bandwidth == 1e9 and cluster.latency == 1e-3
    assert Cluster.parse("latency=0.01", base=cluster).workers == 64
    with pytest.raises(ValueError, match="name=value"):
        Cluster.parse("wrkers=3")
    with pytest.raises(ValueError, match="workers"):
        Cluster.parse("latency=1")


@pytest.mark.slow  # a timing claim: it needs a quiet machine (run with -m slow)
def test_cost_model_predicts_the_measured_cluster_within_30_percent(client):
    X, y, _ = make_data("binomial", n=6000, d=8)
    methods = ["gd", "lbfgs", "newton", "admm", "averaging"]
    for method in methods:  # fresh workers import what each method runs (scipy.optimize...)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            daskglm.LogisticRegression(solver=method, max_iter=2).fit(X[:500], y[:500])
    reports = {}
    attempts = 3  # methods interleaved, so that changes in the machine's load hit all alike
    for attempt in range(attempts):
        for method in methods:
            # The driver shares the machine's cores with the scheduler and the workers: its
            # BLAS threads, which keep spinning after scipy's L-BFGS calls them, would slow
            # the workers down during that method's rounds alone.
            with warnings.catch_warnings(), threadpool_limits(1):
                warnings.simplefilter("ignore")
                model = daskglm.LogisticRegression(solver=method, tol=1e-6, max_iter=15)
                model.fit(X, y)
            reports[f"{method}-{attempt}"] = model.comm_
    calibration = calibrate(reports, data_bytes=8 * X.size)
    assert calibration.engine == "distributed" and calibration.cluster.cores == 2
    errors = {}
    for method in methods:
        # the median over attempts: a fit of a few 30 ms rounds (ADMM's five local solves)
        # is doubled by one pause of the shared machine that the model cannot know of
        fits = [reports[f"{method}-{attempt}"] for attempt in range(attempts)]
        ratios = [predict(r, calibration.cluster, calibration, here=True)["total"]
                  / measured_seconds(r) for r in fits]
        errors[method] = float(np.median(ratios)) - 1
    print("cost model error on the measured cluster:",
          {m: f"{100 * e:+.0f}%" for m, e in errors.items()}, calibration.describe())
    assert all(abs(e) <= 0.3 for e in errors.values()), errors


def test_a_direct_round_is_priced_as_calls_where_the_engine_would_run_it_direct():
    """Up to ``split_every`` workers a direct round costs two messages and the calibrated
    call overhead, no scheduler; up to ``split_every ** 2`` (teams of holders) twice that;
    beyond, the engine runs tasks and the model prices it as a task round (eight message
    steps, more per tree level, the scheduler per task)."""
    from daskglm.accounting.costmodel import round_seconds

    record = RoundRecord("gradient", 2, 16 * 7, 16 * 8, 0.03, partitions=8, split_every=8,
                         groups=2, seconds_compute=0.04, seconds_waiting=0.0,
                         seconds_span=0.022, route="direct")
    overheads = dict(step_overhead=0.002, worker_overhead=0.0, scheduler_overhead=0.001,
                     call_overhead=0.003)
    near = round_seconds(record, Cluster(2, latency=1e-4, **overheads))
    assert near["latency"] == pytest.approx(2e-4) and near["overhead"] == pytest.approx(0.003)
    teams = round_seconds(record, Cluster(16, latency=1e-4, **overheads))
    assert teams["latency"] == pytest.approx(4e-4) and teams["overhead"] == pytest.approx(0.006)
    far = round_seconds(record, Cluster(65, latency=1e-4, **overheads))
    tasks = round_seconds(replace(record, route="tasks"), Cluster(65, latency=1e-4,
                                                                  **overheads))
    assert far == tasks and far["latency"] > 8 * 1e-4 and far["overhead"] >= 64 * 0.001


# the command line ----------------------------------------------------------------------------
def test_compare_command_prints_the_table_and_a_projection(capsys):
    from daskglm.cli import main

    code = main(["compare", "--n", "4000", "--d", "4", "--partitions", "4", "--workers", "2",
                 "--methods", "lbfgs,newton,normal", "--project",
                 "workers=32,bandwidth=1e8,latency=2e-3"])
    out = capsys.readouterr().out
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("method"))
    for column in ("bytes measured", "bytes modelled", "seconds waiting", "objective gap"):
        assert column in header
    assert "n/a" in next(line for line in out.splitlines() if line.startswith("normal"))
    assert "target: 32 workers" in out and "model there" in out and "fastest first" in out


def test_every_record_carries_its_partitions_and_fan_in():
    X, y, _ = make_data("gaussian", n=100, d=2)
    with make_engine(X, y, family=Gaussian(), client=None, n_partitions=3) as engine:
        assert isinstance(engine, LocalEngine)
        engine.reduce(lambda part: 1.0, kind="count")
    record = engine.ledger.records[-1]
    assert record.kind == "count" and record.tasks == 3 + tree_tasks(3, 8)
    assert record.split_every == 8 and record.partitions == 3


def test_a_fitted_model_with_its_report_pickles(client):
    import pickle

    X, y, _ = make_data("binomial", n=2000, d=3)
    model = daskglm.LogisticRegression(solver="newton").fit(X, y)
    copy = pickle.loads(pickle.dumps(model))
    assert copy.comm_.bytes_measured == model.comm_.bytes_measured > 0
    assert repr(copy.comm_).splitlines()[1:] == repr(model.comm_).splitlines()[1:]


def test_nbytes_counts_arrays_of_any_library():
    """The ledger counts an array by its ``nbytes`` whatever library made it (a CuPy array
    was counted as 0 bytes), and a sparse matrix by its stored arrays."""
    import scipy.sparse as sp

    class DeviceArray:  # what CuPy's arrays offer: a shape and nbytes, no numpy base class
        shape = (1000,)
        nbytes = 8000

    assert nbytes(DeviceArray()) == 8000
    assert nbytes([DeviceArray(), np.zeros(3)]) == 8024
    csr = sp.random(50, 40, density=0.1, format="csr", random_state=0)
    assert nbytes(csr) == csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
    assert nbytes(np.float64(2.0)) == nbytes(3) == 8


def test_the_reports_text_wraps_and_its_html_is_the_same_table():
    report = CommReport()
    report.record("gradient", 2, 800, 160, 0.01, partitions=2)
    report.record("gradient", 2, 800, 160, 0.02, partitions=2)
    report.note_choice("sync_every", 4096, "a round's fixed cost is 3.78 ms and a step's "
                       "compute 6.8 us, so 4096 steps make a round's compute 12x its fixed "
                       "cost (at most one epoch per round)")
    text = repr(report)
    width = len(text.splitlines()[1])  # the header
    assert all(len(line) <= width for line in text.splitlines())
    assert "chosen: sync_every=4096: a round's fixed cost" in text.replace("\n  ", " ")
    page = report._repr_html_()
    assert page.count("<tr>") == 1 + 2  # header, gradient, total
    assert "<td>gradient</td><td>2</td><td>4</td>" in page
    assert "chosen: sync_every=4096" in page and "<table>" in page
    assert "<td>total</td>" in page


# partials of interleaved partitions --------------------------------------------------------
def test_interleaved_partitions_return_a_partial_each_and_the_model_counts_them(client):
    """Each worker holding every other partition: no two of a worker's partitions are
    neighbours in the reduction tree, so each returns its own partial sum, by task and by
    direct call alike; the record counts them (``partials``), and the modelled bytes
    follow the measured ones (within 25%) where one partial a worker would be 4x short."""
    X, y, _ = make_data("binomial", n=4000, d=3999)
    contiguous = make_engine(X, y, family=Binomial(), client=client, n_partitions=8)
    holders = client.who_has(contiguous.parts)
    first = holders[contiguous.parts[0].key]
    on_first = [i for i, part in enumerate(contiguous.parts) if holders[part.key] == first]
    assert on_first == [0, 1, 2, 3]  # numpy rows are scattered in contiguous runs
    # futures of their own for the same partitions: closing an engine releases its own
    interleaved = [Future(contiguous.parts[i].key, client) for i in (0, 4, 1, 5, 2, 6, 3, 7)]
    params = np.zeros(4000)
    try:
        records, sums = [], []
        for direct_rounds in (False, True):
            with DistributedEngine(client, interleaved, contiguous.n_features,
                                   direct_rounds=direct_rounds) as engine:
                sums += [engine.reduce(loss_grad, params, Binomial(), True, kind=Kind.GRADIENT)
                         for _ in range(3)]
                engine.collect_measurements()
            records.append(engine.ledger.records[-1])
        contiguous.reduce(loss_grad, params, Binomial(), True, kind=Kind.GRADIENT)
        contiguous.collect_measurements()
    finally:
        contiguous.close()
    np.testing.assert_allclose(sums[0].grad, sums[-1].grad, rtol=1e-12)
    partial = 8 * (4000 + 2)  # a gradient, the loss and the weight
    tasks, direct = records
    assert (tasks.route, direct.route) == ("tasks", "direct")
    for record in (tasks, direct):
        assert (record.groups, record.partials, record.gathered) == (2, 8, 8)
        assert record.bytes_returned == 8 * partial and record.bytes_kept_local == 0
        assert 0.8 <= record.bytes_measured / record.bytes_modelled <= 1.25, record
        up = payload_model(Kind.GRADIENT, n_params=4000, partitions=8, groups=2,
                           partials=record.partials)[1]
        assert up == record.bytes_returned
    # the same round on the partitions in their order: one partial a worker
    neighbours = contiguous.ledger.records[-1]
    assert (neighbours.partials, neighbours.gathered) == (2, 2)
    assert neighbours.bytes_returned == 2 * partial
    assert tasks.bytes_measured > 3 * neighbours.bytes_measured
