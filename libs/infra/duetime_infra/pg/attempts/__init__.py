"""The attempts aggregate: starts, heartbeats, reports (one and in batches) and the reaper."""
