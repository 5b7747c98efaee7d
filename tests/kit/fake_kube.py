"""An in-memory Kubernetes API for unit tests of gpuop's controllers, with error injection.

`FakeKube` answers the part of lightkube's `AsyncClient` that `gpuop.kube.ops` and
`gpuop.kube.informer` call (list with a resourceVersion, watch streams, merge patches of
objects and their status, server-side apply, create, delete, get, and pod eviction) on
plain dicts kept in memory, the way an API server would: every change bumps one
resourceVersion counter and is played to open watches; a watch from a compacted version
answers 410 Gone; a label-selected watch sees an object that stops matching as DELETED.

Faults are injected per verb and kind, on the Nth matching call from now (the
controller-runtime fake client's interceptor idea): `fail` raises an `ApiError` with a
given code (500, 409, 410, 429, ...), `drop` answers as if the write succeeded but keeps
nothing (the answer is the object as stored). Kinds are named as `Node`, `Node/status`,
`Pod/eviction`; a fault on `Node` also matches `Node/status`.

Tests assert the final state (`fake.get_object`, `fake.objects_of`), not the calls.
What other controllers would do (kubelets, the DaemonSet controller) the tests play with
`put`, `modify` and `remove`, which change the store and notify watches like a write.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lightkube.codecs import from_dict
from lightkube.core import resource as lkr
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import Status
from lightkube.types import PatchType

from gpuop.kube.client import KubeClient
from gpuop.kube.kinds import RESOURCES, kind_of, namespaced

# Kinds whose status is written only through the status subresource.
STATUS_SUBRESOURCE = frozenset({"Node", "Pod", "DaemonSet", "ClusterPolicy", "ResourceClaim"})
REASONS = {
    404: "NotFound",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}
Obj = dict[str, Any]


def api_error(code: int, message: str = "") -> ApiError:
    """The ApiError lightkube raises for a Status answer with `code`."""
    reason = REASONS.get(code, "")
    return ApiError(
        status=Status(code=code, reason=reason, message=message or reason, status="Failure")
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge key by key, None deletes, the rest replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@dataclass
class Fault:
    verb: str
    kind: str | None
    nth: int
    times: int
    code: int | None  # None: drop the write silently
    message: str = ""
    seen: int = 0
    fired: int = 0

    def matches(self, verb: str, kind: str) -> bool:
        if self.verb != verb or self.fired >= self.times:
            return False
        return self.kind is None or self.kind in (kind, kind.split("/", 1)[0])


@dataclass(frozen=True)
class Change:
    version: int
    kind: str
    type: str  # ADDED, MODIFIED, DELETED
    old: Obj | None
    new: Obj


def _namespaced(kind: str) -> bool:
    """A kind's scope, as the real API has it (a kind gpuop never lists counts as namespaced)."""
    base = kind.split("/", 1)[0]
    return base not in RESOURCES or namespaced(base)


def _key(kind: str, name: str, namespace: str | None) -> str:
    return f"{namespace or 'default'}/{name}" if _namespaced(kind) else name


def _labels_match(obj: Obj, selector: Mapping[str, Any] | None) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for key, want in (selector or {}).items():
        if want is None:
            ok = key in labels
        elif isinstance(want, str):
            ok = labels.get(key) == want
        else:  # a lightkube operator
            name = getattr(want, "op_name", None)
            if name == "exists":
                ok = key in labels
            elif name == "not_exists":
                ok = key not in labels
            elif name == "in":
                ok = labels.get(key) in want.value
            elif name == "not_in":
                ok = labels.get(key) not in want.value
            else:
                raise NotImplementedError(f"label selector {want!r}")
        if not ok:
            return False
    return True


