"""scikit-learn's own tests of ``class_weight`` (a dict and ``"balanced"``) for
LogisticRegression, LogisticRegressionCV and SGDClassifier, run on daskglm's estimators
through :mod:`.adapter`."""

from .adapter import SGD_REPLACEMENTS, translate

LM = "sklearn.linear_model.tests."
globals().update(translate(LM + "test_logistic", [
    "test_multinomial_logistic_regression_string_inputs",
    "test_logistic_regression_solver_class_weights", "test_logistic_regression_class_weights",
    "test_sample_weight_not_modified", "test_logistic_regressioncv_class_weights"]))
globals().update(translate(LM + "test_sgd", [
    "test_partial_fit_weight_class_balanced", "test_class_weights", "test_equal_class_weight",
    "test_wrong_class_weight_label", "test_weights_multiplied", "test_balanced_weight"],
    SGD_REPLACEMENTS))

_LIBLINEAR = ("solver='liblinear' penalises the intercept, a different objective; daskglm "
              "refuses it")
EXPECTED_FAILURES = {
    "test_logistic_regression_solver_class_weights[liblinear]": _LIBLINEAR,
    "test_logistic_regression_class_weights": _LIBLINEAR + " (its last loop runs it)",
}
