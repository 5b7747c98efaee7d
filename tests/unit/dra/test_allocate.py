"""The allocator replay: what fits, what does not, and the reason per device."""

from __future__ import annotations

import itertools
from typing import Any

from dra_builders import (
    claim,
    counter_slice,
    device,
    device_slice,
    request,
    upstream_classes,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuop.dra.allocate import allocated_devices, fit
from gpuop.dra.model import read_claim, read_classes, read_slices

CLASSES = read_classes(upstream_classes())


def two_faced(node: str, cards: int, *, counters: bool) -> list[dict[str, Any]]:
    """Each card as a gpu and a vfio device; with a counter set per card when ``counters``."""
    devices = []
    for i in range(cards):
        cs = f"gpu-{i}-counter-set" if counters else None
        devices.append(device(f"gpu-{i}", "gpu", counter_set=cs))
        devices.append(device(f"gpu-vfio-{i}", "vfio", counter_set=cs))
    if not counters:
        return [device_slice(node, devices)]
    sets = {f"gpu-{i}-counter-set": 1 for i in range(cards)}
    return [counter_slice(node, sets, count=2), device_slice(node, devices, count=2)]


def run(
    slices: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    others: list[dict[str, Any]] = (),
    node: str = "n1",
):  # type: ignore[no-untyped-def, assignment]
    read_others = [read_claim(c) for c in others]
    return fit(
        [read_claim(c) for c in claims],
        node,
        read_slices(slices),
        CLASSES,
        allocated_devices(read_others),
    )


def test_one_gpu_fits_and_says_which() -> None:
    v = run(two_faced("n1", 2, counters=True), [claim("c", request("gpu"))])
    assert v.fits and v.allocation["default/c"][0].device == "gpu-0"


def test_class_selector_reason_per_device() -> None:
    v = run(two_faced("n1", 1, counters=True), [claim("c", request("gpu", count=2))])
    assert not v.fits
    notes = dict((n.device, n.reason) for n in v.requests[0].notes)
    assert notes["gpu-0"] == ""
    assert notes["gpu-vfio-0"] == "selector #0 of class gpu.nvidia.com is false"
    assert "wants 2, 1 usable device" in v.reason


def test_shared_counters_keep_a_vm_off_a_card_a_container_holds() -> None:
    holder = claim("cuda", request("gpu"), namespace="ns", allocated=[("gpu", "n1", "gpu-0")])
    v = run(
        two_faced("n1", 1, counters=True),
        [claim("vm", request("vm", "vfio.gpu.nvidia.com"))],
        [holder],
    )
    assert not v.fits
    notes = dict((n.device, n.reason) for n in v.requests[0].notes)
    assert notes["gpu-vfio-0"] == "counter set gpu-0-counter-set exhausted by gpu-0 (ns/cuda)"
    assert notes["gpu-0"].startswith("selector #0 of class vfio.gpu.nvidia.com")


def test_without_counters_the_same_card_is_handed_out_twice() -> None:
    holder = claim("cuda", request("gpu"), namespace="ns", allocated=[("gpu", "n1", "gpu-0")])
    v = run(
        two_faced("n1", 1, counters=False),
        [claim("vm", request("vm", "vfio.gpu.nvidia.com"))],
        [holder],
    )
    assert v.fits  # the upstream race: nothing ties gpu-vfio-0 to gpu-0


def test_already_allocated_reason() -> None:
    holder = claim("other", request("gpu"), namespace="ns", allocated=[("gpu", "n1", "gpu-0")])
    v = run(two_faced("n1", 1, counters=False), [claim("c", request("gpu"))], [holder])
    assert not v.fits
    assert (
        dict((n.device, n.reason) for n in v.requests[0].notes)["gpu-0"]
        == "already allocated to ns/other"
    )


def test_two_requests_of_one_claim_get_distinct_devices() -> None:
    v = run(two_faced("n1", 2, counters=True), [claim("c", request("a"), request("b"))])
    assert v.fits and {d.device for d in v.allocation["default/c"]} == {"gpu-0", "gpu-1"}
    v = run(two_faced("n1", 1, counters=True), [claim("c", request("a"), request("b"))])
    assert not v.fits and "cannot serve every request at once" in v.reason


def test_claims_of_one_pod_together() -> None:
    v = run(
        two_faced("n1", 1, counters=True),
        [claim("a", request("gpu")), claim("b", request("vm", "vfio.gpu.nvidia.com"))],
    )
    assert not v.fits
    v = run(
        two_faced("n1", 2, counters=True),
        [claim("a", request("gpu")), claim("b", request("vm", "vfio.gpu.nvidia.com"))],
    )
    assert v.fits
    assert {v.allocation["default/a"][0].device, v.allocation["default/b"][0].device} == {
        "gpu-0",
        "gpu-vfio-1",
    }


def test_all_mode_takes_every_match_and_needs_one() -> None:
    v = run(two_faced("n1", 3, counters=False), [claim("c", request("all", mode="All"))])
    assert v.fits and [d.device for d in v.allocation["default/c"]] == ["gpu-0", "gpu-1", "gpu-2"]
    v = run(
        two_faced("n1", 1, counters=False),
        [claim("c", request("all", "mig.nvidia.com", mode="All"))],
    )
    assert not v.fits and not v.error


def test_all_mode_with_an_incomplete_pool_is_an_error() -> None:
    slices = two_faced("n1", 1, counters=True)[1:]
    v = run(slices, [claim("c", request("all", mode="All"))])
    assert not v.fits and "currently being updated" in (v.error or "")
    v = run(slices, [claim("c", request("one"))])
    assert not v.fits and not v.error and "incomplete" in v.reason


def test_newest_generation_wins() -> None:
    old = device_slice("n1", [device("gpu-0")], generation=1, suffix="old")
    new = device_slice("n1", [device("gpu-9")], generation=2, suffix="new")
    v = run([old, new], [claim("c", request("gpu"))])
    assert v.allocation["default/c"][0].device == "gpu-9"


def test_request_cel_on_product_and_memory() -> None:
    slices = [
        device_slice(
            "n1",
            [
                device("gpu-0", product="NVIDIA A10", memory="24Gi"),
                device("gpu-1", product="NVIDIA A100-SXM4-80GB", memory="80Gi"),
            ],
        )
    ]
    big = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    v = run(slices, [claim("c", request("gpu", "gpu.nvidia.com", big))])
    assert v.allocation["default/c"][0].device == "gpu-1"
    v = run(
        slices,
        [
            claim(
                "c",
                request(
                    "gpu",
                    "gpu.nvidia.com",
                    "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100'",
                ),
            )
        ],
    )
    assert not v.fits
    assert {n.reason for n in v.requests[0].notes} == {"selector #0 of request gpu is false"}


def test_cel_runtime_error_is_fatal_for_the_pod() -> None:
    slices = [device_slice("n1", [device("gpu-0")])]
    v = run(
        slices,
        [
            claim(
                "c",
                request("gpu", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].uuid == 'x'"),
            )
        ],
    )
    assert (
        not v.fits and "CEL runtime error" in (v.error or "") and "no such key" in (v.error or "")
    )


def test_unknown_class_is_an_error() -> None:
    v = run(
        [device_slice("n1", [device("gpu-0")])], [claim("c", request("gpu", "nope.example.com"))]
    )
    assert not v.fits and "device class nope.example.com does not exist" in (v.error or "")


def test_slices_of_other_nodes_are_not_seen() -> None:
    v = run([device_slice("n2", [device("gpu-0")])], [claim("c", request("gpu"))])
    assert not v.fits and v.requests[0].notes == ()


def test_admin_access_may_use_a_held_device() -> None:
    holder = claim("other", request("gpu"), namespace="ns", allocated=[("gpu", "n1", "gpu-0")])
    v = run(
        [device_slice("n1", [device("gpu-0")])], [claim("c", request("gpu", admin=True))], [holder]
    )
    assert v.fits and v.allocation["default/c"][0].admin


def test_first_available_falls_back() -> None:
    c = claim("c")
    c["spec"]["devices"]["requests"] = [
        {
            "name": "r",
            "firstAvailable": [
                {"name": "two", "deviceClassName": "gpu.nvidia.com", "count": 2},
                {"name": "one", "deviceClassName": "gpu.nvidia.com", "count": 1},
            ],
        }
    ]
    v = run([device_slice("n1", [device("gpu-0")])], [c])
    assert v.fits and v.allocation["default/c"][0].request == "r/one"


def test_partial_card_counters() -> None:
    """A MIG-like split: two halves and the whole card share 2 units of one counter set."""
    devs = [
        device("whole", counter_set="cs", consumes=2),
        device("half-a", "mig", counter_set="cs"),
        device("half-b", "mig", counter_set="cs"),
    ]
    slices = [counter_slice("n1", {"cs": 2}), device_slice("n1", devs, count=2)]
    holder = claim("h", request("m", "mig.nvidia.com"), allocated=[("m", "n1", "half-a")])
    assert run(slices, [claim("c", request("m", "mig.nvidia.com"))], [holder]).fits
    v = run(slices, [claim("c", request("g"))], [holder])
    assert (
        not v.fits
        and "counter set cs exhausted by half-a (default/h)" in v.requests[0].notes[0].reason
    )


def test_an_overcommitted_counter_set_blocks_its_whole_pool() -> None:
    """checkAvailableCounters compares every counter set of the pool, not only the device's."""
    held = [
        claim("a", request("x"), namespace="ns", allocated=[("x", "n1", "gpu-0")]),
        claim(
            "b",
            request("x", "vfio.gpu.nvidia.com"),
            namespace="ns",
            allocated=[("x", "n1", "gpu-vfio-0")],
        ),
    ]
    v = run(two_faced("n1", 2, counters=True), [claim("c", request("gpu"))], held)
    assert not v.fits
    notes = dict((n.device, n.reason) for n in v.requests[0].notes)
    assert (
        notes["gpu-1"] == "counter set gpu-0-counter-set of pool gpu.nvidia.com/n1 is overcommitted"
    )


# --- properties ---------------------------------------------------------------------------

cards_st = st.integers(min_value=1, max_value=3)
wanted_st = st.lists(
    st.tuples(st.sampled_from(["gpu.nvidia.com", "vfio.gpu.nvidia.com"]), st.integers(1, 3)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(cards_st, st.booleans(), wanted_st, st.lists(st.integers(0, 5), max_size=3, unique=True))
def test_never_twice_never_over_a_counter_and_complete(
    cards: int, counters: bool, wanted: list[tuple[str, int]], held: list[int]
) -> None:
    slices = two_faced("n1", cards, counters=counters)
    names = [d["name"] for s in slices for d in s["spec"].get("devices", [])]
    held_names = [names[i] for i in held if i < len(names)]
    if counters:  # what the scheduler can produce: at most one holder per card
        held_names = list({n.rsplit("-", 1)[1]: n for n in held_names}.values())
    others = [
        claim(f"h{i}", request("x"), namespace="ns", allocated=[("x", "n1", n)])
        for i, n in enumerate(held_names)
    ]
    claims = [claim(f"c{i}", request("r", cls, count=n)) for i, (cls, n) in enumerate(wanted)]
    v = run(slices, claims, others)
    # Brute force: give each wanted device a distinct free card role of the right class.
    kind = {"gpu.nvidia.com": "gpu", "vfio.gpu.nvidia.com": "vfio"}
    card_of = {n: n.rsplit("-", 1)[1] for n in names}
    busy_cards = {card_of[n] for n in held_names} if counters else set()
    slots = [kind[cls] for cls, n in wanted for _ in range(n)]
    free = [n for n in names if n not in held_names and card_of[n] not in busy_cards]
    feasible = False
    for choice in itertools.permutations(free, len(slots)) if len(slots) <= len(free) else ():
        if all(("vfio" in n) == (slot == "vfio") for n, slot in zip(choice, slots, strict=True)):
            cards_used = [card_of[n] for n in choice]
            if not counters or len(set(cards_used)) == len(cards_used):
                feasible = True
                break
    assert v.fits is feasible
    if v.fits:
        got = [d.device for ds in v.allocation.values() for d in ds]
        assert len(got) == len(set(got)), "a device allocated twice"
        assert not set(got) & set(held_names), "a held device allocated"
        if counters:
            used = [card_of[n] for n in got] + [card_of[n] for n in held_names]
            assert len(used) == len(set(used)), "a counter set exceeded"
