"""The control plane's components and how each is started: names, command lines, and the
certificates, kubeconfigs and config files those command lines point to.

Every flag that makes the local cluster behave like a real one (TLS and RBAC on, the
audit log, the controller manager sized for a thousand kwok nodes) is set here, in one
table per component; `gpuop.controlplane.cluster` owns the processes and the state
directory the command lines point into.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from gpuop.controlplane.binaries import Binaries
from gpuop.controlplane.kubeconfig import Credentials, write_kubeconfig
from gpuop.controlplane.kwok_stages import kwok_config
from gpuop.controlplane.pki import SERVICE_CLUSTER_IP_RANGE, ClusterPki, generate_pki
from gpuop.controlplane.ports import LOOPBACK
from gpuop.controlplane.versions import feature_gates_flag, runtime_config_flag

ETCD = "etcd"
APISERVER = "kube-apiserver"
KCM = "kube-controller-manager"
SCHEDULER = "kube-scheduler"
KWOK = "kwok"
# Start order; ``down`` stops in reverse.
COMPONENT_NAMES: tuple[str, ...] = (ETCD, APISERVER, KCM, SCHEDULER, KWOK)

KWOK_POD_CIDR = "10.244.0.0/16"
KWOK_NODE_IP = "127.0.0.1"

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
# One entry per request, at the end (or on a panic): who did what to which object.
omitStages:
- RequestReceived
rules:
# Health probes of the start-up code and kubectl are noise.
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
# kwok renews every node's Lease (10,000 nodes: hundreds a second); nothing reads them back.
- level: None
  namespaces: ["kube-node-lease"]
  resources:
  - group: coordination.k8s.io
    resources: ["leases"]
- level: Metadata
"""


def component_kubeconfig(directory: Path, component: str) -> Path:
    """The kubeconfig of a component's own identity."""
    return directory / "kubeconfigs" / f"{component}.kubeconfig"


# kwok renews each node's Lease every quarter of this (the kubelet's default: 40 s). A fleet
# benchmark lengthens it: at 10,000 nodes, 40 s means a thousand renewals a second.
NODE_LEASE_SECONDS = 40
# The controller manager marks a node NotReady this long after its Lease was last renewed.
NODE_MONITOR_GRACE_SECONDS = 300


