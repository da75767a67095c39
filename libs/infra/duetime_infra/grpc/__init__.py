"""The gRPC layer: server set-up (``server``), bearer-token auth and the call's principal
(``auth``), the interceptor that maps domain errors to google.rpc.Status (``interceptors``,
``status``), channels and TLS credentials. Stores never import it (a layering contract)."""
