"""The relay: publishes the outbox to Kafka (``relay``), re-dispatches runs whose dispatch
message was lost (``reconciler``) and samples the outbox's depth (``outbox_gauges``)."""
