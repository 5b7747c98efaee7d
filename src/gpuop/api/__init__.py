"""gpuop's vocabulary: the words every layer shares, and nothing else.

Why this package exists: label and annotation keys, ClusterPolicy condition types and
reasons, the resource-kind to workload-config mapping and the "which ClusterPolicy is
active" rule used to be spelled in each module that needed them, and two of the spellings
had drifted apart. Here each is written once, at the bottom of the layer stack (only the
operand table in `gpuop.catalog` sits below it), so a typo is an import error and the
operator, the simulator, the checker and the docs say the same thing.

* `gpuop.api.labels`: every label and annotation key gpuop reads or writes;
* `gpuop.api.conditions`: condition types and reasons as `StrEnum`, and the pure
  condition merge (`merge_conditions`, `status_differs`);
* `gpuop.api.resources`: resource names, resource kinds, and which workload config
  advertises which kind, derived from the operand table;
* `gpuop.api.policies`: `select_active(policies)`, the one active-ClusterPolicy rule.

Modules here are pure: no I/O, no Kubernetes client, no policy parsing.
"""
