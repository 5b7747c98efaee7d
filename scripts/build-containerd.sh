#!/usr/bin/env bash
# Build containerd 2.x (config `version = 4`) once, into the binary cache: `containerd` for the
# toolkit tests (`containerd config dump`), and `ctr` with `containerd-shim-runc-v2` for the
# image tests, which import and run the operator image (runc from Debian).
set -euo pipefail
version=v2.4.2
cache="${GPUOP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuop}/bin"
target="$cache/containerd-$version"
binaries=(containerd ctr containerd-shim-runc-v2)
missing=()
for binary in "${binaries[@]}"; do
    [ -x "$target/$binary" ] || missing+=("$binary")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "containerd $version: cached at $target"
    exit 0
fi
echo "containerd $version: building ${missing[*]} from the Go module proxy (about 15 minutes on 2 cores)"
cd "$(dirname "$0")/../src/gpuop/controlplane/modules/containerd"
rm -rf "$target.tmp"
mkdir -p "$target.tmp"
[ -d "$target" ] && cp -a "$target/." "$target.tmp/"
for binary in "${missing[@]}"; do
    GOWORK=off GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0 go build -trimpath \
        -tags no_btrfs,no_devmapper,no_zfs \
        -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$version" \
        -o "$target.tmp/$binary" "github.com/containerd/containerd/v2/cmd/$binary"
done
rm -rf "$target"
mv "$target.tmp" "$target"
echo "containerd $version: built into $target"
