from tests.sklearn_suite.adapter import translate
LM = "sklearn.linear_model.tests."
globals().update(translate(LM + "test_base", [
    "test_linear_regression_positive", "test_linear_regression_positive_multiple_outcome",
    "test_linear_regression_positive_vs_nonpositive",
    "test_linear_regression_positive_vs_nonpositive_when_positive",
    "test_raises_value_error_if_positive_and_sparse", "test_linear_regression_vs_lstsq"]))
globals().update(translate(LM + "test_ridge", [
    "test_ridge_positive_regression_test", "test_ridge_ground_truth_positive_test",
    "test_ridge_positive_error_test", "test_positive_ridge_loss", "test_lbfgs_solver_consistency",
    "test_lbfgs_solver_error", "test_ridge_sample_weight_consistency", "test_ridge_fit_intercept_sparse",
    "test_dtype_match", "test_class_weights", "test_class_weight_vs_sample_weight"]))
globals().update(translate(LM + "test_coordinate_descent", [
    "test_lasso_positive_constraint", "test_enet_positive_constraint",
    "test_lasso_cv_positive_constraint", "test_enet_cv_positive_constraint", "test_enet_alpha_max",
    "test_lasso_zero", "test_lasso_toy", "test_enet_toy", "test_lasso_dual_gap",
    "test_lasso_readonly_data", "test_enet_multitarget", "test_enet_float_precision",
    "test_check_input_false"]))
globals().update(translate(LM + "test_sparse_coordinate_descent", [
    "test_sparse_enet_not_as_toy_dataset", "test_lasso_zero", "test_enet_toy_list_input",
    "test_sparse_lasso_not_as_toy_dataset", "test_enet_multitarget"]))
