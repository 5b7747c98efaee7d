"""The certificates and keys of one local cluster, made with the ``cryptography`` package.

Why this module exists: the local control plane runs with TLS and RBAC on, like a real cluster,
so the operator's own RBAC is exercised and nothing listens in plain text except etcd on
loopback. One throw-away CA per cluster signs:

* the apiserver serving certificate (SANs 127.0.0.1, localhost, kubernetes.default.svc...);
* one client certificate per identity: the admin (group ``system:masters``), the controller
  manager and the scheduler (their built-in RBAC users) and kwok (``system:masters``, it plays
  every kubelet);

plus the service-account signing key pair. Nothing here is meant to be secret beyond the
machine: the files are written with mode 0600 in the cluster's state directory.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
APISERVER_DNS_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)

ADMIN_USER = "gpuop-admin"
KWOK_USER = "gpuop-kwok-controller"
KCM_USER = "system:kube-controller-manager"
SCHEDULER_USER = "system:kube-scheduler"
MASTERS_GROUP = "system:masters"

_CA_DAYS = 3650
_LEAF_DAYS = 365


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class ClusterPki:
    """Paths of every PKI file of one cluster."""

    root: Path

    @property
    def ca(self) -> CertPair:
        return CertPair(self.root / "ca.crt", self.root / "ca.key")

    @property
    def apiserver(self) -> CertPair:
        return CertPair(self.root / "apiserver.crt", self.root / "apiserver.key")

    def client(self, name: str) -> CertPair:
        return CertPair(self.root / f"{name}.crt", self.root / f"{name}.key")

    @property
    def sa_key(self) -> Path:
        return self.root / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.root / "sa.pub"


# client certificate file name -> (user, groups)
CLIENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": (ADMIN_USER, (MASTERS_GROUP,)),
    "kube-controller-manager": (KCM_USER, ()),
    "kube-scheduler": (SCHEDULER_USER, ()),
    "kwok": (KWOK_USER, (MASTERS_GROUP,)),
}


def _write(path: Path, data: bytes, private: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    tmp.replace(path)


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attrs)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _builder(
    subject: x509.Name, issuer: x509.Name, key: PrivateKey, days: int
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """Signing for every certificate; a CA signs certificates and CRLs, a leaf enciphers keys."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not ca,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _leaf(
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    subject: x509.Name,
    *,
    server: bool,
    sans: list[x509.GeneralName] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        _builder(subject, ca_cert.subject, key, _LEAF_DAYS)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def generate_pki(root: Path, cluster_name: str) -> ClusterPki:
    """Write a fresh CA, serving and client certificates and the SA key pair under ``root``."""
    pki = ClusterPki(root)
    ca_key = _new_key()
    ca_subject = _name(f"gpuop-{cluster_name}-ca")
    ca_cert = (
        _builder(ca_subject, ca_subject, ca_key, _CA_DAYS)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write(pki.ca.cert, _cert_pem(ca_cert), private=False)
    _write(pki.ca.key, _key_pem(ca_key), private=True)

    sans: list[x509.GeneralName] = [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address(KUBERNETES_SERVICE_IP)),
    ]
    sans += [x509.DNSName(name) for name in APISERVER_DNS_NAMES]
    cert, key = _leaf(ca_cert, ca_key, _name("kube-apiserver"), server=True, sans=sans)
    _write(pki.apiserver.cert, _cert_pem(cert), private=False)
    _write(pki.apiserver.key, _key_pem(key), private=True)

    for file_name, (user, groups) in CLIENTS.items():
        cert, key = _leaf(ca_cert, ca_key, _name(user, groups), server=False)
        pair = pki.client(file_name)
        _write(pair.cert, _cert_pem(cert), private=False)
        _write(pair.key, _key_pem(key), private=True)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(pki.sa_key, _key_pem(sa_key), private=True)
    sa_pub = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(pki.sa_pub, sa_pub, private=False)
    return pki
