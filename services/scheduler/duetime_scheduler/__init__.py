"""The scheduler: claims due occurrences for the partitions it owns (``claimer``), serves the
WorkerService (``worker_servicer``) and keeps the run-history partitions (``maintenance``)."""

from duetime_infra.logs import quiet_grpc_core

quiet_grpc_core()  # before anything imports grpc
