"""A Dask client on a local cluster for the sweep tests: one-thread workers, no dashboard
on a fixed port, the cluster's logs kept below errors."""

from __future__ import annotations

import contextlib
import logging


@contextlib.contextmanager
def local_client(workers: int, processes: bool):
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
