"""Traces and metrics: OpenTelemetry set up from the standard OTEL_* variables."""
