"""Device selectors: Kubernetes' DRA CEL environment, its libraries and its error semantics."""

from __future__ import annotations

import pytest
from dra_builders import CLASS_EXPR
from hypothesis import given
from hypothesis import strategies as st

from gpuop.dra.cel import CelError, compile_selector
from gpuop.dra.model import Device, Version

GPU = Device(
    driver="gpu.nvidia.com",
    pool="n1",
    name="gpu-0",
    node="n1",
    attributes={
        "gpu.nvidia.com/type": "gpu",
        "gpu.nvidia.com/productName": "NVIDIA A100-SXM4-40GB",
        "gpu.nvidia.com/driverVersion": Version("550.54.15"),
        "gpu.nvidia.com/index": 0,
        "gpu.nvidia.com/iommuFDEnabled": False,
    },
    capacity={"gpu.nvidia.com/memory": 40 * 2**30},
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (CLASS_EXPR["gpu.nvidia.com"], True),
        (CLASS_EXPR["vfio.gpu.nvidia.com"], False),
        ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", True),
        ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))", False),
        ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('80Gi'))", True),
        ("device.capacity['gpu.nvidia.com'].memory == quantity('40960Mi')", True),
        ("device.attributes['gpu.nvidia.com'].productName.lowerAscii().contains('a100')", True),
        ("device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA H100')", False),
        ("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')", True),
        (
            "device.attributes['gpu.nvidia.com'].driverVersion.isGreaterThan(semver('535.129.3'))",
            True,
        ),
        ("device.attributes['gpu.nvidia.com'].driverVersion.major() == 550", True),
        ("semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))", True),
        ("semver('v1.2', true) == semver('1.2.0')", True),
        ("device.attributes['gpu.nvidia.com'].index == 0", True),
        ("device.attributes['gpu.nvidia.com'].type == 1", False),
        ("device.attributes['gpu.nvidia.com'].type != 1", True),
        ("!device.attributes['gpu.nvidia.com'].iommuFDEnabled", True),
        ("has(device.attributes['gpu.nvidia.com'].uuid)", False),
        ("has(device.attributes['other.example.com'].x)", False),
        ("'other.example.com' in device.attributes", False),
        ("device.allowMultipleAllocations == false", True),
        ("true || device.attributes['gpu.nvidia.com'].missing == 'x'", True),
        ("quantity('1.5Gi').isGreaterThan(quantity('1Gi'))", True),
        ("quantity('2').asInteger() == 2", True),
    ],
)
def test_selectors_evaluate_as_kubernetes(expression: str, expected: bool) -> None:
    assert compile_selector(expression).evaluate(GPU) is expected


@pytest.mark.parametrize(
    "expression",
    [
        "device.attributes['gpu.nvidia.com'].uuid == 'GPU-1'",
        "device.attributes['other.example.com'].x == 1",
        "device.capacity['gpu.nvidia.com'].cores.isGreaterThan(quantity('1'))",
        "device.attributes['gpu.nvidia.com'].index",
        "quantity('lots').isGreaterThan(quantity('1'))",
    ],
)
def test_runtime_errors(expression: str) -> None:
    selector = compile_selector(expression)
    with pytest.raises(CelError, match=r"^CEL runtime error") as info:
        selector.evaluate(GPU)
    assert not info.value.compile_time and "\n" not in str(info.value)


def test_missing_attribute_names_the_key() -> None:
    with pytest.raises(CelError, match="no such key: 'uuid'"):
        compile_selector("device.attributes['gpu.nvidia.com'].uuid == 'x'").evaluate(GPU)


@pytest.mark.parametrize(
    "expression", ["", "device.driver ==", "device.driver.frobnicate()", "foo(1)", "1 +* 2"]
)
def test_compile_errors(expression: str) -> None:
    with pytest.raises(CelError, match=r"^CEL compile error") as info:
        compile_selector(expression)
    assert info.value.compile_time and "\n" not in str(info.value)


@given(st.text(max_size=40))
def test_any_text_compiles_or_fails_clearly(text: str) -> None:
    try:
        selector = compile_selector(text)
    except CelError as error:
        assert "\n" not in str(error)
        return
    try:
        assert isinstance(selector.evaluate(GPU), bool)
    except CelError as error:
        assert "\n" not in str(error)


@given(st.integers(min_value=0, max_value=2**40), st.integers(min_value=0, max_value=2**40))
def test_quantity_comparisons_agree_with_integers(have: int, want: int) -> None:
    dev = Device("d", "p", "x", None, {}, {"d/memory": have})
    expr = f"device.capacity['d'].memory.compareTo(quantity('{want}')) >= 0"
    assert compile_selector(expr).evaluate(dev) is (have >= want)
