"""The pools one node sees (GatherPools of the structured allocator, incubating variant).

Slices for the node (by ``nodeName``, ``allNodes``, a node selector or per-device selection) are
grouped by driver and pool name, the newest generation of each. A pool with fewer slices of
that generation than ``resourceSliceCount`` (counting the pool's slices for other nodes too)
is incomplete; one with duplicate device or counter set names, or a device consuming a counter
its pool lacks, is invalid. Pools come sorted by driver and name, their slices by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpuop.dra.model import Device, Slice, newest_generations

__all__ = ["Pool", "gather_pools"]


@dataclass
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: str = ""
    slices: list[Slice] = field(default_factory=list)
    other_slices: list[Slice] = field(default_factory=list)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.driver}/{self.name}"

    def devices(self) -> list[Device]:
        return [d for s in self.slices for d in s.devices]


def _node_matches(
    selector: Mapping[str, object] | None, node: str, labels: Mapping[str, str]
) -> bool:
    terms = selector.get("nodeSelectorTerms") if selector else None
    if not isinstance(terms, list):
        return False
    for term in terms:
        if not isinstance(term, Mapping):
            continue
        exprs = list(term.get("matchExpressions") or [])
        fields = list(term.get("matchFields") or [])
        if not exprs and not fields:
            continue
        ok = all(_requirement(e, labels) for e in exprs if isinstance(e, Mapping))
        ok = ok and all(
            _requirement(f, {"metadata.name": node}) for f in fields if isinstance(f, Mapping)
        )
        if ok:
            return True
    return False


def _requirement(req: Mapping[str, object], labels: Mapping[str, str]) -> bool:
    key, op = str(req.get("key", "")), req.get("operator")
    values = [str(v) for v in req.get("values") or []]  # type: ignore[attr-defined]
    have = labels.get(key)
    if op == "In":
        return have is not None and have in values
    if op == "NotIn":
        return have is None or have not in values
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op in ("Gt", "Lt") and have is not None and values:
        try:
            return int(have) > int(values[0]) if op == "Gt" else int(have) < int(values[0])
        except ValueError:
            return False
    return False


def _slice_for_node(s: Slice, node: str, labels: Mapping[str, str]) -> bool:
    if s.node_name or s.all_nodes or s.node_selector is not None:
        if s.node_name:
            return s.node_name == node
        return s.all_nodes or _node_matches(s.node_selector, node, labels)
    if s.per_device_node_selection:
        return any(d.node == node for d in s.devices)
    return False


def gather_pools(slices: Sequence[Slice], node: str, labels: Mapping[str, str]) -> list[Pool]:
    """GatherPools: the pools a node sees, in the allocator's order."""
    newest = newest_generations(s for s in slices if _slice_for_node(s, node, labels))
    pools = []
    for (driver, name), group in newest.items():
        count, generation = group[0].slice_count, group[0].generation
        every = group
        if len(group) != count:
            same = [x for x in slices if (x.driver, x.pool) == (driver, name)]
            if any(x.generation > generation for x in same):
                continue  # obsolete: a newer generation is being published
            every = [x for x in same if x.generation == generation]
            if len(every) != count:
                pools.append(Pool(driver, name, incomplete=True, slices=group))
                continue
        pools.append(_build_pool(driver, name, group, every))
    return sorted(pools, key=lambda p: (p.driver, p.name))


def _build_pool(driver: str, name: str, group: list[Slice], every: list[Slice]) -> Pool:
    mine = sorted(group, key=lambda s: s.name)
    names = {s.name for s in mine}
    others = [s for s in every if s.name not in names]
    device_slices = [s for s in mine if not s.counter_sets]
    counter_slices = [s for s in mine + others if s.counter_sets]
    pool = Pool(
        driver, name, slices=device_slices, other_slices=[s for s in others if not s.counter_sets]
    )
    seen: set[str] = set()
    for d in (d for s in device_slices for d in s.devices):
        if d.name in seen:
            pool.invalid = f"duplicate device name {d.name}"
            return pool
        seen.add(d.name)
    for cs in (c for s in counter_slices for c in s.counter_sets):
        if cs.name in pool.counters:
            pool.invalid = f"duplicate counter set name {cs.name}"
            return pool
        pool.counters[cs.name] = dict(cs.counters)
    for d in (d for s in device_slices + pool.other_slices for d in s.devices):
        for use in d.consumes:
            if use.counter_set not in pool.counters:
                pool.invalid = f"counter set {use.counter_set} not found"
                return pool
            for counter in use.counters:
                if counter not in pool.counters[use.counter_set]:
                    pool.invalid = f"counter {counter} not found in counter set {use.counter_set}"
                    return pool
    return pool
