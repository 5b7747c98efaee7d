"""Parse a ClusterPolicy once, resolve its defaults once, and answer questions about it.

`parse_cluster_policy` turns a plain object (from YAML, JSON or the API) into a
`ResolvedPolicy`, or raises `PolicyError` listing every problem with its field path.
Everything downstream (planner, operator, checker) asks the resolved policy, never the
raw spec, so the upstream nil-defaults live in exactly one place.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from pydantic import ValidationError

from gpuop.api.wording import value_kind
from gpuop.catalog import Operand, SandboxMode, WorkloadConfig, load_data_yaml, operand_table
from gpuop.policy.models import ClusterPolicy, ComponentSpec, MigManagerSpec

DEFAULT_RUNTIME_CLASS = "nvidia"
DEFAULT_VGPU_CONFIG = "default"
DEFAULT_MIG_CONFIG = "all-disabled"
# The Kata sandbox device plugin's resource name for every GPU unless `P_GPU_ALIAS` is set.
DEFAULT_KATA_GPU_ALIAS = "pgpu"


class PolicyError(ValueError):
    """A ClusterPolicy that cannot be used; `problems` name each field path."""

    def __init__(self, problems: list[str], source: str = "ClusterPolicy") -> None:
        self.problems = problems
        self.source = source
        super().__init__(f"{source}: " + "; ".join(problems))


# Location parts pydantic adds for the members of a union (`int | str`, constrained types,
# validators): they name Python types, not fields, and are left out of the field path.
_UNION_TAGS = frozenset({"int", "str", "bool", "float", "literal", "none", "dict", "list"})


def _is_field(part: int | str) -> bool:
    if isinstance(part, int):
        return True
    return not (part in _UNION_TAGS or part.startswith("constrained-") or "[" in part)


def _format_location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


_INPUT_SHOULD_BE = "Input should be "


def _message(item: Any) -> str:
    kind = item["type"]
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping, got {value_kind(item.get('input'))}"
    message = str(item["msg"])
    if kind.endswith("_type") and message.startswith(_INPUT_SHOULD_BE):
        # "Input should be a valid integer" -> "expected an integer, got a string".
        wanted = message.removeprefix(_INPUT_SHOULD_BE).replace("a valid ", "", 1)
        article = "an" if wanted[:1] in "aeiou" else "a"
        return f"expected {article} {wanted}, got {value_kind(item.get('input'))}"
    return message


def validation_problems(error: ValidationError) -> list[str]:
    """One line per bad field: `spec.driver.enabled: expected a boolean, got a string`.

    The errors pydantic reports for each member of a union (`int | str`) are joined
    into one line for the field.
    """
    by_field: dict[str, list[str]] = {}
    for item in error.errors(include_url=False):
        where = _format_location(tuple(p for p in item["loc"] if _is_field(p)))
        messages = by_field.setdefault(where, [])
        message = _message(item)
        if message not in messages:
            messages.append(message)
    return [f"{where}: {_joined(messages)}" for where, messages in by_field.items()]


def _joined(messages: list[str]) -> str:
    """`expected an integer, got a list` + `expected a string, got a list` -> one phrase."""
    wanted = [m.removeprefix("expected ").rpartition(", got ") for m in messages]
    if all(m.startswith("expected ") for m in messages) and len({got for *_, got in wanted}) == 1:
        return f"expected {' or '.join(what for what, _, _ in wanted)}, got {wanted[0][2]}"
    return " or ".join(messages)


@dataclass(frozen=True)
class ResolvedPolicy:
    """A ClusterPolicy with every default applied; ask it, not the raw spec."""

    policy: ClusterPolicy
    sandbox_enabled: bool
    default_workload: WorkloadConfig
    sandbox_mode: SandboxMode
    runtime_class: str
    cdi_enabled: bool
    nri_plugin_enabled: bool
    mig_strategy: str
    mig_manager_default_config: str
    vgpu_default_config: str
    vgpu_config_map: str | None
    warnings: tuple[str, ...]
    # `P_GPU_ALIAS` of the Kata sandbox device plugin; "" means GPUs are named by model.
    kata_gpu_alias: str = DEFAULT_KATA_GPU_ALIAS

    @property
    def name(self) -> str:
        return self.policy.metadata.name

    def component(self, block: str | None) -> ComponentSpec | None:
        if block is None:
            return None
        value = getattr(self.policy.spec, block, None)
        return value if isinstance(value, ComponentSpec) else None

    def block_enabled(self, block: str, default: bool) -> bool:
        component = getattr(self.policy.spec, block, None)
        enabled = getattr(component, "enabled", None)
        return default if enabled is None else bool(enabled)

    def operand_enabled(self, operand: Operand) -> bool:
        """Whether the operator deploys this operand at all (upstream `isStateEnabled`)."""
        if operand.deprecated:
            return False
        if operand.requires_sandbox and not self.sandbox_enabled:
            return False
        if operand.requires_mode is not None and operand.requires_mode != self.sandbox_mode:
            return False
        if operand.name in ("driver", "vgpu-manager") and self._uses_driver_crd():
            return False
        if operand.policy_field is None:
            return True
        return self.block_enabled(operand.policy_field, operand.enabled_default)

    def _uses_driver_crd(self) -> bool:
        driver = self.policy.spec.driver
        return bool(driver and driver.useNvidiaDriverCRD)

    def enabled_operands(self) -> tuple[Operand, ...]:
        return tuple(op for op in operand_table().operands if self.operand_enabled(op))

    def image_for(self, operand: Operand, operator_env: dict[str, str] | None = None) -> str:
        """The operand image, resolved as upstream does, with the catalog as the last resort.

        Raises `PolicyError` when repository/image/version are only partly set.
        """
        block = operand.spec_block
        component = self.component(block)
        repository = component.repository if component else None
        image = component.image if component else None
        version = component.version if component else None
        if repository and image and version:
            separator = "@" if version.startswith("sha256:") else ":"
            return f"{repository}/{image}{separator}{version}"
        if image and not repository and not version:
            return image
        if repository or image or version:
            missing = [
                name
                for name, value in (
                    ("repository", repository),
                    ("image", image),
                    ("version", version),
                )
                if not value
            ]
            raise PolicyError(
                [f"spec.{block}: {', '.join(missing)} must be set with the other image fields"]
            )
        env = operator_env or {}
        if operand.image_env in env:
            return env[operand.image_env]
        defaults = operand.image
        version_default = (
            operand_table().default_versions.get(defaults.version_key)
            if defaults.version_key
            else None
        )
        if defaults.repository is None or version_default is None:
            raise PolicyError(
                [
                    f"spec.{block}: no public image exists for {operand.name}; "
                    "set repository, image and version"
                ]
            )
        return f"{defaults.repository}/{defaults.image}:{version_default}"


def _mig_default_config(mig_manager: MigManagerSpec | None) -> str:
    """`migManager.config.default` as the API server stores it.

    The CRD defaults `config.default` to `all-disabled` only inside a `config` object, so
    no `config` means no default (and no `nvidia.com/mig.config` label), and `default: ""`
    is how users opt out of the MIG default.
    """
    if mig_manager is None or mig_manager.config is None:
        return ""
    default = mig_manager.config.default
    return DEFAULT_MIG_CONFIG if default is None else default


def _kata_gpu_alias(plugin: ComponentSpec | None) -> str:
    """The Kata plugin's `P_GPU_ALIAS`: unset gives `pgpu`, `""` model-specific names."""
    alias = DEFAULT_KATA_GPU_ALIAS
    for variable in plugin.env if plugin and plugin.env else []:
        if variable.name == "P_GPU_ALIAS":
            alias = variable.value or ""  # the last of duplicate names wins, as in a pod
    return alias


