"""What lets one cluster read serve thousands of explained pods: indexes over the snapshot.

A fleet's nodes come in few shapes and its pods in few label sets (a job's pods share
their labels), so the work per explained pod is kept to the shapes and label sets it can
tell apart, not the nodes and pods there are:

* :class:`PodIndex` groups the bound pods by namespace and labels, and finds the groups a
  label selector matches through its first ``In`` requirement; PodTopologySpread and
  InterPodAffinity count from it instead of walking every pod on every node.
* :class:`NodeIndex` keeps the nodes in order with, per label key, each node's value and
  the nodes of each value, and splits the nodes into classes that no filter can tell
  apart for a given pod (:meth:`NodeIndex.partition`): the pod-independent shape
  (:meth:`NodeState.shape`) and the values of the labels the pod reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpuop.explain.filters import NodeState, PodOnNode
    from gpuop.explain.spread import LabelSelector

__all__ = ["ABSENT", "NodeIndex", "PodGroup", "PodIndex"]

#: A node without the label (a value no label has).
ABSENT: Any = ("<absent>",)


@dataclass
class PodGroup:
    """The bound pods of one namespace with one label set, counted per node."""

    namespace: str
    labels: Mapping[str, str]
    # node name -> [pods, pods not being deleted]
    on_nodes: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class PodIndex:
    """The bound pods by namespace and labels, and by each label pair they carry."""

    groups: dict[tuple[str, frozenset[tuple[str, str]]], PodGroup] = field(default_factory=dict)
    by_pair: dict[tuple[str, str], list[PodGroup]] = field(default_factory=dict)

    def add(self, pod: PodOnNode, node: str) -> None:
        key = (pod.namespace, frozenset(pod.labels.items()))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = PodGroup(pod.namespace, pod.labels)
            for pair in key[1]:
                self.by_pair.setdefault(pair, []).append(group)
        counts = group.on_nodes.setdefault(node, [0, 0])
        counts[0] += 1
        if not pod.terminating:
            counts[1] += 1

    def candidates(self, selector: LabelSelector) -> Iterable[PodGroup]:
        """The groups `selector` may match (a superset: match each one still)."""
        if selector.nothing:
            return ()
        for key, operator, values in selector.requirements:
            if operator == "In":
                if len(values) == 1:
                    return self.by_pair.get((key, next(iter(values))), ())
                found: dict[int, PodGroup] = {}
                for value in values:
                    for group in self.by_pair.get((key, value), ()):
                        found[id(group)] = group
                return found.values()
        return self.groups.values()


@dataclass
class NodeIndex:
    """The snapshot's nodes in order, by shape and by label value."""

    nodes: Sequence[NodeState]
    position: dict[str, int] = field(default_factory=dict)
    _values: dict[str, list[Any]] = field(default_factory=dict, repr=False)
    _by_value: dict[str, dict[Any, list[int]]] = field(default_factory=dict, repr=False)
    _domains: dict[tuple[str, ...], dict[str, list[str]]] = field(default_factory=dict, repr=False)
    _shapes: list[int] | None = field(default=None, repr=False)
    _partitions: dict[tuple[str, ...], tuple[list[int], list[list[int]]]] = field(
        default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        self.position = {node.name: i for i, node in enumerate(self.nodes)}

    def values(self, key: str) -> list[Any]:
        """Each node's value for label `key` (:data:`ABSENT` without it)."""
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = [n.labels.get(key, ABSENT) for n in self.nodes]
        return found

    def by_value(self, key: str) -> dict[Any, list[int]]:
        """The nodes (positions) of each value of label `key`."""
        found = self._by_value.get(key)
        if found is None:
            found = {}
            for position, value in enumerate(self.values(key)):
                found.setdefault(value, []).append(position)
            self._by_value[key] = found
        return found

    def domain_values(self, keys: tuple[str, ...]) -> dict[str, list[str]]:
        """Per key, the distinct values of the nodes that carry every one of `keys`."""
        found = self._domains.get(keys)
        if found is None:
            if len(keys) == 1:
                found = {keys[0]: [v for v in self.by_value(keys[0]) if v is not ABSENT]}
            else:
                columns = [self.values(key) for key in keys]
                seen: list[dict[str, None]] = [{} for _ in keys]
                for row in zip(*columns, strict=True):
                    if ABSENT not in row:
                        for values, value in zip(seen, row, strict=True):
                            values[value] = None
                found = {key: list(values) for key, values in zip(keys, seen, strict=True)}
            self._domains[keys] = found
        return found

    def partition(self, keys: tuple[str, ...]) -> tuple[list[int], list[list[int]]]:
        """The nodes split by shape and the values of `keys`: each node's class and each
        class's nodes (positions, in node order)."""
        found = self._partitions.get(keys)
        if found is not None:
            return found
        if self._shapes is None:
            ids: dict[tuple[Any, ...], int] = {}
            self._shapes = [ids.setdefault(n.shape(), len(ids)) for n in self.nodes]
        columns = [self.values(key) for key in keys]
        classes: dict[tuple[Any, ...], int] = {}
        class_of: list[int] = []
        members: list[list[int]] = []
        for position, shape in enumerate(self._shapes):
            key = (shape, *(column[position] for column in columns))
            number = classes.get(key)
            if number is None:
                number = classes[key] = len(members)
                members.append([])
            members[number].append(position)
            class_of.append(number)
        found = self._partitions[keys] = (class_of, members)
        return found

    def refine(
        self, keys: tuple[str, ...], sparse: Mapping[str, Iterable[Any]]
    ) -> Iterator[list[int]]:
        """:meth:`partition` over `keys`, split further by the labels in `sparse`, each
        with the few values that matter (any other value is as good as another, but not
        as good as none)."""
        class_of, members = self.partition(keys)
        if not sparse:
            yield from members
            return
        apart: dict[int, tuple[Any, ...]] = {}
        for number, (key, live) in enumerate(sparse.items()):
            by_value = self.by_value(key)
            for value in (*live, ABSENT):
                for position in by_value.get(value, ()):
                    mark = apart.get(position, ())
                    apart[position] = (*mark, (number, value))
        split: dict[tuple[int, tuple[Any, ...]], list[int]] = {}
        for position, mark in apart.items():
            split.setdefault((class_of[position], mark), []).append(position)
        for positions in members:
            rest = [p for p in positions if p not in apart] if apart else positions
            if rest:
                yield rest
        for positions in split.values():
            positions.sort()
            yield positions
