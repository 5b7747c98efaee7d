"""The rule families, one module each: the codes, severities and texts a checker reports.

Adding a family is one module declaring a `RuleFamily` and one entry in `FAMILIES`; the
registry (`gpuop.check.rules`), the text, JSON and SARIF output and the rules documentation
(`gpuop.check.docs.render_rules`) all read this list.
"""

from __future__ import annotations

from gpuop.check.families import gpu, versions
from gpuop.check.rule_types import RuleFamily

FAMILIES: tuple[RuleFamily, ...] = (gpu.FAMILY, versions.FAMILY)

__all__ = ["FAMILIES"]
