"""scikit-learn's own tests that float32 input gives float32 coefficients (and the same
fit as float64), run on daskglm's estimators through :mod:`.adapter`."""

from .adapter import SGD_REPLACEMENTS, translate

LM = "sklearn.linear_model.tests."
globals().update(translate(LM + "test_logistic", ["test_dtype_match"]))
globals().update({name + "_ridge": test for name, test in translate(
    LM + "test_ridge", ["test_dtype_match", "test_dtype_match_cholesky"]).items()
    if name.startswith("test_")})
globals().update(translate(LM + "test_coordinate_descent", ["test_enet_float_precision"]))
globals().update(translate(LM + "test_sgd", ["test_sgd_dtype_match",
                                            "test_sgd_numerical_consistency"],
                           SGD_REPLACEMENTS))

EXPECTED_FAILURES = {
    **{f"test_dtype_match[{container}-{multi}-liblinear]":
       "solver='liblinear' penalises the intercept, a different objective; daskglm refuses it"
       for container in ("csr_matrix", "csr_array") for multi in ("False", "True")},
}
