"""The one cluster reader: list kinds from the API server as plain dicts.

Every live read of gpuop (`gpuop check` and `collect`, `explain`, the `kubevirt`
commands, `versions check`) goes through :func:`read_kinds`: each kind is listed
cluster-wide (all namespaces), each object gets its `kind` (list answers leave it out),
and a kind the server refuses (its CRD not installed, the account not allowed) is reported
as skipped in :func:`gpuop.kube.errors.refusal`'s words. A kind in `required` that
cannot be listed, or a cluster that does not answer, is a :class:`ReadError`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from gpuop.kube.errors import API_ERRORS, refusal, status_code, unanswered
from gpuop.kube.kinds import lean, namespaced, older_versions
from gpuop.manifests.dra_versions import as_v1

__all__ = [
    "ALL_NAMESPACES",
    "ClusterRead",
    "Lister",
    "ReadError",
    "as_dict",
    "read_kinds",
]

ALL_NAMESPACES: Final = "*"


class ReadError(Exception):
    """The cluster cannot be read (unreachable, or a required kind not listable)."""


class Lister(Protocol):
    """The part of `lightkube.Client` the readers use."""

    def list(
        self, res: Any, *, namespace: Any = None, chunk_size: int | None = None
    ) -> Iterable[Any]: ...

    def get(self, res: Any, name: str, *, namespace: Any = None) -> Any: ...


@dataclass
class ClusterRead:
    """The objects read, in kind order, and the kinds skipped (with the reason)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # kind -> how many objects the server listed (`keep` may have left some out).
    listed: dict[str, int] = field(default_factory=dict)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.objects if obj.get("kind") == kind]


# Objects per list request: the API server's pages, as kubectl asks for them.
LIST_PAGE_SIZE: Final = 500


def as_dict(obj: Any) -> dict[str, Any]:
    """A lightkube object (or a plain mapping, from a fake client) as a plain dict."""
    if isinstance(obj, Mapping) and not hasattr(obj, "to_dict"):
        return dict(obj)
    data = obj.to_dict()
    assert isinstance(data, dict)
    return data


def unreachable(exc: BaseException) -> ReadError:
    """The ReadError for a request that got no answer."""
    return ReadError(f"cannot reach the cluster: {exc}")


def read_kinds(
    client: Lister,
    kinds: Sequence[str],
    *,
    required: Collection[str] = (),
    progress: Callable[[str], None] | None = None,
    keep: Mapping[str, Callable[[dict[str, Any]], bool]] | None = None,
) -> ClusterRead:
    """List `kinds` (cluster-wide, all namespaces) from the cluster `client` talks to.

    Lists come in pages of `LIST_PAGE_SIZE`, and each object is reduced as it arrives: its
    `metadata.managedFields` (no reader uses them; they are a third of a pod) are left
    out, and so is an object its kind's `keep` rejects. A fleet's pods are never held in
    full at once."""
    say = progress or (lambda _: None)
    result = ClusterRead()
    for kind in kinds:
        in_namespaces = namespaced(kind)
        wanted = (keep or {}).get(kind)
        say(f"listing {kind}s")
        # The kind's resource, then its older API versions where the server has not that one.
        candidates = [lean(kind), *older_versions(kind)]
        while candidates:
            resource = candidates.pop(0)
            listed: list[dict[str, Any]] = []
            count = 0
            try:
                items = (
                    client.list(resource, namespace=ALL_NAMESPACES, chunk_size=LIST_PAGE_SIZE)
                    if in_namespaces
                    else client.list(resource, chunk_size=LIST_PAGE_SIZE)
                )
                for item in items:
                    count += 1
                    obj = as_v1(as_dict(item))
                    obj.setdefault("kind", kind)
                    meta = obj.get("metadata")
                    if isinstance(meta, dict) and "managedFields" in meta:
                        obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
                    if wanted is None or wanted(obj):
                        listed.append(obj)
            except API_ERRORS as exc:
                if unanswered(exc):
                    raise unreachable(exc) from None
                if candidates and status_code(exc) == 404:
                    continue
                reason = refusal(exc)
                if kind in required:
                    raise ReadError(f"cannot list {kind}s: {reason}") from None
                result.skipped.append((kind, reason))
                say(f"  {kind}: skipped ({reason})")
                break
            result.listed[kind] = count
            result.objects.extend(listed)
            break
    return result
