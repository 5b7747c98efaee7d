"""Random but reproducible DRA claim cases, for checking `gpuop explain` against kube-scheduler.

Each case is a few nodes with GPUs published as DRA devices and one claim spec (one or two
claims of one or two requests) for a pod:

* nodes publish their cards in one of the ways a driver does: race-free (a counter set per
  card that its ``gpu`` and ``vfio`` devices both consume; a counters slice and a devices slice),
  two-faced without counters (NVIDIA's driver as it is), container-only, partitioned (a whole
  card and two halves of it as ``mig`` devices sharing 2 units of one counter set), or
  race-free with the counters slice missing (a pool being updated);
* some devices are already held by other claims (``status.allocation`` written directly, as
  a scheduler leaves it), only in states a scheduler can produce;
* the requests mix device classes, counts, ``allocationMode: All``, ``firstAvailable`` and
  selectors: CEL on ``productName``, on memory with ``quantity()``, on the driver version with
  ``semver()``, impossible ones, and one that reads a missing attribute (a CEL runtime error).

The scheduler's feasible node set is measured with one probe pod per node of the case, pinned
to it by ``matchFields metadata.name`` and using its own copies of the claims
(``resourceClaimName``), so probes never compete for a device. ``explain_pod`` is the pod to
explain: the same claims through ResourceClaimTemplates, restricted to the case's nodes by
label; its feasible set must be the set of nodes whose probe was bound.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from typing import Any, Final

DRIVER: Final = "gpu.nvidia.com"
CASE_LABEL: Final = "dra.corpus.gpuop.dev/case"
PAUSE: Final = "registry.k8s.io/pause:3.10"

#: The DeviceClasses of NVIDIA's operator (manifests/state-dra-driver/04*.yaml).
DEVICE_CLASSES: Final = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
    "vfio.gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
}

_PRODUCTS: Final = (
    ("NVIDIA A10", "24Gi"),
    ("NVIDIA L4", "24Gi"),
    ("NVIDIA A100-SXM4-40GB", "40Gi"),
    ("NVIDIA A100-SXM4-80GB", "80Gi"),
    ("NVIDIA H100 80GB HBM3", "80Gi"),
)
_DRIVER_VERSIONS: Final = ("535.183.1", "550.54.15", "570.86.10")
_STYLES: Final = (
    "counters",
    "counters",
    "counters",
    "plain",
    "plain",
    "gpu-only",
    "mig",
    "incomplete",
)
_SELECTORS: Final = (
    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A10'",
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('a100')",
    "device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H100')",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
    "device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('32Gi'))",
    "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('550.0.0'))",
    "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('1Ti'))",
    "has(device.attributes['gpu.nvidia.com'].serial) || device.attributes['gpu.nvidia.com'].index >= 1",
)
#: Reads an attribute no device has: a CEL runtime error, which aborts the scheduling cycle.
_MISSING_ATTRIBUTE: Final = "device.attributes['gpu.nvidia.com'].serial == 'S-1'"


def device_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expr}}]},
        }
        for name, expr in DEVICE_CLASSES.items()
    ]


@dataclass
class DraCase:
    name: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    slices: list[dict[str, Any]] = field(default_factory=list)
    #: (claim, status) pairs: create the claim, then write its status.
    held: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    probe_claims: list[dict[str, Any]] = field(default_factory=list)
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)  # node -> pod
    explain_pod: dict[str, Any] = field(default_factory=dict)


def _attrs(kind: str, product: str, version: str, index: int, uuid: str) -> dict[str, Any]:
    return {
        "type": {"string": kind},
        "productName": {"string": product},
        "driverVersion": {"version": version},
        "index": {"int": index},
        "uuid": {"string": uuid},
    }


def _device(
    name: str, attrs: dict[str, Any], memory: str, uses: dict[str, int] | None, cs: str
) -> dict[str, Any]:
    dev: dict[str, Any] = {
        "name": name,
        "attributes": attrs,
        "capacity": {"memory": {"value": memory}},
    }
    if uses:
        dev["consumesCounters"] = [
            {"counterSet": cs, "counters": {k: {"value": str(v)} for k, v in uses.items()}}
        ]
    return dev


def _slice(node: str, suffix: str, count: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{suffix}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": count},
            **spec,
        },
    }


def _publish(rng: random.Random, node: str) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """The node's slices, and its devices grouped by the card they share."""
    style = rng.choice(_STYLES)
    product, memory = rng.choice(_PRODUCTS)
    version = rng.choice(_DRIVER_VERSIONS)
    devices: list[dict[str, Any]] = []
    counter_sets: list[dict[str, Any]] = []
    cards: list[list[str]] = []
    for i in range(rng.randint(1, 4)):
        uuid = f"GPU-{node}-{i}"
        cs = f"gpu-{i}-counter-set"
        if style == "mig":
            counter_sets.append({"name": cs, "counters": {"memory-slices": {"value": "2"}}})
            devices.append(
                _device(
                    f"gpu-{i}",
                    _attrs("gpu", product, version, i, uuid),
                    memory,
                    {"memory-slices": 2},
                    cs,
                )
            )
            for half in range(2):
                devices.append(
                    _device(
                        f"gpu-{i}-mig-{half}",
                        _attrs("mig", product, version, i, uuid),
                        "10Gi",
                        {"memory-slices": 1},
                        cs,
                    )
                )
            cards.append([f"gpu-{i}", f"gpu-{i}-mig-0", f"gpu-{i}-mig-1"])
            continue
        counted = style in ("counters", "incomplete")
        uses = {"card": 1} if counted else None
        if counted:
            counter_sets.append({"name": cs, "counters": {"card": {"value": "1"}}})
        devices.append(
            _device(f"gpu-{i}", _attrs("gpu", product, version, i, uuid), memory, uses, cs)
        )
        names = [f"gpu-{i}"]
        if style != "gpu-only":
            devices.append(
                _device(
                    f"gpu-vfio-{i}", _attrs("vfio", product, version, i, uuid), memory, uses, cs
                )
            )
            names.append(f"gpu-vfio-{i}")
        cards.append(names)
    if not counter_sets:
        return [_slice(node, "devices", 1, {"devices": devices})], cards
    slices = [_slice(node, "devices", 2, {"devices": devices})]
    if style != "incomplete":
        slices.append(_slice(node, "counters", 2, {"sharedCounters": counter_sets}))
    return slices, cards


