"""The release-download path of ensure_binaries, against a local mirror on 127.0.0.1.

Tiny fake files stand in for the binaries; the build step is replaced by a stub that records
which components it was asked to build, so no real binary is fetched or built.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuop.controlplane import binaries as binaries_mod
from gpuop.controlplane import build as build_mod
from gpuop.controlplane import download
from gpuop.controlplane.errors import DownloadError, ToolchainError
from gpuop.controlplane.versions import COMPONENTS, ETCD, HELM, KUBERNETES, KWOK, TOOLS, Component

ARCH = "amd64"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _put(root: Path, url: str, data: bytes) -> None:
    path = root / download.mirror(url, "x").removeprefix("x/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _fake_binary(name: str) -> bytes:
    return f"#!/bin/sh\necho fake {name}\n".encode()


def populate_mirror(root: Path, *, corrupt: str | None = None) -> None:
    """Write every release file of every component (``corrupt``: one whose sha256 lies)."""
    k8s = f"{download.KUBERNETES_RELEASE_URL}/{KUBERNETES.version}/bin/linux/{ARCH}"
    for name in KUBERNETES.binaries:
        data = _fake_binary(name)
        digest = _sha(b"something else") if corrupt == name else _sha(data)
        _put(root, f"{k8s}/{name}", data)
        _put(root, f"{k8s}/{name}.sha256", digest.encode())

    tar_name = f"etcd-{ETCD.version}-linux-{ARCH}.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in ("etcd", "etcdctl", "README.md"):
            data = _fake_binary(member)
            info = tarfile.TarInfo(f"etcd-{ETCD.version}-linux-{ARCH}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    tarball = buffer.getvalue()
    etcd_root = f"{download.ETCD_RELEASE_URL}/{ETCD.version}"
    _put(root, f"{etcd_root}/{tar_name}", tarball)
    etcd_digest = _sha(b"x") if corrupt == "etcd" else _sha(tarball)
    sums = f"{_sha(b'other')}  etcd-{ETCD.version}-darwin-arm64.zip\n{etcd_digest}  {tar_name}\n"
    _put(root, f"{etcd_root}/SHA256SUMS", sums.encode())

    kwok_root = f"{download.KWOK_RELEASE_URL}/{KWOK.version}"
    kwok = _fake_binary("kwok")
    _put(root, f"{kwok_root}/kwok-linux-{ARCH}", kwok)
    kwok_digest = _sha(b"y") if corrupt == "kwok" else _sha(kwok)
    checksums = f"{kwok_digest}  kwok-linux-{ARCH}\n{_sha(b'z')}  kwokctl-linux-{ARCH}\n"
    _put(root, f"{kwok_root}/{download.KWOK_CHECKSUMS_FILE}", checksums.encode())

    helm_tar = f"helm-{HELM.version}-linux-{ARCH}.tar.gz"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member in ("helm", "LICENSE", "README.md"):
            data = _fake_binary(member)
            info = tarfile.TarInfo(f"linux-{ARCH}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    helm_tarball = buffer.getvalue()
    _put(root, f"{download.HELM_RELEASE_URL}/{helm_tar}", helm_tarball)
    helm_digest = _sha(b"h") if corrupt == "helm" else _sha(helm_tarball)
    _put(
        root,
        f"{download.HELM_RELEASE_URL}/{helm_tar}.sha256sum",
        f"{helm_digest}  {helm_tar}\n".encode(),
    )


class Mirror:
    def __init__(self, root: Path, base_url: str, requests: list[str]) -> None:
        self.root = root
        self.base_url = base_url
        self.requests = requests


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    root = tmp_path / "mirror"
    root.mkdir()
    requests: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            requests.append(self.path)
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Mirror(root, f"http://127.0.0.1:{server.server_address[1]}", requests)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUOP_CACHE_DIR", str(cache))
    monkeypatch.delenv("GPUOP_NO_DOWNLOAD", raising=False)
    monkeypatch.delenv("GPUOP_DOWNLOAD_BASE_URL", raising=False)
    monkeypatch.setattr(download, "download_arch", lambda: ARCH)
    return cache


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace go build by a stub writing fake binaries; lists the components it built."""
    calls: list[str] = []

    def fake_build(
        comp: Component, out_dir: Path, *, log_path: Path, progress: object, why: str = ""
    ) -> float:
        calls.append(comp.name)
        for name in comp.binaries:
            target = out_dir / name
            target.write_bytes(b"#!/bin/sh\necho built\n")
            target.chmod(0o755)
        return 0.0

    monkeypatch.setattr(build_mod, "build_component", fake_build)
    return calls


def test_parse_checksum_formats() -> None:
    digest = "a" * 64
    assert download.parse_checksum(f"{digest}\n", None, "x") == digest
    text = f"{'b' * 64}  other\n{digest} *kwok-linux-amd64\n"
    assert download.parse_checksum(text, "kwok-linux-amd64", "x") == digest
    with pytest.raises(DownloadError, match="holds no an entry for missing"):
        download.parse_checksum(text, "missing", "x")
    with pytest.raises(DownloadError):
        download.parse_checksum("not-a-hash\n", None, "x")


def test_mirror_keeps_host_and_path() -> None:
    url = "https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubectl"
    assert download.mirror(url, None) == url
    assert (
        download.mirror(url, "http://127.0.0.1:8080/m/")
        == "http://127.0.0.1:8080/m/dl.k8s.io/release/v1.37.2/bin/linux/amd64/kubectl"
    )


