"""scikit-learn's own tests of SGD's ``early_stopping`` (with ``validation_fraction`` and
``n_iter_no_change``) and of ``fit(coef_init=, intercept_init=)``, run on daskglm's
SGDClassifier and SGDRegressor through :mod:`.adapter`."""

from .adapter import SGD_REPLACEMENTS, translate

globals().update(translate("sklearn.linear_model.tests.test_sgd", [
    "test_early_stopping", "test_validation_set_not_used_for_training", "test_n_iter_no_change",
    "test_not_enough_sample_for_early_stopping", "test_sgd_early_stopping_with_partial_fit",
    "test_multi_thread_multi_class_and_early_stopping",
    "test_multi_core_gridsearch_and_early_stopping", "test_validation_mask_correctly_subsets",
    "test_sgd_error_on_zero_validation_weight",
    "test_provide_coef", "test_set_intercept_offset", "test_set_intercept_offset_binary",
    "test_set_intercept_to_intercept", "test_sgd_multiclass_with_init_coef",
    "test_set_coef_multiclass", "test_late_onset_averaging_reached"], SGD_REPLACEMENTS))

#: Expected failures whose score sits at the test's threshold: they may pass.
BORDERLINE = frozenset({"test_multi_core_gridsearch_and_early_stopping"})

EXPECTED_FAILURES = {
    "test_late_onset_averaging_reached":
        "compares the average with scikit-learn's one step per row to 16 decimals; "
        "daskglm's default batch_size=16 takes one step per epoch of the test's 6 rows",
    "test_multi_thread_multi_class_and_early_stopping":
        "mini-batch SGD (batch_size=16) with early stopping on iris runs 137 epochs, past "
        "the test's bound of n_iter_no_change + 20 for scikit-learn's per-row SGD",
    "test_multi_core_gridsearch_and_early_stopping":
        "mini-batch SGD (batch_size=16) with early stopping on iris scores 0.82 in the "
        "test's search with numpy 2.4 and scikit-learn 1.9 (its two best candidates 0.82 "
        "and 0.81; scikit-learn's per-row SGD 0.84), close to its 0.8 threshold",
    "test_validation_mask_correctly_subsets":
        "mocks scikit-learn's private _stochastic_gradient._ValidationScoreCallback",
}
