"""The relay: publishes the outbox to Kafka (``relay``), re-dispatches runs whose dispatch
message was lost (``reconciler``) and samples the outbox's depth (``outbox_gauges``)."""

from duetime_infra.logs import quiet_grpc_core

quiet_grpc_core()  # before anything imports grpc
