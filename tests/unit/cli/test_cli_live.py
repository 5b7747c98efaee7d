"""kubectl's kubeconfig rule, shared by every `--live` command, the operator and the simulator."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpuop.cli.common import UserError, resolve_kubeconfig
from gpuop.cli.live import kubeconfig_files, live_target
from gpuop.kube import load_kubeconfig

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
    assert kubeconfig_files(None) == ()
    default = _write(home / ".kube" / "config")
    assert kubeconfig_files(None) == (str(default),)
    second = _write(home / "second")
    monkeypatch.setenv("KUBECONFIG", f"{home / 'missing'}{os.pathsep}{second}")
    assert kubeconfig_files(None) == (str(second),)
    monkeypatch.setenv("KUBECONFIG", f"{default}{os.pathsep}{second}")
    assert kubeconfig_files(None) == (str(default), str(second))
    assert kubeconfig_files("/given") == ("/given",)


OTHER = """\
apiVersion: v1
kind: Config
current-context: ci@other
contexts:
- {name: admin@lab, context: {cluster: shadowed, user: admin}}
- {name: ci@other, context: {cluster: other, user: ci-other}}
clusters:
- {name: other, cluster: {server: 'https://other.example:6443', certificate-authority: ca.crt}}
users: [{name: ci-other, user: {token: t}}]
"""


def _two_files(home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    first = _write(home / "one" / "config")
    second = home / "two" / "config"
    second.parent.mkdir()
    second.write_text(OTHER)
    (second.parent / "ca.crt").write_text("not read until a request")
    monkeypatch.setenv("KUBECONFIG", f"{first}{os.pathsep}{second}")
    return first, second


def test_a_kubeconfig_list_is_merged_as_kubectl_merges_it(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _two_files(home, monkeypatch)
    # The first file's current-context and its own admin@lab win; ci@other comes from the
    # second, its CA file found beside that file.
    current = live_target(True, None, None)
    assert current is not None and current.cluster == "lab"
    assert current.kubeconfig == f"{first}{os.pathsep}{second}"
    other = live_target(True, None, "ci@other")
    assert other is not None and other.server == "https://other.example:6443"
    config = load_kubeconfig(None)
    assert config.current_context == "admin@lab"
    chosen = config.get("ci@other")
    assert chosen is not None
    assert chosen.cluster.certificate_auth == str(second.parent / "ca.crt")
    assert config.get("admin@lab").cluster.server == "https://127.0.0.1:6443"


def test_the_simulator_takes_the_list_and_never_home_config(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _two_files(home, monkeypatch)
    assert resolve_kubeconfig(None) == (str(first), str(second))
    monkeypatch.delenv("KUBECONFIG")
    _write(home / ".kube" / "config")
    monkeypatch.setenv("GPUOP_STATE_DIR", str(home / "state"))
    with pytest.raises(UserError, match="gpuop cluster up"):
        resolve_kubeconfig(None)


def test_env_naming_only_missing_files_is_an_error(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(home / ".kube" / "config")
    monkeypatch.setenv("KUBECONFIG", str(home / "nope"))
    with pytest.raises(UserError, match=r"\$KUBECONFIG .*no such file"):
        kubeconfig_files(None)


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


def test_the_operator_leaves_kubeconfig_to_the_rule(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--kubeconfig` once took $KUBECONFIG whole, and a list of two files failed to load.
    from gpuop.cli.operator import operator

    run = operator.commands["run"]
    (option,) = [p for p in run.params if p.name == "kubeconfig"]
    assert option.envvar is None
    _two_files(home, monkeypatch)
    assert load_kubeconfig(None).current_context == "admin@lab"
