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
    SPARSE_GRADIENT = "sparse_gradient"  # partitions pull from / push to column shards
    SHARD_REGISTER = "shard_register"  # a partition's touched columns, to the shards (once)
    SHARD_PULL = "shard_pull"  # coefficients on the touched columns, shards to partitions
    SHARD_PUSH = "shard_push"  # gradient sums on the touched columns, partitions to shards
    SHARD_OP = "shard_op"  # a coordinator's command on every shard (scalars both ways)
    SHARD_LOAD = "shard_load"  # the parameter vector split onto the shards (start of a fit)
    SHARD_FETCH = "shard_fetch"  # the parameter vector gathered from them (end of a fit)
    BLOCK_SPLIT = "block_split"  # dense X cut into feature-block tiles, each to its shard's worker
    BLOCK_GRADIENT = "block_gradient"  # tiles' predictors summed per row, residuals back
    TARGET_MEAN = "target_mean"  # weighted sums of the target and offset: start, null model
    INFERENCE = "inference"  # information, sandwich meat, deviances after a fit
    NULL_MODEL = "null_model"  # Newton steps of the intercept-only model with an offset