def _resolve(policy: ClusterPolicy) -> ResolvedPolicy:
    spec = policy.spec
    sandbox = spec.sandboxWorkloads
    warnings: list[str] = []
    cdi = spec.cdi
    cdi_enabled = True if cdi is None or cdi.enabled is None else cdi.enabled
    nri = bool(cdi and cdi.nriPluginEnabled)
    toolkit_enabled = spec.toolkit is None or spec.toolkit.enabled is not False
    if nri and not (cdi_enabled and toolkit_enabled):
        warnings.append("spec.cdi.nriPluginEnabled requires cdi.enabled and toolkit.enabled")
    if spec.psp is not None:
        warnings.append("spec.psp is ignored (PodSecurityPolicy no longer exists)")
    if spec.operator is not None and spec.operator.defaultRuntime is not None:
        warnings.append("spec.operator.defaultRuntime is deprecated and ignored")
    mig_manager = spec.migManager
    vgpu_dm = spec.vgpuDeviceManager
    return ResolvedPolicy(
        policy=policy,
        sandbox_enabled=bool(sandbox and sandbox.enabled),
        default_workload=(
            sandbox.defaultWorkload if sandbox and sandbox.defaultWorkload else "container"
        ),
        sandbox_mode=(sandbox.mode if sandbox and sandbox.mode else "kubevirt"),
        runtime_class=(
            spec.operator.runtimeClass
            if spec.operator and spec.operator.runtimeClass
            else DEFAULT_RUNTIME_CLASS
        ),
        cdi_enabled=cdi_enabled,
        nri_plugin_enabled=nri,
        mig_strategy=(spec.mig.strategy if spec.mig and spec.mig.strategy else "single"),
        mig_manager_default_config=_mig_default_config(mig_manager),
        vgpu_default_config=(
            vgpu_dm.config.default
            if vgpu_dm and vgpu_dm.config and vgpu_dm.config.default
            else DEFAULT_VGPU_CONFIG
        ),
        vgpu_config_map=(vgpu_dm.config.name if vgpu_dm and vgpu_dm.config else None),
        warnings=tuple(warnings),
        kata_gpu_alias=_kata_gpu_alias(spec.kataSandboxDevicePlugin),
    )


