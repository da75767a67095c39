"""The worker: consumes run dispatches (``consumer``), starts and reports attempts through
the scheduler (``attempts``, ``batching``, ``heartbeat``), calls HTTP targets or launches
containers and processes (``http_target``, ``launchers``), and delivers notifications
(``notifier``)."""
