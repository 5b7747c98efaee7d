"""Informers: an in-memory copy of one kind of object, kept current by list and watch.

The operator and the simulator keep every Node, their operand pods and a few other kinds
in memory. On a thousand nodes each operand that comes up changes every node, so a
controller's cost per watch event is what decides how close it gets to the API server's
own speed: here an event is decoded once (lightkube's msgspec decoder), reduced to the
few fields the controller reads, stored, and reported with a callback. Nothing else runs
per event; the controller's single loop does the work for all changes at once.

The protocol is client-go's reflector: list, watch from the list's resourceVersion,
resume from the last resourceVersion seen after a dropped stream or an API server restart,
and relist after 410 Gone (the version was compacted away), reporting objects that the new
list no longer has as deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from gpuop.kube import ops
from gpuop.kube.client import KubeClient
from gpuop.kube.errors import API_ERRORS, status_code
from gpuop.kube.errors import describe as describe_api_error

log = logging.getLogger("gpuop.kube.informer")

T = TypeVar("T")

GONE = 410
NOT_FOUND = 404
# How often an informer of a kind the server does not serve (its CRD not installed yet)
# lists it again.
ABSENT_RETRY_SECONDS = 15.0
RETRY_DELAYS_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)
# The API server ends each watch after this long, and the informer watches again from its
# resourceVersion (no relist while that version is kept). Across an etcd restart the API
# server can hold a watch open without sending anything: this bounds how long the informer
# stays blind then (it was 270 s, longer than a fault test's 180 s to reconverge).
WATCH_SERVER_TIMEOUT_SECONDS = 60


def object_key(obj: Mapping[str, Any]) -> str:
    """`name` for cluster-scoped objects, `namespace/name` for namespaced ones."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if namespace else name


class Informer(Generic[T]):
    """One kind (optionally label-selected), as `key -> slim(object)` in `store`.

    `slim` turns an API object into what the controller keeps, or None for objects it
    does not care about (they are not stored, and a stored one that stops mattering is
    reported as gone). `labels` selects on the server (a None value: the key is present), and
    so does `namespace` for namespaced kinds (None: all namespaces). With `may_be_absent`
    (a custom resource whose CRD may not be installed), a 404 to the list is an empty list,
    and the kind is listed again every ABSENT_RETRY_SECONDS until it is served.
    `on_change(key, value)` is called after every stored change, with None for a
    deletion; not for an event that `unchanged(stored, new)` says changes nothing the
    controller reads (a kubelet's status heartbeat on a Node), though the new value is
    stored. `synced` is set once the first list is in.
    """

    def __init__(
        self,
        client: KubeClient,
        kind: str,
        slim: Callable[[dict[str, Any]], T | None],
        on_change: Callable[[str, T | None], None],
        labels: Mapping[str, str | None] | None = None,
        namespace: str | None = None,
        may_be_absent: bool = False,
        unchanged: Callable[[T, T], bool] | None = None,
    ) -> None:
        self.client = client
        self.unchanged = unchanged
        self.may_be_absent = may_be_absent
        self.kind = kind
        self.slim = slim
        self.on_change = on_change
        self.labels = labels
        self.namespace = namespace
        self.store: dict[str, T] = {}
        self.synced = asyncio.Event()
        self.resource_version: str | None = None
        self.relists = 0

    async def run(self) -> None:
        """List and watch until cancelled; API errors and outages are retried, never raised."""
        failures = 0
        while True:
            try:
                if self.resource_version is None:
                    await self._relist()
                    failures = 0
                if await self._watch():
                    failures = 0
            except asyncio.CancelledError:
                raise
            except API_ERRORS as exc:
                # A kind the server does not serve is answered with a plain-text 404 (not
                # a Kubernetes Status), so the code is read from either form of answer.
                code = status_code(exc)
                if code == GONE:
                    log.info("%s watch expired (410 Gone): relisting", self.kind)
                    self.resource_version = None
                    continue
                if code == NOT_FOUND and self.may_be_absent:
                    await self._absent()
                    failures = 0
                    continue
                failures += 1
                await self._back_off(failures, describe_api_error(exc))
            except Exception as exc:  # connection refused or reset, timeouts: the API is away
                failures += 1
                await self._back_off(failures, describe_api_error(exc))

    async def _absent(self) -> None:
        """The kind is not served: nothing of it exists; look again later."""
        if not self.synced.is_set() or self.store:
            log.info("%s is not served (no CRD): none exist", self.kind)
        for key in list(self.store):
            del self.store[key]
            self.on_change(key, None)
        self.resource_version = None
        self.synced.set()
        await asyncio.sleep(ABSENT_RETRY_SECONDS)

    async def _back_off(self, failures: int, why: str) -> None:
        delay = RETRY_DELAYS_SECONDS[min(failures, len(RETRY_DELAYS_SECONDS)) - 1]
        log.warning("%s watch failed (%s); retrying in %.1fs", self.kind, why, delay)
        await asyncio.sleep(delay)

    async def _relist(self) -> None:
        def keyed(obj: dict[str, Any]) -> tuple[str, T] | None:
            value = self.slim(obj)
            return None if value is None else (object_key(obj), value)

        version, items = await ops.list_objects(
            self.client, self.kind, keyed, self.labels, self.namespace
        )
        fresh: dict[str, T] = dict(items)
        gone = [key for key in self.store if key not in fresh]
        for key in gone:
            del self.store[key]
            self.on_change(key, None)
        for key, value in fresh.items():
            self.store[key] = value
            self.on_change(key, value)
        self.resource_version = version
        self.relists += 1
        self.synced.set()

    async def _watch(self) -> bool:
        """Apply events until the stream ends; True when at least one event came."""
        assert self.resource_version is not None
        seen = False
        async for event, obj in ops.watch_objects(
            self.client,
            self.kind,
            self.labels,
            self.namespace,
            self.resource_version,
            WATCH_SERVER_TIMEOUT_SECONDS,
        ):
            seen = True
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if event != "BOOKMARK":
                key = object_key(obj)
                value = None if event == "DELETED" else self.slim(obj)
                if value is None:
                    if self.store.pop(key, None) is not None:
                        self.on_change(key, None)
                else:
                    stored = self.store.get(key)
                    self.store[key] = value
                    if (
                        stored is None
                        or self.unchanged is None
                        or not self.unchanged(stored, value)
                    ):
                        self.on_change(key, value)
            if version:
                self.resource_version = str(version)
        return seen
