"""Why is it Pending?  kube-scheduler's filter phase, replayed offline.

:func:`explain_pod` takes a pod, the nodes and the other pods of a cluster
(plain dicts, as ``kubectl get -o json`` gives them) and says which nodes
would take the pod and, for every other node, why not, in kube-scheduler's
own words (kube-scheduler v1.37, default profile, default feature gates;
checked against the v1.37.2 source).  It reproduces the filter plugins
NodeName, NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
NodeResourcesFit, VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone
(:mod:`gpuop.explain.volumes`), PodTopologySpread (:mod:`gpuop.explain.spread`),
InterPodAffinity (:mod:`gpuop.explain.interpod`), DynamicResources (below) and
NodeDeclaredFeatures (:mod:`gpuop.explain.features`) in that order (the first
rejection ends a node's evaluation; NodeResourcesFit lists every resource the
node is short of), the PreFilters of NodeName, NodeAffinity, PodTopologySpread
and InterPodAffinity, SchedulingGates' PreEnqueue (a gated pod fits nowhere,
with the API server's ``SchedulingGated`` message), and the PostFilter
DefaultPreemption (victims counted out of the spread and affinity counts,
PodDisruptionBudgets spared as the scheduler spares them), so
that :attr:`PodExplanation.summary` is the ``FailedScheduling`` event
message::

    0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't
    match Pod's node affinity/selector. preemption: 0/3 nodes are
    available: 3 Preemption is not helpful for scheduling.

(on one line).  :class:`ExplainOptions` switches to older wordings.  Not
modelled: storage capacity, VolumeAttachments and inline disk conflicts, namespace labels other than ``kubernetes.io/metadata.name`` and non-default profiles; the
pod's warnings say when one of those applies.

Pods with ResourceClaims go through the DynamicResources filter when the
cluster's DRA objects are given (``dra=``, :mod:`gpuop.explain.claims`): the
structured allocator is replayed per node (:mod:`gpuop.dra.allocate`), and a
node it rejects gets ``cannot allocate all claims`` with, in ``details``, the
reason per request and per device. Extended resources that a DeviceClass backs
(``extendedResourceName``, or ``deviceclass.resource.kubernetes.io/<class>``; DRAExtendedResource,
GA in v1.37) are left by NodeResourcesFit to DynamicResources on nodes that do not advertise
them, where the claim the scheduler makes for them (one request per container, init
containers reusing the devices of those that run after them) is allocated with the pod's own.

Pure: no I/O and no API client.  VMIs and VMs are explained through
:mod:`gpuop.kubevirt.launcher`, which renders the launcher pod first.

JSON shape
----------
:meth:`PodExplanation.to_dict` returns, per pod (keys always present)::

    {
      "pod": "namespace/name",
      "feasible": ["node-a", ...],          # nodes that pass every filter, input order
      "nodes": [                            # every node, input order
        {
          "name": "node-b",
          "fits": false,
          "plugin": "NodeResourcesFit",     # the rejecting plugin; null when it fits
          "reasons": ["Insufficient nvidia.com/gpu"],   # scheduler's words
          "details": ["nvidia.com/gpu: requested 2, ..."],  # ours, for humans
          "insufficient": [                 # NodeResourcesFit only
            {"resource": "nvidia.com/gpu", "requested": 2, "used": 1,
             "allocatable": 2, "unresolvable": false}
          ],
          "preemption": ["No preemption victims found for incoming pod"]
        }
      ],
      "summary": "0/3 nodes are available: ...",   # full event message; null if feasible
      "filter_summary": "0/3 nodes are available: ....",  # without the PostFilter part
      "preemption": {"ran": true, "eligible": true, "possible": false,
                     "candidates": [{"node": "n", "victims": ["ns/pod"]}],
                     "nominated_node": null,      # the candidate it would pick
                     "message": "0/3 nodes are available: 3 ..."},
      "never_fits_anywhere": ["nvidia.com/NVIDIA_A10-12Q"],  # no node lists it at all
      "requests": {"cpu": "500m", "memory": "1073741824", "nvidia.com/gpu": "1"},
      "warnings": ["..."],
      "claims": [                           # only for pods with ResourceClaims
        {"node": "n", "fits": false, "error": null,   # error: the cycle aborts
         "reason": "claim ns/c, request gpu: wants 2, 1 usable device",
         "problems": ["pool gpu.nvidia.com/n is incomplete (being updated)"],
         "allocation": {"ns/c": ["gpu.nvidia.com/n/gpu-0"]},   # when it fits
         "by_request": [{"claim": "ns/c", "request": "gpu", "wanted": "2",
                         "usable": ["gpu-1"],
                         "considered": [{"device": "gpu-0",
                                         "reason": "already allocated to ns/x"}]}]}
      ]
    }

Units in ``insufficient`` and ``requests`` are the scheduler's: cpu in
millicores, everything else in whole units (bytes for memory).
"""

from gpuop.explain.engine import explain_pod, explain_pods, pod_key
from gpuop.explain.model import (
    Code,
    ExplainOptions,
    Insufficient,
    NodeVerdict,
    PodExplanation,
    PreemptionCandidate,
    PreemptionOutcome,
    Status,
)

__all__ = [
    "Code",
    "ExplainOptions",
    "Insufficient",
    "NodeVerdict",
    "PodExplanation",
    "PreemptionCandidate",
    "PreemptionOutcome",
    "Status",
    "explain_pod",
    "explain_pods",
    "pod_key",
]
