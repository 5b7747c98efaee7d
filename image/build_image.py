"""Build the gpuop operator image with no container daemon: Debian packages, the wheel, OCI.

Why this script exists: the operator has to ship as an image the Helm chart runs, and the
machines that build it have package registries but no container daemon and no registry. So
the image is assembled by hand, deterministically:

1. ``mmdebstrap --variant=extract`` resolves and downloads the Debian packages named in
   ``image/image.toml`` (the .debs are kept in ``<cache>/image/debs`` and fed back to apt on
   the next build); the closure of their Depends is unpacked into a root filesystem with
   ``dpkg-deb``, on a merged /usr, without docs, man pages or locales;
2. the project's wheel and the pinned, hash-checked wheels of ``image/requirements.lock``
   (kept in ``<cache>/image/wheels``) are installed into Debian's dist-packages, with
   ``/usr/bin/gpuop`` as the entrypoint (a Python script: no shell in the image);
3. everything is byte-compiled by the image's own Python (hash-based .pyc, so a read-only root
   filesystem never needs a write);
4. three layers (Debian, Python dependencies, gpuop) are written as sorted tars with one
   mtime (``SOURCE_DATE_EPOCH``, by default the last commit's time), root ownership and
   gzip without a timestamp, so the same inputs give the same digest;
5. the OCI layout (``<out>/oci``), one archive that ``docker load``, ``ctr images import``,
   ``kind load image-archive`` and ``skopeo copy oci-archive:`` all take, and an SPDX SBOM of
   the Debian and Python packages are written beside each other.

Run ``python image/build_image.py build`` (``make image``), ``... lock`` to re-pin the Python
dependencies from the wheel's requirements. Needs root (or unprivileged user namespaces) for
mmdebstrap and to run the image's Python in its root filesystem.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "image" / "image.toml"
LOCK = REPO / "image" / "requirements.lock"

# A merged /usr: what Debian's usrmerge makes of the packages' top-level folders.
MERGED_USR = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


class ImageError(RuntimeError):
    """The image cannot be built; the message says why and what to do."""


# -- configuration and inputs ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    uid: int
    gid: int
    user: str
    suite: str
    sources: tuple[str, ...]
    packages: tuple[str, ...]
    left_out: frozenset[str]
    drop_prefixes: tuple[str, ...]
    python_version: str
    interpreter: str
    site_packages: str
    abi: str
    glibc_minor: int

    @classmethod
    def load(cls, path: Path = CONFIG) -> Config:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        image, debian, python = data["image"], data["debian"], data["python"]
        return cls(
            name=image["name"],
            uid=int(image["uid"]),
            gid=int(image["gid"]),
            user=image["user"],
            suite=debian["suite"],
            sources=tuple(debian["sources"]),
            packages=tuple(debian["packages"]),
            left_out=frozenset(debian["left_out"]),
            drop_prefixes=tuple(debian["drop_prefixes"]),
            python_version=python["version"],
            interpreter=python["interpreter"],
            site_packages=python["site_packages"],
            abi=python["abi"],
            glibc_minor=int(python["glibc_minor"]),
        )

    def wheel_platforms(self) -> list[str]:
        """Every manylinux tag the image's glibc runs, newest first (pip does not expand them)."""
        tags = [f"manylinux_2_{minor}_x86_64" for minor in range(self.glibc_minor, 16, -1)]
        return [*tags, "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]

    def pip_target_args(self) -> list[str]:
        args = ["--only-binary=:all:", "--implementation", "cp"]
        args += ["--python-version", self.python_version, "--abi", self.abi]
        for platform in self.wheel_platforms():
            args += ["--platform", platform]
        return args


def cache_root() -> Path:
    explicit = os.environ.get("GPUOP_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "gpuop"


def project_version() -> str:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def source_revision() -> str:
    """The commit the image is built from, ``-dirty`` when tracked files differ from it."""
    revision = _git("rev-parse", "HEAD") or "unknown"
    if revision != "unknown" and _git("status", "--porcelain", "--untracked-files=no"):
        revision += "-dirty"
    return revision


def source_date_epoch() -> int:
    explicit = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if explicit:
        return int(explicit)
    committed = _git("log", "-1", "--format=%ct")
    return int(committed) if committed else 0


def run(cmd: list[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    except FileNotFoundError as exc:
        raise ImageError(f"{what}: {cmd[0]} is not installed ({exc})") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise ImageError(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n{tail}")
    return done


# -- Debian packages ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Deb:
    path: Path
    name: str
    version: str
    arch: str
    depends: tuple[tuple[str, ...], ...]  # each a list of alternatives
    provides: tuple[str, ...]

    @functools.cached_property
    def sha256(self) -> str:
        return sha256_file(self.path)


def parse_relations(field: str) -> tuple[tuple[str, ...], ...]:
    """``a (>= 1) | b:any, c`` -> (("a", "b"), ("c",)): package names only."""
    groups: list[tuple[str, ...]] = []
    for group in field.split(","):
        names = []
        for alternative in group.split("|"):
            name = re.sub(r"\(.*?\)|\[.*?\]|<.*?>", "", alternative).strip().split(":")[0]
            if name:
                names.append(name)
        if names:
            groups.append(tuple(names))
    return tuple(groups)


def read_deb(path: Path) -> Deb:
    fields = run(
        [
            "dpkg-deb",
            "--show",
            "--showformat=${Package}\\n${Version}\\n${Architecture}\\n"
            "${Depends}\\n${Pre-Depends}\\n${Provides}\\n",
            str(path),
        ],
        f"reading {path.name}",
    ).stdout.split("\n")
    name, version, arch, depends, pre_depends, provides = fields[:6]
    return Deb(
        path=path,
        name=name,
        version=version,
        arch=arch,
        depends=parse_relations(pre_depends) + parse_relations(depends),
        provides=tuple(alt for group in parse_relations(provides) for alt in group),
    )


def _dpkg_newer(a: str, b: str) -> bool:
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b], check=False).returncode == 0


def newest_per_package(debs: Iterable[Deb]) -> dict[str, Deb]:
    """The newest version of each package: apt's candidate, as the cache may hold older ones."""
    newest: dict[str, Deb] = {}
    for deb in debs:
        current = newest.get(deb.name)
        if current is None or _dpkg_newer(deb.version, current.version):
            newest[deb.name] = deb
    return newest


def dependency_closure(
    available: dict[str, Deb], roots: Iterable[str], left_out: frozenset[str]
) -> list[Deb]:
    """The packages ``roots`` need, by name; an alternative group of left-out names is skipped."""
    providers: dict[str, str] = {}
    for deb in available.values():
        for virtual in deb.provides:
            providers.setdefault(virtual, deb.name)
    chosen: dict[str, Deb] = {}
    pending = list(roots)
    for root in pending:
        if root not in available:
            raise ImageError(f"Debian package {root} was not downloaded; is it in the suite?")
    while pending:
        name = pending.pop()
        if name in chosen:
            continue
        deb = available[name]
        chosen[name] = deb
        for group in deb.depends:
            if all(alt in left_out for alt in group):
                continue
            for alt in group:
                real = alt if alt in available else providers.get(alt)
                if real is not None and alt not in left_out:
                    pending.append(real)
                    break
            else:
                raise ImageError(f"{name} needs {' | '.join(group)}, which apt did not download")
    return sorted(chosen.values(), key=lambda deb: deb.name)


def download_debs(config: Config, cache: Path, work: Path) -> list[Deb]:
    """Resolve and download with mmdebstrap (seeded from and saved to the cache)."""
    debs_cache = cache / "image" / "debs"
    debs_cache.mkdir(parents=True, exist_ok=True)
    staging = work / "mmdebstrap"
    cmd = [
        "mmdebstrap",
        "--variant=extract",
        "--include=" + ",".join(config.packages),
        "--skip=download/empty",
        "--skip=cleanup/apt/cache",
        '--setup-hook=mkdir -p "$1/var/cache/apt/archives"',
        f"--setup-hook=sync-in {debs_cache} /var/cache/apt/archives",
        config.suite,
        str(staging),
        *config.sources,
    ]
    run(cmd, "mmdebstrap (resolving and downloading the Debian packages)")
    archives = staging / "var" / "cache" / "apt" / "archives"
    for deb in archives.glob("*.deb"):
        target = debs_cache / deb.name
        if not target.exists():
            shutil.copy2(deb, target)
    shutil.rmtree(staging)
    available = newest_per_package(read_deb(path) for path in sorted(debs_cache.glob("*.deb")))
    return dependency_closure(available, config.packages, config.left_out)


def usr_merged(name: str) -> str:
    top, _, rest = name.partition("/")
    if top in MERGED_USR:
        return MERGED_USR[top] + ("/" + rest if rest else "")
    return name


def unpack_debs(debs: list[Deb], root: Path, drop_prefixes: tuple[str, ...]) -> None:
    """Unpack each package's files into ``root`` (merged /usr, dropped paths left out)."""
    for top, target in MERGED_USR.items():
        (root / target).mkdir(parents=True, exist_ok=True)
        (root / top).symlink_to(target)
    for deb in debs:
        stream = subprocess.Popen(
            ["dpkg-deb", "--fsys-tarfile", str(deb.path)], stdout=subprocess.PIPE
        )
        assert stream.stdout is not None
        with tarfile.open(fileobj=stream.stdout, mode="r|") as archive:
            for member in archive:
                name = usr_merged(member.name.removeprefix("./").rstrip("/"))
                if not name or name in MERGED_USR or _dropped(name, drop_prefixes):
                    continue
                _extract(archive, member, root, name)
        if stream.wait() != 0:
            raise ImageError(f"dpkg-deb could not read {deb.path}")


def _dropped(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix.rstrip("/") or name.startswith(prefix) for prefix in prefixes)


def _extract(archive: tarfile.TarFile, member: tarfile.TarInfo, root: Path, name: str) -> None:
    target = root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if member.isdir():
        target.mkdir(exist_ok=True)
        target.chmod(member.mode & 0o7777)
    elif member.issym():
        if target.is_symlink() or target.exists():
            target.unlink()
        target.symlink_to(member.linkname)
    elif member.islnk():
        source = root / usr_merged(member.linkname.removeprefix("./"))
        if target.exists():
            target.unlink()
        os.link(source, target)
    elif member.isfile():
        source_file = archive.extractfile(member)
        assert source_file is not None
        if target.is_symlink():
            target.unlink()
        with target.open("wb") as out:
            shutil.copyfileobj(source_file, out)
        target.chmod(member.mode & 0o7777)
    # Device nodes and fifos: none in these packages, and the runtime provides /dev.


# -- Python packages ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Locked:
    name: str
    version: str
    sha256: str


def read_lock(path: Path = LOCK) -> list[Locked]:
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
        if not match:
            raise ImageError(f"{path}: cannot read the line {line!r} (want NAME==VERSION --hash)")
        entries.append(Locked(*match.groups()))
    return entries


def build_wheel(work: Path) -> Path:
    out = work / "dist"
    run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(REPO)],
        "building the gpuop wheel (python -m build; pip install build)",
    )
    (wheel,) = out.glob("gpuop-*.whl")
    return wheel


def write_lock(config: Config, wheel: Path, work: Path, path: Path = LOCK) -> None:
    """Pin the wheel's dependencies, as resolved for the image's Python, with their hashes."""
    report = work / "pip-report.json"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--ignore-installed",
        "-q",
        "--report",
        str(report),
        "--target",
        str(work / "unused"),
        *config.pip_target_args(),
        str(wheel),
    ]
    run(cmd, "resolving the Python dependencies")
    installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    lines = [
        "# The operator image's Python dependencies, resolved for its Python and platform:",
        "# python image/build_image.py lock (after changing [project] dependencies).",
    ]
    for item in sorted(installs, key=lambda i: i["metadata"]["name"].lower()):
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        if name == "gpuop":
            continue
        digest = item["download_info"]["archive_info"]["hashes"]["sha256"]
        lines.append(f"{name}=={version} --hash=sha256:{digest}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def fetch_wheels(config: Config, cache: Path) -> Path:
    """The locked wheels in the cache, checked against their hashes (downloaded once)."""
    wheels = cache / "image" / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    base = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        "--require-hashes",
        "--disable-pip-version-check",
        "-d",
        str(wheels),
        *config.pip_target_args(),
        "-r",
        str(LOCK),
    ]
    offline = subprocess.run(
        [*base, "--no-index", "--find-links", str(wheels)],
        capture_output=True,
        text=True,
        check=False,
    )
    if offline.returncode != 0:
        run(base, "downloading the locked Python wheels")
    return wheels


