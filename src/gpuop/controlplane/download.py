"""Fetch official release binaries and accept them only when their published sha256 matches.

Why this module exists: building kube-apiserver and friends from source takes half an hour on a
2-core machine, while a machine with internet access can fetch the same release in seconds.
A download is only ever used when it matches the checksum its project publishes next to it;
anything else (no network, a 404, a mismatch) raises :class:`DownloadError` and the caller
builds from source instead. Connections time out fast so an offline machine loses seconds, not
minutes.

Sources (``<arch>`` is ``amd64`` or ``arm64``):

* kubernetes: ``https://dl.k8s.io/release/<v>/bin/linux/<arch>/<name>`` and ``<name>.sha256``;
* etcd: ``https://github.com/etcd-io/etcd/releases/download/<v>/etcd-<v>-linux-<arch>.tar.gz``
  and ``SHA256SUMS`` in the same release;
* kwok: ``https://github.com/kubernetes-sigs/kwok/releases/download/<v>/kwok-linux-<arch>`` and
  ``checksums.txt`` in the same release (without it the download is refused);
* helm: ``https://get.helm.sh/helm-<v>-linux-<arch>.tar.gz`` and ``<that>.sha256sum``.

``GPUOP_DOWNLOAD_BASE_URL`` points all of them at a mirror that keeps the upstream host and
path under its root, i.e. ``<base>/dl.k8s.io/release/...`` and
``<base>/github.com/etcd-io/etcd/releases/download/...`` (the layout ``wget -x`` produces).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from gpuop.controlplane.errors import DownloadError
from gpuop.controlplane.versions import ETCD, HELM, KUBERNETES, KWOK, Component

Progress = Callable[[str], None]

CONNECT_TIMEOUT_S = 3.0
READ_TIMEOUT_S = 60.0
# The first request of a component also covers DNS, which httpx's connect timeout does not bound.
FIRST_CONTACT_DEADLINE_S = 10.0

KUBERNETES_RELEASE_URL = "https://dl.k8s.io/release"
ETCD_RELEASE_URL = "https://github.com/etcd-io/etcd/releases/download"
KWOK_RELEASE_URL = "https://github.com/kubernetes-sigs/kwok/releases/download"
HELM_RELEASE_URL = "https://get.helm.sh"
KWOK_CHECKSUMS_FILE = "checksums.txt"


@dataclass(frozen=True)
class Artifact:
    """One file to fetch, the file holding its sha256, and what to install it as."""

    url: str
    checksum_url: str
    # The file name to look up in a multi-line checksum file; None: the file holds one hash.
    checksum_entry: str | None
    install_as: str
    # For a tarball: the member to extract as ``install_as``.
    archive_member: str | None = None


def download_arch() -> str | None:
    """The release architecture of this machine, or None where no release exists."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)


def download_disabled() -> bool:
    return os.environ.get("GPUOP_NO_DOWNLOAD", "").strip().lower() not in ("", "0", "false", "no")


def mirror(url: str, base: str | None) -> str:
    """``url`` as served by the mirror at ``base`` (``<base>/<host>/<path>``), or unchanged."""
    if not base:
        return url
    parts = urlsplit(url)
    return f"{base.rstrip('/')}/{parts.netloc}{parts.path}"


def artifacts(comp: Component, arch: str, base: str | None = None) -> list[Artifact]:
    """The files that make up ``comp`` for ``arch``, with mirror URLs when ``base`` is set."""
    if comp.name == KUBERNETES.name:
        root = f"{KUBERNETES_RELEASE_URL}/{comp.version}/bin/linux/{arch}"
        return [
            Artifact(
                url=mirror(f"{root}/{name}", base),
                checksum_url=mirror(f"{root}/{name}.sha256", base),
                checksum_entry=None,
                install_as=name,
            )
            for name in comp.binaries
        ]
    if comp.name == ETCD.name:
        root = f"{ETCD_RELEASE_URL}/{comp.version}"
        tarball = f"etcd-{comp.version}-linux-{arch}.tar.gz"
        return [
            Artifact(
                url=mirror(f"{root}/{tarball}", base),
                checksum_url=mirror(f"{root}/SHA256SUMS", base),
                checksum_entry=tarball,
                install_as="etcd",
                archive_member=f"etcd-{comp.version}-linux-{arch}/etcd",
            )
        ]
    if comp.name == KWOK.name:
        root = f"{KWOK_RELEASE_URL}/{comp.version}"
        asset = f"kwok-linux-{arch}"
        return [
            Artifact(
                url=mirror(f"{root}/{asset}", base),
                checksum_url=mirror(f"{root}/{KWOK_CHECKSUMS_FILE}", base),
                checksum_entry=asset,
                install_as="kwok",
            )
        ]
    if comp.name == HELM.name:
        tarball = f"helm-{comp.version}-linux-{arch}.tar.gz"
        return [
            Artifact(
                url=mirror(f"{HELM_RELEASE_URL}/{tarball}", base),
                checksum_url=mirror(f"{HELM_RELEASE_URL}/{tarball}.sha256sum", base),
                checksum_entry=tarball,
                install_as="helm",
                archive_member=f"linux-{arch}/helm",
            )
        ]
    raise DownloadError(f"no release download is known for {comp.label}")


