"""The pinned versions of every control-plane component, and how each one is built.

Why this module exists: the Go wrapper modules under ``controlplane/modules/``, the binary cache
layout, the download URLs, the version stamp the apiserver reports on ``/version`` and the
``cluster.json`` of a running cluster all have to agree on one version per component.
Changing a version means changing it here and in the matching
``controlplane/modules/<component>/go.mod`` (and its go.sum), nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

KUBERNETES_VERSION = "v1.37.2"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"
HELM_VERSION = "v3.22.0"

# Feature gates the API server, controller manager and scheduler all run with (Kubernetes
# wants one view across components). DRAPartitionableDevices (KEP-4815) lets ResourceSlices
# carry shared counters that devices consume: gpuop's race-free mixed nodes publish each
# card's roles against one counter set (docs/dra.md). Alpha and off in 1.33-1.35, beta and on
# by default since 1.36; named anyway, so the cluster says what it relies on. Without it the
# API server drops `sharedCounters` and `consumesCounters` from every slice it stores.
FEATURE_GATES: dict[str, bool] = {"DRAPartitionableDevices": True}

# API versions served beyond the defaults: resource.k8s.io/v1 (DRA, GA since 1.34) is on by
# default; named so a DRA test never runs against a server that lacks it.
RUNTIME_CONFIG: dict[str, bool] = {"resource.k8s.io/v1": True}


def feature_gates_flag() -> str:
    """``--feature-gates=...`` for every control-plane component."""
    return "--feature-gates=" + ",".join(
        f"{gate}={str(on).lower()}" for gate, on in sorted(FEATURE_GATES.items())
    )


def runtime_config_flag() -> str:
    """``--runtime-config=...`` for the API server."""
    return "--runtime-config=" + ",".join(
        f"{api}={str(on).lower()}" for api, on in sorted(RUNTIME_CONFIG.items())
    )


# Upstream's release date of KUBERNETES_VERSION, stamped into the binaries like
# hack/lib/version.sh does, so a rebuild is byte-for-byte reproducible.
KUBERNETES_BUILD_DATE = "2026-10-27T12:01:04Z"


@dataclass(frozen=True)
class Component:
    """One cached, versioned set of binaries built from one Go wrapper module."""

    name: str
    version: str
    binaries: tuple[str, ...]
    packages: tuple[str, ...]
    tags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ("-s", "-w")

    @property
    def dir_name(self) -> str:
        """The cache folder name, e.g. ``kubernetes-v1.37.2``."""
        return f"{self.name}-{self.version}"

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def _kubernetes_ldflags(version: str, build_date: str) -> tuple[str, ...]:
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor={major}",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={build_date}",
        ]
    return tuple(flags)


ETCD = Component(
    name="etcd",
    version=ETCD_VERSION,
    binaries=("etcd",),
    packages=("go.etcd.io/etcd/server/v3",),
)

KWOK = Component(
    name="kwok",
    version=KWOK_VERSION,
    binaries=("kwok",),
    packages=("sigs.k8s.io/kwok/cmd/kwok",),
)

KUBERNETES = Component(
    name="kubernetes",
    version=KUBERNETES_VERSION,
    binaries=("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
    packages=(
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-scheduler",
        "k8s.io/kubernetes/cmd/kubectl",
    ),
    tags=("selinux", "notest", "grpcnotrace"),
    ldflags=_kubernetes_ldflags(KUBERNETES_VERSION, KUBERNETES_BUILD_DATE),
)

# Helm's version stamps, as helm's Makefile sets them; the Kubernetes version it assumes for
# `helm template` and `helm lint` (without a cluster) is the control plane's.
_KUBE_MAJOR, _KUBE_MINOR = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
HELM = Component(
    name="helm",
    version=HELM_VERSION,
    binaries=("helm",),
    packages=("helm.sh/helm/v3/cmd/helm",),
    ldflags=(
        "-s",
        "-w",
        f"-X helm.sh/helm/v3/internal/version.version={HELM_VERSION}",
        "-X helm.sh/helm/v3/internal/version.gitTreeState=clean",
        *(
            f"-X helm.sh/helm/v3/pkg/{pkg}.k8sVersion{part}={value}"
            for pkg in ("lint/rules", "chartutil")
            for part, value in (("Major", _KUBE_MAJOR), ("Minor", _KUBE_MINOR))
        ),
    ),
)

# Build order: the small ones first, so a broken toolchain shows up in a minute, not in 30.
COMPONENTS: tuple[Component, ...] = (ETCD, KWOK, KUBERNETES)

# Built and cached like the control plane, but no cluster needs them to start: helm installs the
# chart in deploy/helm/gpuop (the e2e tests and `gpuop cluster build` make it).
TOOLS: tuple[Component, ...] = (HELM,)


def component(name: str) -> Component:
    """The component called ``name``; raises KeyError for an unknown one."""
    for comp in (*COMPONENTS, *TOOLS):
        if comp.name == name:
            return comp
    raise KeyError(name)


def versions() -> dict[str, str]:
    """Component name -> version, as written to ``cluster.json``."""
    return {comp.name: comp.version for comp in COMPONENTS}
