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
    ASYNC_SGD = "async_sgd"  # one generation of parameter-server SGD tasks (solver "async")
    GOSSIP = "gossip"  # local steps of every node's own model (solver "gossip")
    GOSSIP_EXCHANGE = "gossip_exchange"  # each node's model mixed with its neighbours'
    GOSSIP_START = "gossip_start"  # every node's first model and partition index
    GOSSIP_FETCH = "gossip_fetch"  # the nodes' models fetched once, at the end, to average