def install_python(config: Config, root: Path, wheel: Path, wheels: Path, work: Path) -> None:
    site = root / config.site_packages
    site.mkdir(parents=True, exist_ok=True)
    common = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-index",
        "--no-compile",
        "--disable-pip-version-check",
        "--find-links",
        str(wheels),
        "--target",
        str(site),
        *config.pip_target_args(),
    ]
    run([*common, "--require-hashes", "-r", str(LOCK)], "installing the locked wheels")
    # The wheel is copied to a fixed path first: pip records where it came from.
    fixed = work / "wheel" / wheel.name
    fixed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(wheel, fixed)
    run([*common, str(fixed)], "installing the gpuop wheel")
    shutil.rmtree(site / "bin", ignore_errors=True)
    for direct_url in site.glob("*.dist-info/direct_url.json"):
        direct_url.unlink()
        record = direct_url.parent / "RECORD"
        kept = [
            line
            for line in record.read_text().splitlines()
            if not line.startswith(f"{direct_url.parent.name}/direct_url.json,")
        ]
        record.write_text("\n".join(kept) + "\n")
    entrypoint = root / "usr" / "bin" / "gpuop"
    entrypoint.write_text(
        f"#!{config.interpreter} -I\n"
        '"""gpuop, the operator image\'s entrypoint."""\n'
        "import sys\n\nfrom gpuop.cli import main\n\nsys.exit(main())\n",
        encoding="utf-8",
    )
    entrypoint.chmod(0o755)


