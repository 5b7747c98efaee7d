"""What `gpuop cluster status` reports of a local cluster: each component's state, the
processes with their memory, and the cluster's record (`cluster.json`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from gpuop.controlplane import procs
from gpuop.controlplane.components import ETCD

State = Literal["running", "stopped", "stale", "foreign"]


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    state: State
    pid: int | None
    detail: str = ""


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    state_dir: str
    state: Literal["running", "stopped", "partial"]
    api_url: str | None
    kubeconfig: str | None
    api_ready: bool
    components: list[ComponentStatus]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProcessUsage:
    """One process of a cluster: is it alive, which loopback ports it owns, its memory."""

    name: str
    pid: int | None
    alive: bool
    ports: list[int]
    rss_bytes: int | None
    detail: str = ""


@dataclass(frozen=True)
class ClusterOverview:
    """What ``gpuop cluster status`` lists for one cluster."""

    name: str
    state_dir: str
    state: Literal["running", "stopped", "partial"]
    api_url: str | None
    api_ready: bool
    processes: list[ProcessUsage]

    @property
    def alive(self) -> list[ProcessUsage]:
        return [p for p in self.processes if p.alive]

    @property
    def rss_bytes(self) -> int:
        return sum(p.rss_bytes or 0 for p in self.alive)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rss_bytes": self.rss_bytes}


@dataclass(frozen=True)
class ClusterInfo:
    """What ``up`` reports and ``cluster.json`` holds."""

    name: str
    state_dir: str
    api_url: str
    kubeconfig: str
    audit_log: str
    ports: dict[str, int]
    pids: dict[str, int]
    versions: dict[str, str]
    started_at: str
    start_seconds: float
    already_running: bool = False
    messages: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterInfo:
        known = set(cls.__dataclass_fields__)
        return cls(**{key: value for key, value in data.items() if key in known})


def overview_of(
    name: str,
    state_dir: Path,
    status: ClusterStatus,
    ports: dict[str, int],
    extra_processes: dict[str, int],
) -> ClusterOverview:
    """Every process of the cluster with its pid, liveness, ports and resident memory.

    `extra_processes` (name -> pid) count as alive only while that pid runs a program with
    the cluster's state directory on its command line.
    """
    marker = f"{state_dir}/"
    processes = []
    for component in status.components:
        alive = component.state == "running" and component.pid is not None
        own = [ports[component.name]] if component.name in ports else []
        if component.name == ETCD and "etcd-peer" in ports:
            own.append(ports["etcd-peer"])
        processes.append(
            ProcessUsage(
                name=component.name,
                pid=component.pid,
                alive=alive,
                ports=own if alive else [],
                rss_bytes=procs.rss_bytes(component.pid) if alive and component.pid else None,
                detail=component.detail,
            )
        )
    for extra, pid in extra_processes.items():
        argv = procs.cmdline(pid) or []
        alive = procs.is_alive(pid) and any(marker in arg for arg in argv)
        processes.append(
            ProcessUsage(
                name=extra,
                pid=pid,
                alive=alive,
                ports=[],
                rss_bytes=procs.rss_bytes(pid) if alive else None,
            )
        )
    return ClusterOverview(
        name=name,
        state_dir=str(state_dir),
        state=status.state,
        api_url=status.api_url,
        api_ready=status.api_ready,
        processes=processes,
    )
