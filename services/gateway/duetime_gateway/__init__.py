"""The HTTP/JSON and gRPC-web gateway: Envoy in front of the api."""
