#!/usr/bin/env bash
# pack.sh prepares the GPU self-check of bicyc-infer for a machine that has a GPU but no Go, no
# network, and receives at most 64 MiB (repository included) per call: docs/gpu.md, "Checking
# on a lent GPU". Run it here, after `make setup-gpu`, from the repository root:
#
#   bash scripts/gpu/pack.sh [MODEL_DIR]
#
# It stages bicyc-infer (built here), the GPU install of ONNX Runtime ($BICYC_ORT_GPU_DIR,
# default /usr/local/lib/bicyc/gpu), a model directory (MODEL_DIR, or one trained with
# `bicyc train --quick`) and 256 Fashion-MNIST test images as PNG; packs them into one
# gzip-compressed tar, split into parts of $PART_MIB MiB (default 42) under .gpu-carry/
# (ignored by git), with .gpu-carry/manifest (the sha256 of every part and of the whole).
# scripts/gpu/check-infer.sh, on the GPU machine, takes the parts one call at a time and runs the
# check once it holds them all.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH=/usr/local/go/bin:$PATH CGO_LDFLAGS=${CGO_LDFLAGS:--lopenblas}
gpu_dir=${BICYC_ORT_GPU_DIR:-${BICYC_ORT_DIR:-/usr/local/lib/bicyc}/gpu}
part_mib=${PART_MIB:-42}
carry=$root/.gpu-carry
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

log() { printf 'pack: %s\n' "$*" >&2; }

[ -f "$gpu_dir/libonnxruntime_providers_cuda.so" ] || { log "no GPU install in $gpu_dir: run make setup-gpu"; exit 1; }

log "building bicyc-infer"
go build -trimpath -o "$stage/bin/bicyc-infer" ./cmd/bicyc-infer

model=${1:-}
if [ -z "$model" ]; then
	model=$root/runs/gpu-check/model
	if [ ! -f "$model/manifest.json" ]; then
		log "training a quick model for the check (a few minutes)"
		go build -o "$stage/bicyc" ./cmd/bicyc
		"$stage/bicyc" train --quick --run-dir "$root/runs" --name gpu-check >&2
		rm "$stage/bicyc"
	fi
fi
[ -f "$model/manifest.json" ] || { log "$model is not a model directory (no manifest.json)"; exit 1; }
cp -r "$model" "$stage/model"

log "copying ONNX Runtime and its GPU providers from $gpu_dir"
mkdir -p "$stage/ort"
cp -L "$gpu_dir"/libonnxruntime.so "$stage/ort/libonnxruntime.so"
cp "$gpu_dir"/libonnxruntime_providers_*.so "$stage/ort/"

log "writing 256 Fashion-MNIST test images"
mkdir -p "$stage/images"
/usr/bin/python3 - "$stage/images" <<'PY'
import gzip, sys
from PIL import Image
out = sys.argv[1]
d = "/usr/share/datasets/fashion-mnist/"
px = gzip.open(d + "t10k-images-idx3-ubyte.gz").read()[16:]
labels = gzip.open(d + "t10k-labels-idx1-ubyte.gz").read()[8:]
for k in range(256):
    i = 39 * k
    Image.frombytes("L", (28, 28), px[784 * i:784 * (i + 1)]).save(f"{out}/{i:05d}-class{labels[i]}.png")
PY

(cd "$stage" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum >SHA256SUMS)
# gzip: the CUDA provider's kernels are compressed already (xz -6 and zstd -6 left
# 72% of it, 165 and 167 MB; gzip about 75%), and every machine can unpack it.
log "compressing"
rm -rf "$carry"
mkdir -p "$carry"
tar -C "$stage" -cf - . | gzip -6 >"$carry/check.tar.gz"
split -b "${part_mib}M" -d -a 2 "$carry/check.tar.gz" "$carry/part"
{
	echo "whole $(sha256sum <"$carry/check.tar.gz" | cut -d' ' -f1) $(stat -c %s "$carry/check.tar.gz")"
	for p in "$carry"/part*; do
		echo "part $(basename "$p") $(sha256sum <"$p" | cut -d' ' -f1)"
	done
} >"$carry/manifest"
rm "$carry/check.tar.gz"
# One folder per call: each carries the manifest and one part.
n=0
for p in "$carry"/part*; do
	mkdir -p "$carry/$n"
	mv "$p" "$carry/$n/"
	cp "$carry/manifest" "$carry/$n/manifest"
	n=$((n + 1))
done
rm "$carry/manifest"
log "$n parts in $carry/0 .. $carry/$((n - 1)):"
du -sh "$carry"/* >&2
