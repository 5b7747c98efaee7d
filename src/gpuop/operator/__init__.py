"""The operator: keeps GPU nodes' labels, operand DaemonSets and ClusterPolicy status right.

`reconcile` decides (pure), `runtime` watches and writes, `metrics` counts.
"""
