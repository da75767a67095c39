"""Kafka (aiokafka): the batching producer, consumer-group helpers, topic names and the
connection set-up shared by the relay and the worker."""
