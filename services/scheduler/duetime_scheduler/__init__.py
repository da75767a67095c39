"""The scheduler: claims due occurrences for the partitions it owns (``claimer``), serves the
WorkerService (``worker_servicer``) and keeps the run-history partitions (``maintenance``)."""
