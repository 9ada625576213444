from tests.sklearn_suite.adapter import translate
globals().update(translate("sklearn.linear_model._glm.tests.test_glm", [
    "test_sample_weights_validation", "test_tweedie_score", "test_tags"]))
