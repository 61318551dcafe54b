#!/usr/bin/env bash
# pack-train.sh prepares the GPU training check (issue 32) for a machine that has a GPU but no Go and
# no network: docs/gpu.md, "Checking training on a lent GPU". Run it here, from the repository root:
#
#   bash scripts/gpu/pack-train.sh
#
# It builds cmd/bicyc-gpucheck twice: without cgo (needs only the C library, any glibc; its CPU side
# multiplies in pure Go) and with cgo (its CPU side on OpenBLAS, as bicyc trains; needs glibc 2.34+),
# the latter with Debian's libopenblas.so.0, libgfortran.so.5 and libquadmath.so.0 beside it, and packs
# them into .gpu-carry-train/check.tar.gz (ignored by git) with its sha256. One call on the GPU machine
# carries that folder and runs scripts/gpu/check-train.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH=/usr/local/go/bin:$PATH
carry=$root/.gpu-carry-train
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
log() { printf 'pack-train: %s\n' "$*" >&2; }
# shellcheck source=carry.sh
source "$root/scripts/gpu/carry.sh"

log "building bicyc-gpucheck without cgo"
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$stage/purego/bicyc-gpucheck" ./cmd/bicyc-gpucheck
log "building bicyc-gpucheck with cgo (OpenBLAS)"
CGO_ENABLED=1 CGO_LDFLAGS=-lopenblas go build -trimpath -ldflags="-s -w" -o "$stage/openblas/bicyc-gpucheck" ./cmd/bicyc-gpucheck
copy_openblas "$stage/openblas/bicyc-gpucheck" "$stage/openblas/lib"
pack_stage "$stage" "$carry" check.tar.gz
du -sh "$stage"/purego "$stage"/openblas "$carry"/check.tar.gz >&2
