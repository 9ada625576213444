"""The benchmarks' data sets: the same X and targets persisted on the workers or read from
a zarr store, and where a set too large for memory is kept."""

import os

import numpy as np

from benchmarks.data import DataSpec, choose_storage, make_data, memory_needed


def test_a_zarr_data_set_holds_the_persisted_one_and_is_removed_on_close(client, tmp_path):
    spec = DataSpec(n_samples=3000, n_features=5, n_partitions=3, seed=4)
    persisted = make_data(spec, client)
    stored = make_data(spec, client, storage="zarr", directory=tmp_path)
    assert sum(persisted.placement) == 3 and stored.placement is None
    assert stored.storage == "zarr" and os.path.isdir(stored.directory)
    assert stored.X.chunks == persisted.X.chunks
    np.testing.assert_array_equal(stored.X.compute(), persisted.X_local)
    np.testing.assert_array_equal(np.asarray(stored.X_local), persisted.X_local)
    assert isinstance(stored.X_local, np.memmap)
    for kind in persisted.targets_local:
        np.testing.assert_array_equal(stored.target(kind).compute(),
                                      persisted.target_local(kind))
        np.testing.assert_array_equal(stored.target_local(kind), persisted.target_local(kind))
    np.testing.assert_array_equal(stored.true_coef, persisted.true_coef)
    again = make_data(spec, client, local=stored, storage="zarr")  # a scaling run's copy
    assert again.directory == stored.directory
    directory = stored.directory
    stored.close()
    assert not os.path.exists(directory) and stored.X_local is None


def test_storage_is_memory_where_the_set_fits_and_zarr_where_only_a_store_does():
    spec = DataSpec(n_samples=10_000_000, n_features=100, n_partitions=16, storage="auto")
    in_memory, in_store = memory_needed(spec, "memory"), memory_needed(spec, "zarr")
    assert in_store < spec.nbytes < in_memory
    assert choose_storage(spec, in_memory) == "memory"
    assert choose_storage(spec, in_memory - 1) == "zarr"
    assert choose_storage(spec, in_store - 1) is None
    fixed = DataSpec(n_samples=1000, n_features=5, n_partitions=2)
    assert choose_storage(fixed, memory_needed(fixed) - 1) is None
