"""The worker: consumes run dispatches (``consumer``), starts and reports attempts through
the scheduler (``attempts``, ``batching``, ``heartbeat``), calls HTTP targets or launches
containers and processes (``http_target``, ``launchers``), and delivers notifications
(``notifier``)."""

import os

# grpcio's fork support re-arms its pollers in a forked child, which can crash the child
# before it execs (grpc/grpc#43055: "Check failure" from podman commands here). The worker
# forks for every podman command and local process and never uses gRPC in a child, so it is
# off unless the environment says otherwise; set before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from duetime_infra.logs import quiet_grpc_core

quiet_grpc_core()  # before anything imports grpc
