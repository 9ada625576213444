"""The kinds of rounds the ledger records: one constant each, named once."""

__all__ = ["Kind"]


class Kind:
    """The kinds of rounds, as the ledger records them (the byte model of each is in
    :mod:`daskglm.accounting.bytemodel`)."""

    VALIDATE = "validate"
    MAXIMA = "maxima"  # largest |value| per column, only for columns of extreme scale
    SCALE = "scale"  # those columns multiplied by powers of two where they live
    ENCODE = "encode"  # class labels encoded as 0/1 where they live
    GRADIENT = "gradient"
    HESSIAN = "hessian"
    GRAM = "gram"
    LOCAL_SOLVE = "local_solve"
    SIZES = "sizes"
    SGD_BATCH = "sgd_batch"
    LOCAL_SGD = "local_sgd"
    PUSH = "push"  # updates pushed to a parameter holder (one record when it is closed)
    PULL = "pull"  # parameters pulled from a parameter holder (the same)
    TARGET_MEAN = "target_mean"  # weighted sums of the target and offset: start, null model
    INFERENCE = "inference"  # information, sandwich meat, deviances after a fit
    NULL_MODEL = "null_model"  # Newton steps of the intercept-only model with an offset
