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
    VALIDATE_GRAM = "validate_gram"  # validation and the normal equations' Gram, one read
    VALIDATE_GRADIENT = "validate_gradient"  # validation and the first loss and gradient
    VALIDATE_HESSIAN = "validate_hessian"  # validation and the first loss, gradient, Hessian
    LOCAL_SOLVE = "local_solve"
    SIZES = "sizes"
    SGD_BATCH = "sgd_batch"
    LOCAL_SGD = "local_sgd"
    STEP_PROBE = "step_probe"  # local steps timed to size the rounds, their results dropped
    PUSH = "push"  # updates pushed to a parameter holder (one record when it is closed)
    PULL = "pull"  # parameters pulled from a parameter holder (the same)
    COMPRESSED_BATCH = "compressed_batch"  # sgd step, each partition's gradient compressed
    COMPRESSED_LOCAL_SGD = "compressed_local_sgd"  # local sgd, model deltas compressed
    DEADLINE_BATCH = "deadline_batch"  # sgd step taking the partitions that arrive in time
    DEADLINE_LOCAL_SGD = "deadline_local_sgd"  # local sgd averaging the partitions in time
    COMPRESSED_GRADIENT = "compressed_gradient"  # gd: each partition's gradient compressed
    DEADLINE_GRADIENT = "deadline_gradient"  # gd: the partitions that arrive in time
    PUT_STATE = "put_state"  # partition states sent from the driver
    FETCH_STATE = "fetch_state"  # partition states shipped to the driver
    COMPUTE_STATE = "compute_state"  # partition states computed where they live (cluster ids)
    SPARSE_GRADIENT = "sparse_gradient"  # partitions pull from / push to column shards
    SHARD_COLUMNS = "shard_columns"  # partitions give their touched columns to their worker (once)
    SHARD_REGISTER = "shard_register"  # a worker's touched columns, to the shards (once)
    SHARD_PULL = "shard_pull"  # coefficients on a worker's touched columns, shards to workers
    SHARD_PUSH = "shard_push"  # a worker's gradient sums on its touched columns, to the shards
    SHARD_OP = "shard_op"  # a coordinator's command on every shard (scalars both ways)
    SHARD_LOAD = "shard_load"  # the parameter vector split onto the shards (start of a fit)
    SHARD_FETCH = "shard_fetch"  # the parameter vector gathered from them (end of a fit)
    BLOCK_SPLIT = "block_split"  # dense X cut into feature-block tiles, each to its shard's worker
    BLOCK_GRADIENT = "block_gradient"  # tiles' predictors summed per row, residuals back
    TARGET_MEAN = "target_mean"  # weighted sums of the target and offset: start, null model
    INFERENCE = "inference"  # information, sandwich meat, deviances after a fit
    ROBUST = "robust"  # HC2/HC3 meats from leverages, score sums per cluster, after inference
    NULL_MODEL = "null_model"  # Newton steps of the intercept-only model with an offset
    FOLD_GRAM = "fold_gram"  # the Gram statistics of every cross-validation fold, one pass
    HELD_OUT = "held_out"  # losses of several models on one fold's held-out rows
    LEAVE_ONE_OUT = "leave_one_out"  # ridge's leave-one-out errors for every alpha
    FOLD_MOMENTS = "fold_moments"  # column moments and weight of one fold's training rows
    ASYNC_SGD = "async_sgd"  # one generation of parameter-server SGD tasks (solver "async")
    GOSSIP = "gossip"  # local steps of every node's own model (solver "gossip")
    GOSSIP_EXCHANGE = "gossip_exchange"  # each node's model mixed with its neighbours'
    GOSSIP_START = "gossip_start"  # every node's first model and partition index
    GOSSIP_FETCH = "gossip_fetch"  # the nodes' models fetched once, at the end, to average
    CLASS_MOMENTS = "class_moments"  # column moments again after class weights (> 64 classes)
    #: a Dask computation an estimator runs itself, outside the engine's rounds (the
    #: classes of labels that are not numbers, class counts, the labels a stratified
    #: splitter reads): timed, its input bytes read counted, its traffic not measured
    DRIVER_PASS = "driver_pass"
    VALIDATION_SCORE = "validation_score"  # SGD's early stopping: the held-out rows' score sums