def parse_cluster_policy(obj: Any, source: str = "ClusterPolicy") -> ResolvedPolicy:
    """Validate a ClusterPolicy object and resolve its defaults.

    Raises `PolicyError` naming every bad field path; never anything else for bad input.
    """
    if not isinstance(obj, dict):
        raise PolicyError([f"expected a mapping (a ClusterPolicy), got {value_kind(obj)}"], source)
    kind = obj.get("kind")
    if kind is not None and kind != "ClusterPolicy":
        raise PolicyError([f"kind: expected ClusterPolicy, got {kind!r}"], source)
    try:
        policy = ClusterPolicy.model_validate(obj)
    except ValidationError as exc:
        raise PolicyError(validation_problems(exc), source) from None
    return _resolve(policy)


POLICY_API_VERSION = "nvidia.com/v1"


def identity_problems(
    obj: Any, kind: str = "ClusterPolicy", api_version: str = POLICY_API_VERSION
) -> list[str]:
    """What a document read from a file lacks to be this kind of object at all: an object
    without `apiVersion` and `kind` is never one (the API server refuses it too)."""
    if not isinstance(obj, dict):
        return []
    problems = []
    if obj.get("apiVersion") is None:
        problems.append(f"apiVersion: required ({api_version})")
    elif obj.get("apiVersion") != api_version:
        problems.append(f"apiVersion: expected {api_version}, got {obj.get('apiVersion')!r}")
    if obj.get("kind") is None:
        problems.append(f"kind: required ({kind})")
    return problems


@cache
def _default_policy_document() -> dict[str, Any]:
    text = resources.files("gpuop.catalog").joinpath("clusterpolicy.yaml").read_text("utf-8")
    loaded = load_data_yaml(text)
    assert isinstance(loaded, dict)
    return loaded


def default_policy_object() -> dict[str, Any]:
    """The ClusterPolicy a plain install creates (the Helm chart's values), as a new object.

    A copy each time: callers edit it (tests, the lab's policy variants).
    """
    return copy.deepcopy(_default_policy_document())


def default_policy() -> ResolvedPolicy:
    """The resolved default ClusterPolicy (sandbox workloads off, as a plain install)."""
    return parse_cluster_policy(default_policy_object(), "default ClusterPolicy")


__all__ = [
    "ClusterPolicy",
    "PolicyError",
    "ResolvedPolicy",
    "default_policy",
    "default_policy_object",
    "identity_problems",
    "parse_cluster_policy",
    "validation_problems",
]
