"""`gpuop check`: find nodes whose labels, operands and advertised resources disagree.

Pure: it reads Kubernetes objects already loaded (see `gpuop.manifests.load_objects`) and
returns a `Report`; reading files and talking to the API are the CLI's and `gpuop.kube`'s
business. What a node should run and advertise comes from `gpuop.planner.plan`, never from
rules of its own.

It is also the engine every checker reports through: one rule registry over the rule
families (`gpuop.check.families`: GPU for `gpuop check`, VER for the version checks), one
finding log (`context.FindingLog.add`), one `Report`, one text/JSON/SARIF output that takes
the checker's name, and one rules-documentation renderer (`docs.render_rule_docs`).

    report = run_checks(objects)             # or check_state(ClusterState.from_objects(...))
    report.findings, report.summary(), report.to_json()
    render_text(report), to_sarif(report)
"""

from gpuop.check.docs import REPORT_SCHEMA, render_docs, render_rule_docs
from gpuop.check.engine import check_state, run_checks
from gpuop.check.model import SCHEMA_VERSION, Finding, NodeSummary, PolicyInfo, Report, Skip
from gpuop.check.output import render_text, to_sarif
from gpuop.check.rules import REGISTRY, RULES, Rule, RuleFamily, Severity
from gpuop.check.state import ClusterState, NodeView

__all__ = [
    "REGISTRY",
    "REPORT_SCHEMA",
    "RULES",
    "SCHEMA_VERSION",
    "ClusterState",
    "Finding",
    "NodeSummary",
    "NodeView",
    "PolicyInfo",
    "Report",
    "Rule",
    "RuleFamily",
    "Severity",
    "Skip",
    "check_state",
    "render_docs",
    "render_rule_docs",
    "render_text",
    "run_checks",
    "to_sarif",
]
