"""scikit-learn's own tests of Lasso's and ElasticNet's ``dual_gap_``, run on daskglm's
estimators through :mod:`.adapter`."""

from .adapter import translate

LM = "sklearn.linear_model.tests."
globals().update(translate(LM + "test_coordinate_descent", [
    "test_lasso_zero", "test_lasso_toy", "test_enet_toy", "test_lasso_dual_gap",
    "test_lasso_readonly_data", "test_enet_multitarget", "test_check_input_false"]))
globals().update({name + "_sparse": test for name, test in translate(
    LM + "test_sparse_coordinate_descent", [
        "test_lasso_zero", "test_enet_toy_list_input", "test_enet_toy_explicit_sparse_input",
        "test_sparse_lasso_not_as_toy_dataset", "test_enet_multitarget"]).items()
    if name.startswith("test_")})

EXPECTED_FAILURES = {
    "test_check_input_false": "expects a ValueError for C-ordered X with check_input=False "
                              "(scikit-learn's Fortran-order requirement); daskglm checks "
                              "and takes any layout",
}
