#!/usr/bin/env bash
# pack-train.sh prepares the GPU training check (issue 32) for a machine that has a GPU but no Go and
# no network: docs/gpu.md, "Checking training on a lent GPU". Run it here, from the repository root:
#
#   bash scripts/gpu/pack-train.sh
#
# It builds cmd/bicyc-gpucheck without cgo (a binary that needs only the C library, loads CUDA at run
# time and runs on any glibc) into .gpu-carry-train/ (ignored by git) with its sha256. One call on the
# GPU machine carries that folder and runs scripts/gpu/check-train.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH=/usr/local/go/bin:$PATH
carry=$root/.gpu-carry-train
rm -rf "$carry"
mkdir -p "$carry"
echo "pack-train: building bicyc-gpucheck (CGO_ENABLED=0)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$carry/bicyc-gpucheck" ./cmd/bicyc-gpucheck
(cd "$carry" && sha256sum bicyc-gpucheck >SHA256SUMS)
git rev-parse HEAD >"$carry/commit" 2>/dev/null || echo unknown >"$carry/commit"
du -sh "$carry"/* >&2
