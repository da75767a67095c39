"""Adapters the services share: ``pg`` (stores, named queries, migrations), ``etcd``
(partition leases), ``kafka`` (producer, consumer groups), ``grpc`` (server, auth, error
mapping), ``codec`` (proto <-> domain), ``telemetry``, TLS and configuration."""
