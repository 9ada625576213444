from tests.sklearn_suite.adapter import translate
LM = "sklearn.linear_model.tests."
globals().update(translate(LM + "test_logistic", [
    "test_multinomial_logistic_regression_string_inputs", "test_logistic_regression_solver_class_weights",
    "test_logistic_regression_class_weights", "test_sample_weight_not_modified", "test_dtype_match",
    "test_logistic_regressioncv_class_weights"]))
