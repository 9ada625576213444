"""scikit-learn's own tests of ``positive=True`` (LinearRegression, Ridge, Lasso,
ElasticNet), run on daskglm's estimators through :mod:`.adapter`; those of
LinearRegression, Lasso and ElasticNet also on Dask arrays of three chunks."""


from .adapter import translate

LM = "sklearn.linear_model.tests."
BASE = ["test_linear_regression_positive", "test_linear_regression_positive_multiple_outcome",
        "test_linear_regression_positive_vs_nonpositive",
        "test_linear_regression_positive_vs_nonpositive_when_positive",
        "test_raises_value_error_if_positive_and_sparse"]
COORDINATE_DESCENT = ["test_lasso_positive_constraint", "test_enet_positive_constraint",
                      "test_lasso_cv_positive_constraint", "test_enet_cv_positive_constraint"]

globals().update(translate(LM + "test_base", BASE))
globals().update(translate(LM + "test_base", BASE[:4], dask=True))
globals().update(translate(LM + "test_ridge", [
    "test_ridge_positive_regression_test", "test_ridge_ground_truth_positive_test",
    "test_ridge_positive_error_test", "test_positive_ridge_loss", "test_lbfgs_solver_consistency",
    "test_lbfgs_solver_error", "test_ridge_sample_weight_consistency"]))
globals().update(translate(LM + "test_coordinate_descent", COORDINATE_DESCENT))
globals().update(translate(LM + "test_coordinate_descent", COORDINATE_DESCENT[:2], dask=True))
globals().update(translate(LM + "test_sparse_coordinate_descent",
                           ["test_sparse_enet_not_as_toy_dataset"]))

EXPECTED_FAILURES = {
    "test_raises_value_error_if_positive_and_sparse":
        "daskglm fits positive=True on sparse X (scikit-learn's NNLS needs dense X)",
}
