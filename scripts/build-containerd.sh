#!/usr/bin/env bash
# Build containerd 2.x (config `version = 4`) for the toolkit tests, once, into the binary cache.
# Only `containerd config dump` is used by the tests; nothing is started.
set -euo pipefail
version=v2.4.2
cache="${GPUOP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuop}/bin"
target="$cache/containerd-$version"
if [ -x "$target/containerd" ]; then
    echo "containerd $version: cached at $target"
    exit 0
fi
echo "containerd $version: building from the Go module proxy (about 15 minutes on 2 cores)"
cd "$(dirname "$0")/../src/gpuop/controlplane/modules/containerd"
rm -rf "$target.tmp"
mkdir -p "$target.tmp"
GOWORK=off GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=0 go build -trimpath \
    -tags no_btrfs,no_devmapper,no_zfs \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$version" \
    -o "$target.tmp/containerd" github.com/containerd/containerd/v2/cmd/containerd
mv "$target.tmp" "$target"
echo "containerd $version: built into $target"