def installed_python_packages(config: Config, root: Path) -> list[tuple[str, str]]:
    found = []
    for metadata in sorted((root / config.site_packages).glob("*.dist-info/METADATA")):
        fields = dict(
            line.split(": ", 1) for line in metadata.read_text().splitlines()[:20] if ": " in line
        )
        found.append((fields["Name"], fields["Version"]))
    return found


def add_system_files(config: Config, root: Path, debs: list[Deb]) -> None:
    """The user, /tmp, and the package list scanners read (/var/lib/dpkg/status.d)."""
    etc = root / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"{config.user}:x:{config.uid}:{config.gid}:{config.user}:/nonexistent:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\n{config.user}:x:{config.gid}:\n")
    (root / "tmp").mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    status = root / "var" / "lib" / "dpkg" / "status.d"
    status.mkdir(parents=True, exist_ok=True)
    for deb in debs:
        control = run(["dpkg-deb", "--field", str(deb.path)], f"reading {deb.path.name}").stdout
        (status / deb.name).write_text(control.rstrip("\n") + "\nStatus: install ok installed\n")


def in_root(root: Path) -> list[str]:
    """The command prefix that runs a program inside ``root`` (chroot as root, else unshare)."""
    if os.geteuid() == 0:
        chroot = shutil.which("chroot") or "/usr/sbin/chroot"
        return [chroot, str(root)]
    return [shutil.which("unshare") or "unshare", "--map-root-user", f"--root={root}"]


