"""Duetime's web console: pages for teams and operators over the API's gRPC contract."""

from duetime_infra.logs import quiet_grpc_core

quiet_grpc_core()  # before anything imports grpc
