"""Numerical optimisation on in-memory vectors, with no data and no Dask: the L-BFGS loops
(scipy's, restarted to a tolerance, and the vector-free form of sharded fits), the
symmetric solves of Newton's method and the normal equations, and SGD's step rules.

The driver's solvers (:mod:`daskglm.solvers`) run them between rounds, and the kernels
(:mod:`daskglm.compute`) on the workers where a partition solves its own problem (the
local solves of averaging and ADMM) or steps its own model (SGD's step rules).
"""