def byte_compile(config: Config, root: Path) -> None:
    """Compile every module with the image's Python: hash-based .pyc, never rewritten."""
    cmd = [
        *in_root(root),
        config.interpreter,
        "-I",
        "-m",
        "compileall",
        "-q",
        "-f",
        "--invalidation-mode",
        "unchecked-hash",
        "-x",
        r"/(lib2to3/tests|test)/",
        f"/usr/lib/python{config.python_version}",
        "/" + config.site_packages,
    ]
    run(cmd, "byte-compiling in the image", env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin"})


def smoke_test(root: Path) -> str:
    cmd = [*in_root(root), "/usr/bin/gpuop", "--version"]
    return run(cmd, "running gpuop in the image", env={"PATH": "/usr/bin"}).stdout.strip()


# -- deterministic layers and the OCI layout --------------------------------------------------


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def layer_of(name: str, site_packages: str) -> int:
    """0: Debian and the system files, 1: the Python dependencies, 2: gpuop itself."""
    if name == "usr/bin/gpuop":
        return 2
    if name.startswith(site_packages + "/"):
        top = name[len(site_packages) + 1 :].split("/", 1)[0]
        if top == "gpuop" or (top.startswith("gpuop-") and top.endswith(".dist-info")):
            return 2
        return 1
    return 0


def walk(root: Path) -> Iterator[str]:
    """Every path under ``root``, relative, sorted bytewise (a tree's stable order)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        base = Path(dirpath).relative_to(root)
        for entry in sorted([*dirnames, *filenames]):
            yield str(base / entry) if str(base) != "." else entry


def tar_entry(root: Path, name: str, mtime: int) -> tuple[tarfile.TarInfo, Path | None]:
    path = root / name
    st = path.lstat()
    info = tarfile.TarInfo(name)
    info.mtime = mtime
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = st.st_mode & 0o7777
    if path.is_symlink():
        info.type = tarfile.SYMTYPE
        info.linkname = os.readlink(path)
        info.mode = 0o777
        return info, None
    if path.is_dir():
        info.type = tarfile.DIRTYPE
        return info, None
    if not path.is_file():
        raise ImageError(f"{name} in the root filesystem is not a file, folder or link")
    info.type = tarfile.REGTYPE
    info.size = st.st_size
    return info, path


def write_layers(
    root: Path, names: list[str], config: Config, mtime: int, blobs: Path
) -> list[dict[str, Any]]:
    """Write the three layers; each carries the folders above its files, so it stands alone."""
    groups: list[list[str]] = [[], [], []]
    for name in names:
        groups[layer_of(name, config.site_packages)].append(name)
    for index in (1, 2):
        parents = {str(p) for name in groups[index] for p in Path(name).parents if str(p) != "."}
        groups[index] = sorted(set(groups[index]) | parents)
    layers = []
    for group in groups:
        raw = blobs / "layer.tar"
        with tarfile.open(raw, "w", format=tarfile.PAX_FORMAT) as archive:
            for name in group:
                info, source = tar_entry(root, name, mtime)
                if source is None:
                    archive.addfile(info)
                else:
                    with source.open("rb") as handle:
                        archive.addfile(info, handle)
        diff_id = sha256_file(raw)
        raw_size = raw.stat().st_size
        packed = blobs / "layer.tar.gz"
        with (
            raw.open("rb") as src,
            packed.open("wb") as dst,
            gzip.GzipFile(filename="", mode="wb", fileobj=dst, compresslevel=9, mtime=0) as gz,
        ):
            shutil.copyfileobj(src, gz, 1 << 20)
        raw.unlink()
        digest = sha256_file(packed)
        packed.rename(blobs / digest)
        size = (blobs / digest).stat().st_size
        layers.append(
            {"diff_id": diff_id, "digest": digest, "size": size, "uncompressed": raw_size}
        )
    return layers


def canonical_json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def put_blob(blobs: Path, data: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    (blobs / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def iso8601(epoch: int) -> str:
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass(frozen=True)
class Built:
    ref: str
    manifest_digest: str
    config_digest: str
    archive: Path
    oci_dir: Path
    sbom: Path
    compressed_size: int
    uncompressed_size: int


def image_labels(config: Config, version: str, revision: str, epoch: int) -> dict[str, str]:
    labels = {
        "org.opencontainers.image.title": config.name,
        "org.opencontainers.image.description": "gpuop: the GPU operator and its node simulator",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.created": iso8601(epoch),
        "org.opencontainers.image.licenses": "Apache-2.0",
        "org.opencontainers.image.base.name": f"debian:{config.suite}",
    }
    source = _git("remote", "get-url", "origin")
    if source:
        labels["org.opencontainers.image.source"] = source
    return labels


def write_image(
    config: Config,
    root: Path,
    out: Path,
    version: str,
    revision: str,
    epoch: int,
    debs: list[Deb],
    wheels_dir: Path,
) -> Built:
    oci = out / "oci"
    shutil.rmtree(oci, ignore_errors=True)
    blobs = oci / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    layers = write_layers(root, list(walk(root)), config, epoch, blobs)
    labels = image_labels(config, version, revision, epoch)
    created = iso8601(epoch)
    image_config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "User": f"{config.uid}:{config.gid}",
            "Entrypoint": ["/usr/bin/gpuop"],
            "Cmd": ["operator", "run"],
            "Env": ["PATH=/usr/bin", "LANG=C.UTF-8"],
            "WorkingDir": "/",
            "Labels": labels,
        },
        "rootfs": {
            "type": "layers",
            "diff_ids": [f"sha256:{layer['diff_id']}" for layer in layers],
        },
        "history": [
            {"created": created, "created_by": f"image/build_image.py: {what}"}
            for what in ("Debian packages", "Python dependencies", f"gpuop {version}")
        ],
    }
    config_desc = {"mediaType": MEDIA_CONFIG, **put_blob(blobs, canonical_json(image_config))}
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": config_desc,
        "layers": [
            {"mediaType": MEDIA_LAYER, "digest": f"sha256:{layer['digest']}", "size": layer["size"]}
            for layer in layers
        ],
        "annotations": labels,
    }
    manifest_desc = {"mediaType": MEDIA_MANIFEST, **put_blob(blobs, canonical_json(manifest))}
    ref = f"{config.name}:{version}"
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {
                **manifest_desc,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "org.opencontainers.image.ref.name": version,
                    "io.containerd.image.name": f"docker.io/library/{ref}",
                },
            }
        ],
    }
    (oci / "oci-layout").write_bytes(canonical_json({"imageLayoutVersion": "1.0.0"}))
    (oci / "index.json").write_bytes(canonical_json(index))
    # docker load reads manifest.json (docker save's format) from the same archive.
    docker_manifest = [
        {
            "Config": f"blobs/sha256/{config_desc['digest'].split(':')[1]}",
            "RepoTags": [ref],
            "Layers": [f"blobs/sha256/{layer['digest']}" for layer in layers],
        }
    ]
    (oci / "manifest.json").write_bytes(canonical_json(docker_manifest))
    archive = out / f"{config.name}-{version}.tar"
    write_archive(oci, archive, epoch)
    sbom = out / f"{config.name}-{version}.spdx.json"
    sbom.write_bytes(
        json.dumps(
            spdx_document(
                config,
                version,
                revision,
                epoch,
                manifest_desc["digest"],
                debs,
                installed_python_packages(config, root),
                wheels_dir,
            ),
            indent=2,
            sort_keys=True,
        ).encode()
        + b"\n"
    )
    return Built(
        ref=ref,
        manifest_digest=manifest_desc["digest"],
        config_digest=config_desc["digest"],
        archive=archive,
        oci_dir=oci,
        sbom=sbom,
        compressed_size=sum(layer["size"] for layer in layers),
        uncompressed_size=sum(layer["uncompressed"] for layer in layers),
    )


def write_archive(oci: Path, archive: Path, mtime: int) -> None:
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in walk(oci):
            info, source = tar_entry(oci, name, mtime)
            info.mode = 0o755 if source is None else 0o644
            if source is None:
                tar.addfile(info)
            else:
                with source.open("rb") as handle:
                    tar.addfile(info, handle)


def _spdx_id(kind: str, name: str) -> str:
    return f"SPDXRef-{kind}-" + re.sub(r"[^A-Za-z0-9.-]", "-", name)


def spdx_document(
    config: Config,
    version: str,
    revision: str,
    epoch: int,
    manifest_digest: str,
    debs: list[Deb],
    python: list[tuple[str, str]],
    wheels_dir: Path,
) -> dict[str, Any]:
    """An SPDX 2.3 document: the image, and every Debian and Python package in it."""
    image_id = "SPDXRef-Image"
    hex_digest = manifest_digest.split(":", 1)[1]
    packages: list[dict[str, Any]] = [
        {
            "SPDXID": image_id,
            "name": config.name,
            "versionInfo": version,
            "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False,
            "primaryPackagePurpose": "CONTAINER",
            "checksums": [{"algorithm": "SHA256", "checksumValue": hex_digest}],
            "sourceInfo": f"built from gpuop revision {revision}",
            "externalRefs": [
                {
                    "referenceCategory": "PACKAGE-MANAGER",
                    "referenceType": "purl",
                    "referenceLocator": f"pkg:oci/{config.name}@sha256%3A{hex_digest}"
                    f"?tag={version}",
                }
            ],
        }
    ]
    relationships = [
        {
            "spdxElementId": "SPDXRef-DOCUMENT",
            "relationshipType": "DESCRIBES",
            "relatedSpdxElement": image_id,
        }
    ]
    distro = f"debian-{config.suite}"
    for deb in debs:
        packages.append(
            {
                "SPDXID": _spdx_id("deb", deb.name),
                "name": deb.name,
                "versionInfo": deb.version,
                "supplier": "Organization: Debian",
                "downloadLocation": "NOASSERTION",
                "filesAnalyzed": False,
                "checksums": [{"algorithm": "SHA256", "checksumValue": deb.sha256}],
                "externalRefs": [
                    {
                        "referenceCategory": "PACKAGE-MANAGER",
                        "referenceType": "purl",
                        "referenceLocator": f"pkg:deb/debian/{deb.name}@{deb.version}"
                        f"?arch={deb.arch}&distro={distro}",
                    }
                ],
            }
        )
    wheel_hashes = {entry.name.lower().replace("_", "-"): entry.sha256 for entry in read_lock()}
    for name, pkg_version in python:
        key = name.lower().replace("_", "-")
        entry: dict[str, Any] = {
            "SPDXID": _spdx_id("pypi", name),
            "name": name,
            "versionInfo": pkg_version,
            "downloadLocation": "NOASSERTION",
            "filesAnalyzed": False,
            "externalRefs": [
                {
                    "referenceCategory": "PACKAGE-MANAGER",
                    "referenceType": "purl",
                    "referenceLocator": f"pkg:pypi/{key}@{pkg_version}",
                }
            ],
        }
        if key in wheel_hashes:
            entry["checksums"] = [{"algorithm": "SHA256", "checksumValue": wheel_hashes[key]}]
        packages.append(entry)
    for package in packages[1:]:
        relationships.append(
            {
                "spdxElementId": image_id,
                "relationshipType": "CONTAINS",
                "relatedSpdxElement": package["SPDXID"],
            }
        )
    return {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{config.name}-{version}",
        "documentNamespace": f"https://gpuop.invalid/spdx/{config.name}-{version}-{hex_digest}",
        "creationInfo": {"created": iso8601(epoch), "creators": ["Tool: gpuop-image-build"]},
        "packages": packages,
        "relationships": relationships,
    }


# -- the command line ---------------------------------------------------------------------------


def build(out: Path, wheel: Path | None = None) -> Built:
    config = Config.load()
    cache = cache_root()
    version, revision, epoch = project_version(), source_revision(), source_date_epoch()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpuop-image-", dir=out) as tmp:
        work = Path(tmp)
        say(f"Debian packages ({config.suite}): resolving with mmdebstrap")
        debs = download_debs(config, cache, work)
        say(f"  {len(debs)} packages: {' '.join(d.name for d in debs)}")
        root = work / "rootfs"
        root.mkdir()
        unpack_debs(debs, root, config.drop_prefixes)
        add_system_files(config, root, debs)
        wheel = wheel or build_wheel(work)
        say(f"Python: {wheel.name} and {len(read_lock())} locked wheels")
        wheels_dir = fetch_wheels(config, cache)
        install_python(config, root, wheel, wheels_dir, work)
        say("byte-compiling with the image's Python")
        byte_compile(config, root)
        say(f"  {smoke_test(root)} runs in the root filesystem")
        say(f"writing the OCI image (SOURCE_DATE_EPOCH={epoch}, revision {revision})")
        built = write_image(config, root, out, version, revision, epoch, debs, wheels_dir)
    summary = {
        "image": built.ref,
        "digest": built.manifest_digest,
        "config": built.config_digest,
        "archive": str(built.archive),
        "oci_layout": str(built.oci_dir),
        "sbom": str(built.sbom),
        "compressed_bytes": built.compressed_size,
        "uncompressed_bytes": built.uncompressed_size,
        "revision": revision,
        "source_date_epoch": epoch,
    }
    (out / "image.json").write_text(json.dumps(summary, indent=2) + "\n")
    return built


def say(message: str) -> None:
    print(message, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_cmd = commands.add_parser("build", help="build the image (make image)")
    build_cmd.add_argument("--out", type=Path, default=REPO / "dist" / "image")
    build_cmd.add_argument("--wheel", type=Path, help="a built gpuop wheel (default: build one)")
    commands.add_parser("lock", help="re-pin image/requirements.lock from the wheel")
    args = parser.parse_args(argv)
    try:
        if args.command == "lock":
            with tempfile.TemporaryDirectory(prefix="gpuop-lock-") as tmp:
                write_lock(Config.load(), build_wheel(Path(tmp)), Path(tmp))
            say(f"wrote {LOCK}")
            return 0
        built = build(args.out.resolve(), args.wheel)
    except ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    mib = 1024 * 1024
    say(f"image {built.ref}  {built.manifest_digest}")
    say(
        f"  size: {built.compressed_size / mib:.1f} MiB compressed, "
        f"{built.uncompressed_size / mib:.1f} MiB unpacked"
    )
    say(f"  archive: {built.archive}  (docker load / ctr images import / skopeo oci-archive:)")
    say(f"  OCI layout: {built.oci_dir}\n  SBOM: {built.sbom}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
