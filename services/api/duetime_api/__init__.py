"""The public API service: JobService and AdminService (``servicer``, ``admin_servicer``)
over the rules of ``jobs`` and the stores; ``__main__`` serves them."""

from duetime_infra.logs import quiet_grpc_core

quiet_grpc_core()  # before anything imports grpc
