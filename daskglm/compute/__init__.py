"""Per-partition computation: no Dask."""
