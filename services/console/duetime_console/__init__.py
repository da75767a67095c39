"""Duetime's web console."""