def component_argv(
    directory: Path,
    name: str,
    bins: Binaries,
    ports: dict[str, int],
    node_lease_seconds: int = NODE_LEASE_SECONDS,
    disabled_controllers: tuple[str, ...] = (),
) -> dict[str, list[str]]:
    """Each component's command line, for the cluster whose state is in `directory`;
    `disabled_controllers` are controller manager controllers left off (a benchmark of the
    operator alone turns off `daemonset-controller`: no operand pods are made)."""
    pki = ClusterPki(directory / "pki")
    etcd_url = f"http://{LOOPBACK}:{ports[ETCD]}"
    peer_url = f"http://{LOOPBACK}:{ports['etcd-peer']}"
    member = f"gpuop-{name}"
    kcm_kc = str(component_kubeconfig(directory, KCM))
    sched_kc = str(component_kubeconfig(directory, SCHEDULER))
    allow = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
    return {
        ETCD: [
            str(bins["etcd"]),
            f"--name={member}",
            f"--data-dir={directory / 'etcd-data'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster={member}={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync",
        ],
        APISERVER: [
            str(bins["kube-apiserver"]),
            f"--etcd-servers={etcd_url}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            # The endpoint reconciler refuses a loopback address (1.37: "may not be in the
            # loopback range"); nothing in a kwok cluster dials the kubernetes Service.
            "--endpoint-reconciler-type=none",
            f"--secure-port={ports[APISERVER]}",
            f"--cert-dir={directory / 'pki'}",
            f"--tls-cert-file={pki.apiserver.cert}",
            f"--tls-private-key-file={pki.apiserver.key}",
            f"--client-ca-file={pki.ca.cert}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_pub}",
            f"--service-account-signing-key-file={pki.sa_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--allow-privileged=true",
            "--enable-priority-and-fairness=false",
            "--profiling=false",
            f"--audit-policy-file={directory / 'audit-policy.yaml'}",
            f"--audit-log-path={directory / 'logs' / 'audit.log'}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
            feature_gates_flag(),
            runtime_config_flag(),
        ],
        KCM: [
            str(bins["kube-controller-manager"]),
            f"--kubeconfig={kcm_kc}",
            f"--authentication-kubeconfig={kcm_kc}",
            f"--authorization-kubeconfig={kcm_kc}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={ports[KCM]}",
            f"--cert-dir={directory / 'pki' / KCM}",
            allow,
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--root-ca-file={pki.ca.cert}",
            f"--service-account-private-key-file={pki.sa_key}",
            f"--cluster-signing-cert-file={pki.ca.cert}",
            f"--cluster-signing-key-file={pki.ca.key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--profiling=false",
            # The DaemonSet controller creates one pod per node and operand: the default
            # client QPS of 20 would take minutes at a thousand nodes.
            "--kube-api-qps=200",
            "--kube-api-burst=400",
            "--concurrent-daemonset-syncs=4",
            "--controllers=" + ",".join(["*", *(f"-{c}" for c in disabled_controllers)]),
            # kwok renews a thousand node leases from one process; on a busy machine some
            # renewals come late, and the default 50 s grace would mark those nodes
            # NotReady and their pods not Ready, which no kubelet is there to undo.
            f"--node-monitor-grace-period={NODE_MONITOR_GRACE_SECONDS}s",
            feature_gates_flag(),
        ],
        SCHEDULER: [
            str(bins["kube-scheduler"]),
            f"--config={directory / 'kube-scheduler.yaml'}",
            f"--authentication-kubeconfig={sched_kc}",
            f"--authorization-kubeconfig={sched_kc}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={ports[SCHEDULER]}",
            f"--cert-dir={directory / 'pki' / SCHEDULER}",
            allow,
            feature_gates_flag(),
        ],
        KWOK: [
            str(bins["kwok"]),
            f"--kubeconfig={component_kubeconfig(directory, KWOK)}",
            f"--config={directory / 'kwok.yaml'}",
            "--manage-all-nodes=true",
            f"--server-address={LOOPBACK}:{ports[KWOK]}",
            f"--node-ip={KWOK_NODE_IP}",
            f"--cidr={KWOK_POD_CIDR}",
            f"--node-lease-duration-seconds={node_lease_seconds}",
        ],
    }


def write_component_files(
    directory: Path, name: str, admin_kubeconfig: Path, ports: dict[str, int]
) -> None:
    """The certificates, kubeconfigs and config files the command lines point to."""
    pki = generate_pki(directory / "pki", name)
    server = f"https://{LOOPBACK}:{ports[APISERVER]}"
    ca_pem = pki.ca.cert.read_bytes()
    for identity, path in (
        ("admin", admin_kubeconfig),
        (KCM, component_kubeconfig(directory, KCM)),
        (SCHEDULER, component_kubeconfig(directory, SCHEDULER)),
        (KWOK, component_kubeconfig(directory, KWOK)),
    ):
        pair = pki.client(identity)
        write_kubeconfig(
            path,
            server=server,
            ca_pem=ca_pem,
            credentials=Credentials(
                client_cert_pem=pair.cert.read_bytes(), client_key_pem=pair.key.read_bytes()
            ),
            cluster=f"gpuop-{name}",
            user=f"gpuop-{identity}",
        )
    (directory / "audit-policy.yaml").write_text(AUDIT_POLICY, encoding="utf-8")
    (directory / "kwok.yaml").write_text(kwok_config(), encoding="utf-8")
    scheduler_config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(component_kubeconfig(directory, SCHEDULER)),
            # Thousands of simulated nodes: the client-side defaults (QPS 50) would be the bottleneck.
            "qps": 200,
            "burst": 400,
        },
        "leaderElection": {"leaderElect": False},
    }
    (directory / "kube-scheduler.yaml").write_text(
        yaml.safe_dump(scheduler_config, sort_keys=False), encoding="utf-8"
    )
