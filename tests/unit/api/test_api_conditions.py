"""The ClusterPolicy condition vocabulary and the pure merge."""

from __future__ import annotations

import json

import yaml

from gpuop.api.conditions import (
    ConditionType,
    Reason,
    condition,
    merge_conditions,
    status_differs,
)

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-02-01T00:00:00Z"


def test_enums_are_the_wire_strings() -> None:
    assert ConditionType.READY == "Ready"
    assert ConditionType.VGPU_CONFIG_CHANGE_HELD == "VgpuConfigChangeHeld"
    assert Reason.NO_GPU_NODES == "NoGPUNodes"
    assert Reason.NONE == "None"
    assert len({str(t) for t in ConditionType}) == len(ConditionType)


def test_a_condition_holds_plain_strings_that_serialise() -> None:
    built = condition(ConditionType.ERROR, True, Reason.RECONCILE_FAILED, "bad")
    assert built == {
        "type": "Error",
        "status": "True",
        "reason": "ReconcileFailed",
        "message": "bad",
    }
    assert all(type(v) is str for v in built.values())
    # The status goes to the API as JSON and to dumps as YAML: neither sees the enum.
    assert json.loads(json.dumps(built)) == built
    assert yaml.safe_load(yaml.safe_dump(built)) == built


def test_merge_keeps_the_transition_time_while_the_status_stays() -> None:
    old = [
        {**condition(ConditionType.READY, True, Reason.RECONCILED, "ok"), "lastTransitionTime": T0}
    ]
    new = [condition(ConditionType.READY, True, Reason.RECONCILED, "still ok")]
    merged = merge_conditions(old, new, T1)
    assert merged == [{**new[0], "lastTransitionTime": T0}]


def test_merge_stamps_now_on_a_change_a_new_type_or_a_missing_stamp() -> None:
    old = [
        {**condition(ConditionType.READY, True, Reason.RECONCILED, ""), "lastTransitionTime": T0},
        condition(ConditionType.ERROR, False, Reason.READY, ""),
    ]
    new = [
        condition(ConditionType.READY, False, Reason.OPERAND_NOT_READY, "not ready"),
        condition(ConditionType.ERROR, False, Reason.READY, ""),
        condition(ConditionType.WORKLOAD_SWITCH_HELD, False, Reason.NONE, ""),
    ]
    merged = merge_conditions(old, new, T1)
    assert [c["lastTransitionTime"] for c in merged] == [T1, T1, T1]
    assert [c["type"] for c in merged] == ["Ready", "Error", "WorkloadSwitchHeld"]


def test_merge_drops_conditions_no_longer_set() -> None:
    old = [
        {
            **condition(ConditionType.VGPU_CONFIG_INVALID, True, Reason.INFEASIBLE, "x"),
            "lastTransitionTime": T0,
        }
    ]
    assert merge_conditions(old, [], T1) == []
    assert merge_conditions(None, [], T1) == []


def test_status_differs_ignores_transition_times_only() -> None:
    ready = condition(ConditionType.READY, True, Reason.RECONCILED, "ok")
    old = {"state": "ready", "conditions": [{**ready, "lastTransitionTime": T0}]}
    same = {"state": "ready", "conditions": [{**ready, "lastTransitionTime": T1}]}
    assert not status_differs(old, same)
    assert status_differs(old, {**same, "state": "notReady"})
    changed = {"state": "ready", "conditions": [{**ready, "message": "other"}]}
    assert status_differs(old, changed)
    assert status_differs(None, same)
    assert not status_differs({}, {})
