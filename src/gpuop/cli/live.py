"""Every `--live` command reads the cluster kubectl would, and names it.

The kubeconfig is kubectl's (`gpuop.kube.kubeconfig_files`, the one rule the operator and
the simulator follow too): `--kubeconfig`, else the files of `$KUBECONFIG` merged (a
colon-separated list), else `~/.kube/config`; with none of them, the pod's service account
when gpuop runs in a cluster. `--context` picks a context, else the kubeconfig's current
one. The report names the cluster it read, so a CI log never leaves open which cluster was
checked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gpuop.cli.common import UserError

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class LiveTarget:
    """The kubeconfig files and context a live read uses, and the cluster they name.
    `kubeconfig` is the files as `$KUBECONFIG` lists them; None: the in-cluster account."""

    kubeconfig: str | None
    context: str | None
    cluster: str | None = None
    server: str | None = None
    files: tuple[str, ...] = ()

    def describe(self) -> str:
        """`cluster lab (https://127.0.0.1:6443), context lab-admin`."""
        if self.kubeconfig is None:
            return "cluster: in-cluster service account"
        name = self.cluster or "?"
        server = f" ({self.server})" if self.server else ""
        context = f", context {self.context}" if self.context else ""
        return f"cluster {name}{server}{context}"

    def to_dict(self) -> dict[str, str | None]:
        return {
            "cluster": self.cluster,
            "server": self.server,
            "context": self.context,
            "kubeconfig": self.kubeconfig,
        }


def require_files_or_live(paths: Sequence[str], live: bool) -> None:
    """A command that reads dumps or the cluster takes exactly one of them."""
    if live and paths:
        raise UserError("give FILES or --live, not both")
    if not live and not paths:
        raise UserError("give dump files, a bundle directory, '-' for stdin, or --live")


def kubeconfig_files(flag: str | None) -> tuple[str, ...]:
    """kubectl's kubeconfig files for `--kubeconfig` (`gpuop.kube.kubeconfig_files`)."""
    from gpuop.kube import KubeError
    from gpuop.kube import kubeconfig_files as kubectl_files

    try:
        return kubectl_files(flag)
    except KubeError as exc:
        raise UserError(str(exc)) from None


def _named(files: tuple[str, ...], context: str | None) -> LiveTarget:
    """The context's cluster name and server, read from the kubeconfig for the header."""
    from gpuop.cli.inputs import load_yaml_document
    from gpuop.kube import merge_kubeconfigs

    documents = []
    for path in files:
        if not os.path.isfile(path):
            raise UserError(f"--kubeconfig {path}: no such file")
        document = load_yaml_document(path, "kubeconfig")
        if not isinstance(document, Mapping):
            raise UserError(f"{path}: not a kubeconfig (expected a mapping)")
        documents.append((document, os.path.dirname(os.path.abspath(path))))
    merged = merge_kubeconfigs(documents)
    shown = os.pathsep.join(files)
    chosen = context or merged.get("current-context")
    if not isinstance(chosen, str) or not chosen:
        raise UserError(f"{shown}: no current-context; give --context")
    entry = _entry(merged.get("contexts"), chosen)
    if entry is None:
        raise UserError(f"{shown}: no context {chosen!r}")
    details = entry.get("context")
    cluster = details.get("cluster") if isinstance(details, Mapping) else None
    cluster_name = cluster if isinstance(cluster, str) else None
    cluster_entry = _entry(merged.get("clusters"), cluster_name) if cluster_name else None
    server = None
    if cluster_entry is not None and isinstance(cluster_entry.get("cluster"), Mapping):
        value = cluster_entry["cluster"].get("server")
        server = value if isinstance(value, str) else None
    return LiveTarget(shown, chosen, cluster_name, server, files)


def _entry(items: Any, name: str) -> Mapping[str, Any] | None:
    if not isinstance(items, list):
        return None
    for item in items:
        if isinstance(item, Mapping) and item.get("name") == name:
            return item
    return None


def live_target(live: bool, kubeconfig: str | None, context: str | None) -> LiveTarget | None:
    """The target for `--live`, None without it; refuses --kubeconfig/--context alone."""
    if not live:
        if kubeconfig or context:
            raise UserError("--kubeconfig and --context need --live")
        return None
    files = kubeconfig_files(kubeconfig)
    if not files:
        from gpuop.kube import DEFAULT_KUBECONFIG

        if not os.environ.get("KUBERNETES_SERVICE_HOST"):
            raise UserError(
                "--live: no kubeconfig (give --kubeconfig, set $KUBECONFIG, or create"
                f" {DEFAULT_KUBECONFIG})"
            )
        if context:
            raise UserError("--context needs a kubeconfig; none found")
        return LiveTarget(None, None)
    return _named(files, context)


__all__ = ["LiveTarget", "kubeconfig_files", "live_target"]


def with_cluster_line(text: str, target: LiveTarget | None) -> str:
    """The text report with the cluster named under its first line."""
    if target is None:
        return text
    first, _, rest = text.partition("\n")
    return f"{first}\n{target.describe()}\n{rest}"
