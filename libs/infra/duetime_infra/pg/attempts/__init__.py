"""The attempts aggregate: starts and reports (in batches: a single one is a batch of one),
heartbeats and the reaper."""