@pytest.mark.parametrize("comp", (*COMPONENTS, *TOOLS), ids=lambda c: c.name)
def test_good_checksums_are_used(comp: Component, mirror: Mirror, tmp_path: Path) -> None:
    populate_mirror(mirror.root)
    dest = tmp_path / "out"
    dest.mkdir()
    download.download_component(comp, dest, base_url=mirror.base_url, arch=ARCH)
    assert sorted(p.name for p in dest.iterdir()) == sorted(comp.binaries)
    for name in comp.binaries:
        assert (dest / name).read_bytes() == _fake_binary(name)
        assert (dest / name).stat().st_mode & 0o111


@pytest.mark.parametrize("corrupt", ["kube-scheduler", "etcd", "kwok", "helm"])
def test_bad_checksum_is_rejected(corrupt: str, mirror: Mirror, tmp_path: Path) -> None:
    populate_mirror(mirror.root, corrupt=corrupt)
    by_binary = {name: comp for comp in (*COMPONENTS, *TOOLS) for name in comp.binaries}
    comp = by_binary[corrupt]
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(DownloadError, match="checksum mismatch"):
        download.download_component(comp, dest, base_url=mirror.base_url, arch=ARCH)
    assert not (dest / corrupt).exists()


def test_missing_checksum_file_is_refused(mirror: Mirror, tmp_path: Path) -> None:
    populate_mirror(mirror.root)
    checksums = download.mirror(
        f"{download.KWOK_RELEASE_URL}/{KWOK.version}/{download.KWOK_CHECKSUMS_FILE}", "x"
    ).removeprefix("x/")
    (mirror.root / checksums).unlink()
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(DownloadError, match="HTTP 404"):
        download.download_component(KWOK, dest, base_url=mirror.base_url, arch=ARCH)
    assert list(dest.iterdir()) == []


def test_ensure_binaries_uses_verified_downloads_and_caches(
    mirror: Mirror, isolated: Path, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    populate_mirror(mirror.root)
    monkeypatch.setenv("GPUOP_DOWNLOAD_BASE_URL", mirror.base_url)
    messages: list[str] = []
    result = binaries_mod.ensure_binaries(progress=messages.append)
    assert built == []
    for comp in COMPONENTS:
        folder = isolated / "bin" / comp.dir_name
        assert not folder.with_name(folder.name + ".tmp").exists()
        for name in comp.binaries:
            assert result[name] == folder / name
            assert result[name].read_bytes() == _fake_binary(name)
    assert any("sha256 verified" in m for m in messages)

    # A second call is served from the cache: no request reaches the mirror.
    mirror.requests.clear()
    again = binaries_mod.ensure_binaries()
    assert again.paths == result.paths
    assert mirror.requests == []


def test_bad_checksum_falls_back_to_building(
    mirror: Mirror, isolated: Path, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    populate_mirror(mirror.root, corrupt="kwok")
    monkeypatch.setenv("GPUOP_DOWNLOAD_BASE_URL", mirror.base_url)
    messages: list[str] = []
    result = binaries_mod.ensure_binaries(progress=messages.append)
    assert built == ["kwok"]
    assert result["kwok"].read_bytes() == b"#!/bin/sh\necho built\n"
    assert result["etcd"].read_bytes() == _fake_binary("etcd")
    assert any("checksum mismatch" in m and "building from source" in m for m in messages)


def test_bad_checksum_without_go_says_both(
    mirror: Mirror, isolated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate_mirror(mirror.root, corrupt="etcd")
    monkeypatch.setenv("GPUOP_DOWNLOAD_BASE_URL", mirror.base_url)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(ToolchainError) as excinfo:
        binaries_mod.ensure_binaries()
    message = str(excinfo.value)
    assert "checksum mismatch" in message
    assert "'go') is not on PATH" in message
    assert not (isolated / "bin" / ETCD.dir_name).exists()


def test_unreachable_server_falls_through_fast(
    isolated: Path, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:  # a port with nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("GPUOP_DOWNLOAD_BASE_URL", f"http://127.0.0.1:{port}")
    messages: list[str] = []
    started = time.monotonic()
    binaries_mod.ensure_binaries(progress=messages.append)
    assert time.monotonic() - started < 10
    assert built == [comp.name for comp in COMPONENTS]
    # After the first refusal the other components do not try again.
    assert sum("release download was not used" in m for m in messages) == 1


def test_no_download_env_skips_the_network(
    mirror: Mirror, isolated: Path, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    populate_mirror(mirror.root)
    monkeypatch.setenv("GPUOP_DOWNLOAD_BASE_URL", mirror.base_url)
    monkeypatch.setenv("GPUOP_NO_DOWNLOAD", "1")
    binaries_mod.ensure_binaries()
    assert mirror.requests == []
    assert built == [comp.name for comp in COMPONENTS]


def test_leftover_tmp_folder_is_not_taken_for_a_cache(
    isolated: Path, built: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUOP_NO_DOWNLOAD", "1")
    half = isolated / "bin" / (KWOK.dir_name + ".tmp")
    half.mkdir(parents=True)
    (half / "kwok").write_bytes(b"half")
    binaries_mod.ensure_binaries(components=[KWOK])
    assert built == ["kwok"]
    assert not half.exists()
    assert (isolated / "bin" / KWOK.dir_name / "kwok").read_bytes() == b"#!/bin/sh\necho built\n"
