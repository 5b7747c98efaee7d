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

import contextlib
import hashlib
import http.client
import os
import platform
import shutil
import ssl
import tarfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gpuop.controlplane.errors import DownloadError
from gpuop.controlplane.versions import ETCD, HELM, KUBERNETES, KWOK, Component

Progress = Callable[[str], None]

CONNECT_TIMEOUT_S = 3.0
READ_TIMEOUT_S = 60.0
# The first request of a component also covers DNS, which the connect timeout does not bound.
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


@dataclass(frozen=True)
class _Release:
    """Where one component's release files lie, as templates of ``{v}``, ``{arch}`` and ``{name}``.

    ``{v}`` is the version and ``{name}`` each of its binaries, installed under that name.
    """

    url: str
    checksum_url: str
    # Whether the checksum file lists several files (the downloaded one is looked up by its
    # file name) rather than holding the one hash of this file.
    lists_files: bool
    archive_member: str | None = None


_RELEASES: dict[str, _Release] = {
    KUBERNETES.name: _Release(
        url=KUBERNETES_RELEASE_URL + "/{v}/bin/linux/{arch}/{name}",
        checksum_url=KUBERNETES_RELEASE_URL + "/{v}/bin/linux/{arch}/{name}.sha256",
        lists_files=False,
    ),
    ETCD.name: _Release(
        url=ETCD_RELEASE_URL + "/{v}/etcd-{v}-linux-{arch}.tar.gz",
        checksum_url=ETCD_RELEASE_URL + "/{v}/SHA256SUMS",
        lists_files=True,
        archive_member="etcd-{v}-linux-{arch}/etcd",
    ),
    KWOK.name: _Release(
        url=KWOK_RELEASE_URL + "/{v}/kwok-linux-{arch}",
        checksum_url=KWOK_RELEASE_URL + "/{v}/" + KWOK_CHECKSUMS_FILE,
        lists_files=True,
    ),
    HELM.name: _Release(
        url=HELM_RELEASE_URL + "/helm-{v}-linux-{arch}.tar.gz",
        checksum_url=HELM_RELEASE_URL + "/helm-{v}-linux-{arch}.tar.gz.sha256sum",
        lists_files=True,
        archive_member="linux-{arch}/helm",
    ),
}


def artifacts(comp: Component, arch: str, base: str | None = None) -> list[Artifact]:
    """The files that make up ``comp`` for ``arch``, with mirror URLs when ``base`` is set."""
    release = _RELEASES.get(comp.name)
    if release is None:
        raise DownloadError(f"no release download is known for {comp.label}")
    found = []
    for name in comp.binaries:
        fill = {"v": comp.version, "arch": arch, "name": name}
        url = release.url.format(**fill)
        member = release.archive_member
        found.append(
            Artifact(
                url=mirror(url, base),
                checksum_url=mirror(release.checksum_url.format(**fill), base),
                checksum_entry=url.rsplit("/", 1)[-1] if release.lists_files else None,
                install_as=name,
                archive_member=member.format(**fill) if member is not None else None,
            )
        )
    return found


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


class _HTTPConnection(http.client.HTTPConnection):
    """Connect within CONNECT_TIMEOUT_S, then wait up to READ_TIMEOUT_S for each read."""

    def connect(self) -> None:
        self.timeout = CONNECT_TIMEOUT_S
        super().connect()
        self.sock.settimeout(READ_TIMEOUT_S)


class _HTTPSConnection(_HTTPConnection, http.client.HTTPSConnection):
    """The same timeouts over TLS (the handshake counts as connecting)."""


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self) -> None:
        self._tls = ssl.create_default_context()
        super().__init__(context=self._tls)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, context=self._tls)


def _client() -> urllib.request.OpenerDirector:
    """An opener that follows redirects and honours the *_proxy variables, with our timeouts."""
    return urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler())


def _open(client: urllib.request.OpenerDirector, url: str) -> Any:
    """GET ``url``; a status other than 200 raises DownloadError."""
    try:
        response = client.open(url)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise DownloadError(f"{url} answered HTTP {exc.code}") from None
    if response.status != 200:
        response.close()
        raise DownloadError(f"{url} answered HTTP {response.status}")
    return response


# What fetching raises when the transfer fails (urllib's URLError is an OSError).
_TRANSFER_ERRORS = (OSError, http.client.HTTPException)


def _transfer_failure(url: str, exc: BaseException) -> DownloadError:
    # No connection (DNS, refused, connect timeout) or no answer in time: the server is
    # unreachable, so trying the other components' downloads would only lose time.
    unreachable = isinstance(exc, TimeoutError) or (
        isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError)
    )
    what = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    return DownloadError(f"{url}: {type(exc).__name__}: {what}", unreachable=unreachable)


def _get_text(client: urllib.request.OpenerDirector, url: str, deadline_s: float | None) -> str:
    """GET a small file; with a deadline, bound DNS and connect by running it in a thread."""
    result: list[str] = []
    failure: list[BaseException] = []

    def fetch() -> None:
        try:
            with _open(client, url) as response:
                result.append(response.read().decode("utf-8", errors="replace"))
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
        if isinstance(exc, _TRANSFER_ERRORS):
            raise _transfer_failure(url, exc) from exc
        raise exc
    return result[0]


def _fetch_verified(
    client: urllib.request.OpenerDirector, url: str, sha256: str, target: Path
) -> int:
    """Stream ``url`` into ``target``; raise DownloadError unless its sha256 is ``sha256``."""
    digest = hashlib.sha256()
    size = 0
    try:
        with _open(client, url) as response, target.open("wb") as out:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
    except _TRANSFER_ERRORS as exc:
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
    with contextlib.closing(_client()) as client:
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