def _field(obj: Obj, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


class _Listing:
    """What `AsyncClient.list` returns: items to iterate, then `resourceVersion`."""

    def __init__(self, fake: FakeKube, kind: str, select: Callable[[Obj], bool]) -> None:
        self._fake = fake
        self._kind = kind
        self._select = select
        self.resourceVersion = ""

    async def __aiter__(self) -> AsyncIterator[Obj]:
        self._fake._call("list", self._kind)
        items = [copy.deepcopy(o) for o in self._fake._store(self._kind).values()]
        self.resourceVersion = str(self._fake.version)
        for obj in items:
            if self._select(obj):
                yield obj


class FakeKube:
    """An in-memory API server behind lightkube's AsyncClient interface (the part gpuop uses)."""

    def __init__(self, objects: Iterable[Obj] = ()) -> None:
        self.objects: dict[str, dict[str, Obj]] = {}
        self.version = 0
        self.compacted = 0
        self.history: list[Change] = []
        self.calls: dict[tuple[str, str], int] = {}
        self.faults: list[Fault] = []
        self.dropped: list[tuple[str, str]] = []
        self.watches_open = 0
        self._tick = asyncio.Event()
        self._generation = 0  # watch streams opened before `end_watches` stop
        self._names = itertools.count(1)
        for obj in objects:
            self.put(obj)

    @property
    def client(self) -> KubeClient:
        """This fake, as the client `gpuop.kube.ops` takes (it implements `KubeClient`)."""
        return self

    # -- error injection ----------------------------------------------------------------

    def fail(
        self,
        verb: str,
        kind: str | None,
        code: int,
        nth: int = 1,
        times: int = 1,
        message: str = "",
    ) -> Fault:
        """Raise ApiError(`code`) on the `nth` matching call from now, `times` times in a row."""
        fault = Fault(verb, kind, nth, times, code, message)
        self.faults.append(fault)
        return fault

    def drop(self, verb: str, kind: str | None, nth: int = 1, times: int = 1) -> Fault:
        """Answer the `nth` matching write from now as done, and keep nothing of it."""
        fault = Fault(verb, kind, nth, times, None)
        self.faults.append(fault)
        return fault

    def _call(self, verb: str, kind: str) -> bool:
        """Count the call, raise an injected error; True when the write is to be dropped."""
        self.calls[(verb, kind)] = self.calls.get((verb, kind), 0) + 1
        for fault in self.faults:
            if not fault.matches(verb, kind):
                continue
            fault.seen += 1
            if fault.seen < fault.nth:
                continue
            fault.fired += 1
            if fault.code is None:
                self.dropped.append((verb, kind))
                return True
            raise api_error(fault.code, fault.message or f"injected {verb} {kind} failure")
        return False

    def faults_left(self) -> tuple[Fault, ...]:
        return tuple(f for f in self.faults if f.fired < f.times)

    # -- the store, for tests -----------------------------------------------------------

    def _store(self, kind: str) -> dict[str, Obj]:
        return self.objects.setdefault(kind.split("/", 1)[0], {})

    def get_object(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        found = self._store(kind).get(_key(kind, name, namespace))
        return copy.deepcopy(found) if found is not None else None

    def objects_of(self, kind: str, namespace: str | None = None) -> dict[str, Obj]:
        """name -> object, of one kind (in one namespace when given)."""
        return {
            o["metadata"]["name"]: copy.deepcopy(o)
            for o in self._store(kind).values()
            if namespace is None or o["metadata"].get("namespace") == namespace
        }

    def put(self, obj: Obj) -> Obj:
        """Create or replace an object as another client would (status included)."""
        obj = copy.deepcopy(obj)
        kind = obj["kind"]
        meta = obj.setdefault("metadata", {})
        if _namespaced(kind):
            meta.setdefault("namespace", "default")
        key = _key(kind, meta["name"], meta.get("namespace"))
        old = self._store(kind).get(key)
        if old is not None:
            for kept in ("uid", "creationTimestamp", "generation"):
                if kept in old["metadata"]:
                    meta.setdefault(kept, old["metadata"][kept])
        return self._write(kind, key, old, obj)

    def modify(
        self, kind: str, name: str, change: Callable[[Obj], None], namespace: str | None = None
    ) -> Obj:
        """Change a stored object in place (as a kubelet or another controller would)."""
        key = _key(kind, name, namespace)
        old = self._store(kind)[key]
        new = copy.deepcopy(old)
        change(new)
        return self._write(kind, key, old, new)

    def remove(self, kind: str, name: str, namespace: str | None = None) -> None:
        key = _key(kind, name, namespace)
        old = self._store(kind).pop(key, None)
        if old is not None:
            self._record(kind, "DELETED", old, old)

    def compact(self) -> None:
        """Forget the history: a watch from an older resourceVersion now answers 410 Gone."""
        self.compacted = self.version
        self.history.clear()

    def end_watches(self) -> None:
        """Close every open watch stream (an API server restart); clients watch again."""
        self._generation += 1
        self._notify()

    # -- writes, as the API server does them --------------------------------------------

    def _write(self, kind: str, key: str, old: Obj | None, new: Obj) -> Obj:
        meta = new["metadata"]
        if old is not None:
            unchanged = {k: v for k, v in old.items() if k != "metadata"} == {
                k: v for k, v in new.items() if k != "metadata"
            } and {k: v for k, v in old["metadata"].items() if k != "resourceVersion"} == {
                k: v for k, v in meta.items() if k != "resourceVersion"
            }
            if unchanged:  # a no-op write keeps the resourceVersion and sends no event
                return copy.deepcopy(old)
            if old.get("spec") != new.get("spec"):
                meta["generation"] = int(old["metadata"].get("generation") or 1) + 1
        else:
            meta.setdefault("uid", f"uid-{kind.lower()}-{next(self._names)}")
            meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
            meta.setdefault("generation", 1)
        self.version += 1
        meta["resourceVersion"] = str(self.version)
        self._store(kind)[key] = new
        self._record(kind, "ADDED" if old is None else "MODIFIED", old, new)
        return copy.deepcopy(new)

    def _record(self, kind: str, event: str, old: Obj | None, new: Obj) -> None:
        if event == "DELETED":
            self.version += 1
            new = copy.deepcopy(new)
            new["metadata"]["resourceVersion"] = str(self.version)
        self.history.append(Change(self.version, kind, event, copy.deepcopy(old), new))
        self._notify()

    def _notify(self) -> None:
        self._tick.set()
        self._tick = asyncio.Event()

    # -- lightkube's AsyncClient --------------------------------------------------------

    def list(
        self,
        res: Any,
        *,
        namespace: str | None = None,
        chunk_size: int | None = None,
        labels: Mapping[str, Any] | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> _Listing:
        kind = kind_of(res)

        def select(obj: Obj) -> bool:
            return self._selected(kind, obj, namespace, labels, fields)

        return _Listing(self, kind, select)

    def _selected(
        self,
        kind: str,
        obj: Obj,
        namespace: str | None,
        labels: Mapping[str, Any] | None,
        fields: Mapping[str, Any] | None,
    ) -> bool:
        in_namespace = obj["metadata"].get("namespace") == (namespace or "default")
        if _namespaced(kind) and namespace != "*" and not in_namespace:
            return False
        if not _labels_match(obj, labels):
            return False
        return all(_field(obj, path) == want for path, want in (fields or {}).items())

    async def watch(
        self,
        res: Any,
        *,
        namespace: str | None = None,
        labels: Mapping[str, Any] | None = None,
        fields: Mapping[str, Any] | None = None,
        server_timeout: int | None = None,
        resource_version: str | None = None,
        on_error: Any = None,
    ) -> AsyncIterator[tuple[str, Obj]]:
        kind = kind_of(res)
        self._call("watch", kind)
        since = int(resource_version or self.version)
        if since < self.compacted:
            raise api_error(410, f"too old resource version: {since} ({self.compacted})")
        generation = self._generation
        self.watches_open += 1
        try:
            while True:
                tick = self._tick
                if since < self.compacted:  # compacted while this stream was behind
                    raise api_error(410, "too old resource version")
                for change in [c for c in self.history if c.version > since]:
                    since = change.version
                    event = None
                    if change.kind == kind:
                        event = self._event(change, namespace, labels, fields)
                    if event is not None:
                        yield event[0], copy.deepcopy(event[1])
                if generation != self._generation:
                    return
                await tick.wait()
        finally:
            self.watches_open -= 1

    def _event(
        self,
        change: Change,
        namespace: str | None,
        labels: Mapping[str, Any] | None,
        fields: Mapping[str, Any] | None,
    ) -> tuple[str, Obj] | None:
        def selected(obj: Obj | None) -> bool:
            return obj is not None and self._selected(change.kind, obj, namespace, labels, fields)

        if change.type == "DELETED":
            return ("DELETED", change.new) if selected(change.new) else None
        now, before = selected(change.new), selected(change.old)
        if now:
            return ("MODIFIED" if before else "ADDED", change.new)
        if before:
            return "DELETED", change.new
        return None

    async def patch(
        self,
        res: Any,
        name: str,
        obj: Mapping[str, Any],
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.STRATEGIC,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        if patch_type != PatchType.MERGE:
            raise NotImplementedError(f"the fake API takes merge patches only, not {patch_type}")
        kind = kind_of(res)
        drop = self._call("patch", kind)
        base = kind.split("/", 1)[0]
        key = _key(base, name, namespace)
        old = self._store(base).get(key)
        if old is None:
            raise api_error(404, f'{base.lower()}s "{name}" not found')
        if drop:
            return copy.deepcopy(old)
        body = dict(obj)
        if kind.endswith("/status"):
            body = {"status": body.get("status")} if "status" in body else {}
        elif base in STATUS_SUBRESOURCE:
            body.pop("status", None)
        return self._write(base, key, old, merge_patch(old, body))

    async def apply(
        self,
        obj: Any,
        name: str | None = None,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        body = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
        kind = body["kind"]
        drop = self._call("apply", kind)
        meta = body.setdefault("metadata", {})
        if _namespaced(kind):
            meta.setdefault("namespace", namespace or "default")
        key = _key(kind, meta["name"], meta.get("namespace"))
        old = self._store(kind).get(key)
        if drop:
            return copy.deepcopy(old if old is not None else body)
        # Server-side apply with force, simplified: the applied fields replace what is there,
        # labels and annotations merge, status stays the server's.
        new = copy.deepcopy(old) if old is not None else {}
        for field, value in body.items():
            if field not in ("metadata", "status"):
                new[field] = copy.deepcopy(value)
        old_meta = (old or {}).get("metadata") or {}
        new["metadata"] = {
            **copy.deepcopy(old_meta),
            **{k: v for k, v in meta.items() if k not in ("labels", "annotations")},
            "labels": {**(old_meta.get("labels") or {}), **(meta.get("labels") or {})},
            "annotations": {
                **(old_meta.get("annotations") or {}),
                **(meta.get("annotations") or {}),
            },
        }
        return self._write(kind, key, old, new)

    async def create(
        self,
        obj: Any,
        name: str | None = None,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        if isinstance(obj, lkr.Resource) and kind_of(type(obj)) == "Pod/eviction":
            return self._evict(obj, name, namespace)
        body = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
        kind = body["kind"]
        drop = self._call("create", kind)
        meta = body.setdefault("metadata", {})
        if "name" not in meta:
            meta["name"] = f"{meta.get('generateName', '')}{next(self._names):05d}"
        if _namespaced(kind):
            meta.setdefault("namespace", namespace or "default")
        key = _key(kind, meta["name"], meta.get("namespace"))
        if drop:
            return body
        if key in self._store(kind):
            raise api_error(409, f'{kind.lower()}s "{meta["name"]}" already exists')
        return self._write(kind, key, None, body)

    async def replace(
        self,
        obj: Any,
        name: str | None = None,
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> Obj:
        """An update (PUT): 409 when the body's resourceVersion is not the stored one."""
        body = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
        kind = body["kind"]
        drop = self._call("replace", kind)
        meta = body.setdefault("metadata", {})
        scope = meta.get("namespace") or namespace if _namespaced(kind) else None
        key = _key(kind, meta["name"], scope)
        old = self._store(kind).get(key)
        if old is None:
            raise api_error(404, f'{kind.lower()}s "{meta["name"]}" not found')
        stored_version = old["metadata"]["resourceVersion"]
        if meta.get("resourceVersion") not in (None, stored_version):
            raise api_error(409, "the object has been modified; please apply your changes")
        if drop:
            return copy.deepcopy(old)
        for field in ("uid", "creationTimestamp", "generation"):
            if field in old["metadata"]:
                meta.setdefault(field, old["metadata"][field])
        meta["resourceVersion"] = stored_version
        return self._write(kind, key, old, body)

    def _evict(self, eviction: Any, name: str | None, namespace: str | None) -> Obj:
        drop = self._call("create", "Pod/eviction")
        pod = name or eviction.metadata.name
        key = _key("Pod", pod, namespace or eviction.metadata.namespace)
        if key not in self._store("Pod"):
            raise api_error(404, f'pods "{pod}" not found')
        if not drop:
            old = self._store("Pod").pop(key)
            self._record("Pod", "DELETED", old, old)
        return {"kind": "Status", "status": "Success"}

    async def delete(
        self,
        res: Any,
        name: str,
        *,
        namespace: str | None = None,
        grace_period: int | None = None,
        cascade: Any = None,
        dry_run: bool = False,
    ) -> None:
        kind = kind_of(res)
        drop = self._call("delete", kind)
        key = _key(kind, name, namespace)
        if key not in self._store(kind):
            raise api_error(404, f'{kind.lower()}s "{name}" not found')
        if not drop:
            old = self._store(kind).pop(key)
            self._record(kind, "DELETED", old, old)

    async def get(self, res: Any, name: str, *, namespace: str | None = None) -> Any:
        kind = kind_of(res)
        self._call("get", kind)
        found = self._store(kind).get(_key(kind, name, namespace))
        if found is None:
            raise api_error(404, f'{kind.lower()}s "{name}" not found')
        return from_dict(copy.deepcopy(found))

    async def close(self) -> None:
        self._notify()
