"""What each operand may do on a host and through the API, read from what gpuop would deploy.

Operands are privileged software: they write host files, see the host's processes, load
kernel modules, and one may reboot the node; through their ServiceAccounts they label
nodes, list pods and evict them. Before installing, a reviewer should see all of it in one
place. This module reads the rendered DaemonSets (so the answer follows the ClusterPolicy:
hostNetwork, paths, images), the rendered identities (ServiceAccount, Role, ClusterRole)
and the operand table (what the software does with those rights), and renders a table,
JSON, or a Markdown page to attach to an approval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuop.policy import ResolvedPolicy
from gpuop.render import render_daemonset
from gpuop.render.support import identities


@dataclass(frozen=True)
class HostMount:
    path: str
    writable: bool
    mount_path: str


@dataclass(frozen=True)
class OperandAudit:
    operand: str
    daemonset: str
    image: str
    privileged: bool
    host_pid: bool
    host_ipc: bool
    host_network: bool
    mounts: tuple[HostMount, ...]
    writes: tuple[str, ...]
    kernel_modules: bool
    reboots_node: bool
    service_account: str
    api_rights: tuple[str, ...]
    effects: tuple[str, ...]
    host_changes: tuple[str, ...] = field(default=())

    @property
    def node_rbac(self) -> tuple[str, ...]:
        """The rights that act on nodes and their pods, cluster-wide."""
        return tuple(
            r
            for r in self.api_rights
            if r.startswith("cluster:") and any(w in r for w in (" nodes", " pods/eviction"))
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "operand": self.operand,
            "daemonset": self.daemonset,
            "image": self.image,
            "privileged": self.privileged,
            "hostPID": self.host_pid,
            "hostIPC": self.host_ipc,
            "hostNetwork": self.host_network,
            "hostPaths": [
                {"path": m.path, "writable": m.writable, "mountPath": m.mount_path}
                for m in self.mounts
            ],
            "writes": list(self.writes),
            "kernelModules": self.kernel_modules,
            "rebootsNode": self.reboots_node,
            "serviceAccount": self.service_account,
            "apiRights": list(self.api_rights),
            "nodeRBAC": list(self.node_rbac),
            "effects": list(self.effects),
            "hostChanges": list(self.host_changes),
        }


def _audit_daemonset(
    ds: Mapping[str, Any],
) -> tuple[bool, bool, bool, bool, tuple[HostMount, ...], str]:
    pod = ds["spec"]["template"]["spec"]
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod.get("volumes", []) if "hostPath" in v}
    containers = [*pod.get("initContainers", []), *pod.get("containers", [])]
    privileged = any((c.get("securityContext") or {}).get("privileged") for c in containers)
    mounts: dict[str, HostMount] = {}
    for container in containers:
        for mount in container.get("volumeMounts", []):
            host = volumes.get(mount["name"])
            if host is None:
                continue
            writable = not mount.get("readOnly", False)
            previous = mounts.get(host)
            if previous is None or (writable and not previous.writable):
                mounts[host] = HostMount(host, writable, mount["mountPath"])
    image = pod["containers"][0]["image"] if pod.get("containers") else ""
    return (
        privileged,
        bool(pod.get("hostPID")),
        bool(pod.get("hostIPC")),
        bool(pod.get("hostNetwork")),
        tuple(sorted(mounts.values(), key=lambda m: m.path)),
        image,
    )


def _rights(scope: str, role: Mapping[str, Any] | None) -> list[str]:
    lines = []
    for rule in (role or {}).get("rules", []):
        verbs = ",".join(rule["verbs"])
        names = rule.get("resourceNames") or []
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                target = f"{resource}.{group}" if group else resource
                suffix = f" ({', '.join(names)})" if names else ""
                lines.append(f"{scope}: {verbs} {target}{suffix}")
    return lines


def api_rights(operand: str) -> tuple[str, tuple[str, ...]]:
    """The ServiceAccount an operand's pods run as, and its rights, one line each
    (`cluster: get,list nodes`, `namespace: use securitycontextconstraints...`)."""
    identity = identities().get(operand)
    if identity is None:
        return "", ()
    account = identity.pod_service_account
    # The MPS control daemon's pods run as the device plugin's account, as upstream's do.
    holder = next((i for i in identities().values() if i.service_account == account), identity)
    rights = _rights("cluster", holder.cluster_role) + _rights("namespace", holder.role)
    return account, tuple(rights)


def audit_operands(
    policy: ResolvedPolicy,
    namespace: str = "gpu-operator",
    host_changes: Mapping[str, Sequence[str]] | None = None,
    operator_env: dict[str, str] | None = None,
) -> list[OperandAudit]:
    """One row per operand the policy deploys; `host_changes` adds measured file changes."""
    rows = []
    for operand in policy.enabled_operands():
        ds = render_daemonset(policy, operand, namespace, operator_env)
        privileged, pid, ipc, net, mounts, image = _audit_daemonset(ds)
        account, rights = api_rights(operand.name)
        rows.append(
            OperandAudit(
                operand=operand.name,
                daemonset=operand.daemonset,
                image=image,
                privileged=privileged,
                host_pid=pid,
                host_ipc=ipc,
                host_network=net,
                mounts=mounts,
                writes=operand.host.writes,
                kernel_modules=operand.host.kernel_modules,
                reboots_node=operand.host.reboots_node,
                service_account=account,
                api_rights=rights,
                effects=operand.effects,
                host_changes=tuple((host_changes or {}).get(operand.name, ())),
            )
        )
    return rows


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def render_markdown(rows: Sequence[OperandAudit], policy_name: str) -> str:
    """A page a reviewer can attach to an approval."""
    lines = [
        f"# Host privileges of the GPU operands ({policy_name})",
        "",
        "Generated by `gpuop audit` from the DaemonSets this ClusterPolicy deploys.",
        "Every operand below runs on every GPU node its deploy label selects.",
        "",
        "| operand | privileged | hostPID | hostIPC | hostNetwork | writable host paths | kernel modules | reboots node |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        writable = ", ".join(f"`{m.path}`" for m in row.mounts if m.writable) or "none"
        lines.append(
            f"| {row.operand} | {_yes(row.privileged)} | {_yes(row.host_pid)} | {_yes(row.host_ipc)} |"
            f" {_yes(row.host_network)} | {writable} | {_yes(row.kernel_modules)} | {_yes(row.reboots_node)} |"
        )
    lines += ["", "## Per operand", ""]
    for row in rows:
        lines += [f"### {row.operand} (`{row.daemonset}`)", "", f"- image: `{row.image}`"]
        for effect in row.effects:
            lines.append(f"- does: {effect}")
        read_only = ", ".join(f"`{m.path}`" for m in row.mounts if not m.writable)
        if read_only:
            lines.append(f"- reads the host: {read_only}")
        if row.writes:
            lines.append(f"- writes on the host: {', '.join(f'`{w}`' for w in row.writes)}")
        if row.service_account:
            lines.append(f"- runs as ServiceAccount `{row.service_account}`, which may:")
            lines += [f"  - {right}" for right in row.api_rights]
        for change in row.host_changes:
            lines.append(f"- host change: {change}")
        lines.append("")
    return "\n".join(lines)


def summary_counts(rows: Sequence[OperandAudit]) -> dict[str, int]:
    return {
        "operands": len(rows),
        "privileged": sum(r.privileged for r in rows),
        "hostPID": sum(r.host_pid for r in rows),
        "writes_host_files": sum(any(m.writable for m in r.mounts) for r in rows),
        "loads_kernel_modules": sum(r.kernel_modules for r in rows),
        "may_reboot_node": sum(r.reboots_node for r in rows),
    }
