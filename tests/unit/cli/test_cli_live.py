"""kubectl's kubeconfig rule, shared by every `--live` command."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuop.cli.common import UserError
from gpuop.cli.live import kubeconfig_path, live_target

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: admin@lab
contexts:
- {name: admin@lab, context: {cluster: lab, user: admin}}
- {name: ci@prod, context: {cluster: prod, user: ci}}
clusters:
- {name: lab, cluster: {server: 'https://127.0.0.1:6443'}}
- {name: prod, cluster: {server: 'https://prod.example:443'}}
users: [{name: admin, user: {token: t}}, {name: ci, user: {token: t}}]
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    return tmp_path


def _write(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(KUBECONFIG)
    return path


def test_flag_then_env_list_then_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert kubeconfig_path(None) is None
    default = _write(home / ".kube" / "config")
    assert kubeconfig_path(None) == str(default)
    second = _write(home / "second")
    monkeypatch.setenv("KUBECONFIG", f"{home / 'missing'}{os.pathsep}{second}")
    assert kubeconfig_path(None) == str(second)
    assert kubeconfig_path("/given") == "/given"


def test_env_naming_only_missing_files_is_an_error(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(home / ".kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(home / "nope"))
    with pytest.raises(UserError, match=r"\$KUBECONFIG .*no such file"):
        kubeconfig_path(None)


def test_target_names_the_cluster_of_the_context(home: Path) -> None:
    path = _write(home / ".kube" / "config")
    current = live_target(True, None, None)
    assert current is not None
    assert current.describe() == "cluster lab (https://127.0.0.1:6443), context admin@lab"
    chosen = live_target(True, str(path), "ci@prod")
    assert chosen is not None and chosen.server == "https://prod.example:443"
    with pytest.raises(UserError, match="no context 'nope'"):
        live_target(True, str(path), "nope")


def test_without_live_the_options_are_refused(home: Path) -> None:
    assert live_target(False, None, None) is None
    with pytest.raises(UserError, match="need --live"):
        live_target(False, None, "lab")
    with pytest.raises(UserError, match="need --live"):
        live_target(False, "/k", None)


def test_no_kubeconfig_anywhere_is_one_clear_error(home: Path) -> None:
    with pytest.raises(UserError, match="no kubeconfig"):
        live_target(True, None, None)
    with pytest.raises(UserError, match="no such file"):
        live_target(True, str(home / "absent"), None)


def test_a_broken_kubeconfig_is_one_clear_error(home: Path) -> None:
    broken = home / "broken"
    broken.write_text("- not\n- a kubeconfig\n")
    with pytest.raises(UserError, match="not a kubeconfig"):
        live_target(True, str(broken), None)
    broken.write_text("contexts: []\n")
    with pytest.raises(UserError, match="no current-context"):
        live_target(True, str(broken), None)