def parse_checksum(text: str, entry: str | None, source: str) -> str:
    """The sha256 for ``entry`` in a checksum file (``<hex>  <name>`` lines, or one bare hex)."""
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        digest = fields[0].lower()
        name = fields[1].lstrip("*").removeprefix("./") if len(fields) > 1 else None
        if entry is None or name == entry:
            if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
                return digest
            break
    wanted = f"an entry for {entry}" if entry else "a sha256"
    raise DownloadError(f"{source} holds no {wanted}")


def _client() -> httpx.Client:
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S, pool=CONNECT_TIMEOUT_S)
    return httpx.Client(timeout=timeout, follow_redirects=True)


def _get_text(client: httpx.Client, url: str, deadline_s: float | None) -> str:
    """GET a small file; with a deadline, bound DNS and connect by running it in a thread."""
    result: list[str] = []
    failure: list[BaseException] = []

    def fetch() -> None:
        try:
            response = client.get(url)
            if response.status_code != 200:
                raise DownloadError(f"{url} answered HTTP {response.status_code}")
            result.append(response.text)
        except BaseException as exc:  # handed to the caller below
            failure.append(exc)

    if deadline_s is None:
        fetch()
    else:
        worker = threading.Thread(target=fetch, name="gpuop-download-probe", daemon=True)
        worker.start()
        worker.join(deadline_s)
        if worker.is_alive():
            raise DownloadError(f"{url}: no answer within {deadline_s:.0f}s", unreachable=True)
    if failure:
        exc = failure[0]
        if isinstance(exc, DownloadError):
            raise exc
        if isinstance(exc, httpx.HTTPError):
            unreachable = isinstance(exc, httpx.ConnectError | httpx.TimeoutException)
            raise DownloadError(
                f"{url}: {type(exc).__name__}: {exc}", unreachable=unreachable
            ) from exc
        raise exc
    return result[0]


def _fetch_verified(client: httpx.Client, url: str, sha256: str, target: Path) -> int:
    """Stream ``url`` into ``target``; raise DownloadError unless its sha256 is ``sha256``."""
    digest = hashlib.sha256()
    size = 0
    try:
        with client.stream("GET", url) as response:
            if response.status_code != 200:
                raise DownloadError(f"{url} answered HTTP {response.status_code}")
            with target.open("wb") as out:
                for chunk in response.iter_bytes(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
                    size += len(chunk)
    except httpx.HTTPError as exc:
        raise DownloadError(f"{url}: {type(exc).__name__}: {exc}") from exc
    actual = digest.hexdigest()
    if actual != sha256:
        target.unlink(missing_ok=True)
        raise DownloadError(
            f"checksum mismatch for {url}: the published sha256 is {sha256}, the file's is "
            f"{actual}; the file was rejected"
        )
    return size


def _extract_member(tarball: Path, member: str, target: Path) -> None:
    try:
        with tarfile.open(tarball, "r:*") as archive:
            source = archive.extractfile(member)
            if source is None:
                raise DownloadError(f"{tarball.name} holds no file {member}")
            with source, target.open("wb") as out:
                shutil.copyfileobj(source, out)
    except (tarfile.TarError, KeyError) as exc:
        raise DownloadError(f"cannot extract {member} from {tarball.name}: {exc}") from exc


def download_component(
    comp: Component,
    dest: Path,
    *,
    base_url: str | None = None,
    arch: str | None = None,
    progress: Progress | None = None,
) -> None:
    """Put every binary of ``comp`` into ``dest`` (which must exist), each one verified.

    Raises DownloadError on any failure; ``dest`` may then hold partial files.
    """
    say = progress or (lambda _msg: None)
    arch = arch or download_arch()
    if arch is None:
        raise DownloadError(
            f"no {comp.name} release exists for this machine ({platform.machine()})"
        )
    base = base_url if base_url is not None else os.environ.get("GPUOP_DOWNLOAD_BASE_URL")
    with _client() as client:
        first = True
        for art in artifacts(comp, arch, base):
            text = _get_text(client, art.checksum_url, FIRST_CONTACT_DEADLINE_S if first else None)
            first = False
            sha256 = parse_checksum(text, art.checksum_entry, art.checksum_url)
            started = time.monotonic()
            if art.archive_member is None:
                target = dest / art.install_as
                size = _fetch_verified(client, art.url, sha256, target)
            else:
                tarball = dest / (art.url.rsplit("/", 1)[-1] + ".part")
                size = _fetch_verified(client, art.url, sha256, tarball)
                target = dest / art.install_as
                _extract_member(tarball, art.archive_member, target)
                tarball.unlink()
            target.chmod(0o755)
            say(
                f"  downloaded {art.install_as} ({size / 1e6:.0f} MB, sha256 verified) "
                f"in {time.monotonic() - started:.1f}s"
            )