def _held_choice(rng: random.Random, cards: list[list[str]]) -> list[str]:
    """Devices other claims hold, as a scheduler could have allocated them."""
    held: list[str] = []
    for card in cards:
        roll = rng.random()
        if roll < 0.7:
            continue
        if any("-mig-" in d for d in card) and roll < 0.85:
            held.extend(rng.sample(card[1:], rng.randint(1, 2)))  # one or both halves
        else:
            held.append(rng.choice(card))
    return held


def _exactly(rng: random.Random) -> dict[str, Any]:
    klass = rng.choices(list(DEVICE_CLASSES), weights=(6, 1, 3))[0]
    exactly: dict[str, Any] = {"deviceClassName": klass}
    if rng.random() < 0.1:
        exactly["allocationMode"] = "All"
    else:
        count = rng.choices((1, 2, 3), weights=(8, 3, 1))[0]
        if count > 1:
            exactly["count"] = count
    exprs = (
        rng.sample(_SELECTORS, rng.choices((1, 2), weights=(4, 1))[0]) if rng.random() < 0.4 else []
    )
    if rng.random() < 0.03:
        exprs.append(_MISSING_ATTRIBUTE)
    if exprs:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in exprs]
    return exactly


def _claim_spec(rng: random.Random) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    for r in range(rng.choices((1, 2), weights=(4, 1))[0]):
        if rng.random() < 0.1:
            first, second = _exactly(rng), _exactly(rng)
            requests.append(
                {
                    "name": f"r{r}",
                    "firstAvailable": [{"name": "a", **first}, {"name": "b", **second}],
                }
            )
        else:
            requests.append({"name": f"r{r}", "exactly": _exactly(rng)})
    return {"devices": {"requests": requests}}


def _claim(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": copy.deepcopy(spec),
    }


def _pod(
    name: str, namespace: str, claims: list[dict[str, str]], placement: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            **placement,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE,
                    "resources": {"claims": [{"name": c["name"]} for c in claims]},
                }
            ],
            "resourceClaims": claims,
        },
    }


def generate_case(seed: int, index: int, *, prefix: str, namespace: str) -> DraCase:
    rng = random.Random(f"{seed}/{index}")
    name = f"{prefix}-{index}"
    case = DraCase(name)
    node_names = [f"{name}-n{j}" for j in range(rng.choices((1, 2, 3), weights=(2, 3, 2))[0])]
    for node in node_names:
        case.nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": node,
                    "labels": {"kubernetes.io/hostname": node, CASE_LABEL: name},
                },
                "status": {
                    "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                    "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                },
            }
        )
        slices, cards = _publish(rng, node)
        case.slices.extend(slices)
        for k, device in enumerate(_held_choice(rng, cards)):
            held = _claim(
                f"{node}-held-{k}",
                namespace,
                {
                    "devices": {
                        "requests": [
                            {"name": "x", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
                        ]
                    }
                },
            )
            status = {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "x", "driver": DRIVER, "pool": node, "device": device}
                        ]
                    }
                }
            }
            case.held.append((held, status))
    specs = [_claim_spec(rng) for _ in range(rng.choices((1, 2), weights=(4, 1))[0])]
    template_refs = []
    for k, spec in enumerate(specs):
        template = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"{name}-t{k}", "namespace": namespace},
            "spec": {"spec": copy.deepcopy(spec)},
        }
        case.templates.append(template)
        template_refs.append({"name": f"c{k}", "resourceClaimTemplateName": f"{name}-t{k}"})
    case.explain_pod = _pod(
        f"{name}-pod", namespace, template_refs, {"nodeSelector": {CASE_LABEL: name}}
    )
    for j, node in enumerate(node_names):
        refs = []
        for k, spec in enumerate(specs):
            claim = _claim(f"{name}-p{j}-c{k}", namespace, spec)
            case.probe_claims.append(claim)
            refs.append({"name": f"c{k}", "resourceClaimName": claim["metadata"]["name"]})
        pin = {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [node]}
                                ]
                            }
                        ]
                    }
                }
            }
        }
        case.probes[node] = _pod(f"{name}-p{j}", namespace, refs, pin)
    return case
