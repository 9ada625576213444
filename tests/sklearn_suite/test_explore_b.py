import numpy as np
import scipy.sparse as sp
from sklearn.utils._sparse import _align_api_if_sparse
import daskglm
from tests.sklearn_suite.adapter import translate
LM = "sklearn.linear_model.tests."


class _SparseSGDClassifier(daskglm.SGDClassifier):
    def fit(self, X, y, *args, **kw):
        return super().fit(_align_api_if_sparse(sp.csr_array(X)), y, *args, **kw)

    def partial_fit(self, X, y, *args, **kw):
        return super().partial_fit(_align_api_if_sparse(sp.csr_array(X)), y, *args, **kw)

    def decision_function(self, X):
        return super().decision_function(_align_api_if_sparse(sp.csr_array(X)))

    def predict_proba(self, X):
        return super().predict_proba(_align_api_if_sparse(sp.csr_array(X)))


class _SparseSGDRegressor(daskglm.SGDRegressor):
    def fit(self, X, y, *args, **kw):
        return super().fit(_align_api_if_sparse(sp.csr_array(X)), y, *args, **kw)

    def partial_fit(self, X, y, *args, **kw):
        return super().partial_fit(_align_api_if_sparse(sp.csr_array(X)), y, *args, **kw)


globals().update(translate(LM + "test_sgd", [
    "test_early_stopping", "test_validation_set_not_used_for_training", "test_n_iter_no_change",
    "test_not_enough_sample_for_early_stopping", "test_sgd_early_stopping_with_partial_fit",
    "test_multi_thread_multi_class_and_early_stopping", "test_multi_core_gridsearch_and_early_stopping",
    "test_validation_mask_correctly_subsets", "test_sgd_error_on_zero_validation_weight",
    "test_provide_coef", "test_set_intercept_offset", "test_set_intercept_offset_binary",
    "test_set_intercept_to_intercept", "test_sgd_multiclass_with_init_coef", "test_set_coef_multiclass",
    "test_late_onset_averaging_reached",
    "test_partial_fit_weight_class_balanced", "test_class_weights", "test_equal_class_weight",
    "test_wrong_class_weight_label", "test_weights_multiplied", "test_balanced_weight",
    "test_sgd_dtype_match", "test_sgd_numerical_consistency"],
    {"_SparseSGDClassifier": _SparseSGDClassifier, "_SparseSGDRegressor": _SparseSGDRegressor}))
