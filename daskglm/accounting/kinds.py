"""The kinds of rounds the ledger records: one constant each, named once."""

__all__ = ["Kind"]

class Kind:
    """The kinds of rounds, as the ledger records them (see the table above)."""

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
    FOLD_GRAM = "fold_gram"  # the Gram statistics of every cross-validation fold, one pass
    HELD_OUT = "held_out"  # losses of several models on one fold's held-out rows
    LEAVE_ONE_OUT = "leave_one_out"  # ridge's leave-one-out errors for every alpha
    FOLD_MOMENTS = "fold_moments"  # column moments and weight of one fold's training rows
