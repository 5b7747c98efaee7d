"""The lab: the user's three-node GPU scenario on a local cluster, end to end (see runner)."""
