#!/usr/bin/env bash
# setup.sh installs everything bicyc needs on Debian 12, idempotently:
#   - Debian packages: dataset-fashion-mnist (the default data), libopenblas-dev
#     (BLAS for gorgonia, linked by cgo), gcc (cgo), nodejs + npm (only to fetch the
#     pinned ONNX Runtime library), python3-onnx (tests validate exported ONNX with it);
#   - the ONNX Runtime shared library 1.29.0 (the core: CPU provider, and the hooks that load
#     the GPU providers of `make setup-gpu`), from the npm package onnxruntime-node pinned by
#     scripts/onnxruntime/package-lock.json (install scripts ignored: they would download
#     CUDA parts), checked against scripts/onnxruntime/SHA256SUMS, installed as
#     $BICYC_ORT_DIR/libonnxruntime.so (default /usr/local/lib/bicyc); an older version
#     installed there is removed;
#   - the Go modules in go.sum;
#   - stock tools the tests drive, from the Go module proxy, pinned, into .tools/bin
#     (BICYC_TOOLS overrides .tools): grpcurl, the gRPC client, and grpc-health-probe, the
#     health checker Kubernetes setups use (serve's gRPC API).
# Go itself (>= 1.26, from go.mod) must already be on PATH or in /usr/local/go.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
ort_dir=${BICYC_ORT_DIR:-/usr/local/lib/bicyc}
ort_version=1.29.0

log() { printf 'setup: %s\n' "$*" >&2; }

sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { log "not root and no sudo: run as root"; exit 1; }
	sudo_cmd=(sudo)
fi

# Debian packages, installed only when one is missing so repeated runs are fast.
# libjpeg62-turbo-dev: libjpeg-turbo, linked by cgo, decodes the JPEGs Go's
# image/jpeg refuses (imaging/jpegturbo.go); python3-pil and libjxl-testdata: the
# decoder tests compare every JPEG and PNG of libjxl's test data with Pillow. g++: the tests compile the
# NVRTC kernels' CUDA C sources on the host (gpu/internal/cudakernels).
packages=(dataset-fashion-mnist libopenblas-dev gcc g++ python3-onnx ca-certificates
	libjpeg62-turbo-dev python3-pil libjxl-testdata)
command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	"${sudo_cmd[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ONNX Runtime shared library: installed unless this version is there, then
# every other version beside it removed, so the symlink and the files agree.
if [ ! -f "$ort_dir/libonnxruntime.so.$ort_version" ]; then
	log "installing ONNX Runtime $ort_version into $ort_dir"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	cp "$root/scripts/onnxruntime/package.json" "$root/scripts/onnxruntime/package-lock.json" "$work/"
	(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
	lib="$work/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
	[ -f "$lib" ] || { log "ONNX Runtime library not found in the npm package at $lib"; exit 1; }
	cp "$lib" "$work/libonnxruntime.so.$ort_version"
	(cd "$work" && grep " libonnxruntime.so.$ort_version\$" "$root/scripts/onnxruntime/SHA256SUMS" | sha256sum --check --quiet) ||
		{ log "libonnxruntime.so.$ort_version does not match scripts/onnxruntime/SHA256SUMS"; exit 1; }
	"${sudo_cmd[@]}" mkdir -p "$ort_dir"
	"${sudo_cmd[@]}" install -m 0644 "$work/libonnxruntime.so.$ort_version" "$ort_dir/libonnxruntime.so.$ort_version"
fi
if [ "$(readlink "$ort_dir/libonnxruntime.so" || true)" != "libonnxruntime.so.$ort_version" ]; then
	"${sudo_cmd[@]}" ln -sfn "libonnxruntime.so.$ort_version" "$ort_dir/libonnxruntime.so"
fi
for old in "$ort_dir"/libonnxruntime.so.*; do
	[ -e "$old" ] && [ "$old" != "$ort_dir/libonnxruntime.so.$ort_version" ] || continue
	log "removing $old (bicyc now uses ONNX Runtime $ort_version)"
	"${sudo_cmd[@]}" rm -f "$old"
done

# Go toolchain and modules.
if ! command -v go >/dev/null; then
	if [ -x /usr/local/go/bin/go ]; then
		export PATH=/usr/local/go/bin:$PATH
	else
		log "Go >= 1.26 is required (see go.mod): install it into /usr/local/go"; exit 1
	fi
fi
(cd "$root" && go mod download)

# Stock tools, each reinstalled only when the binary there is not the pinned
# version (go version -m reads the module version it was built from).
tools_bin=${BICYC_TOOLS:-$root/.tools}/bin
install_tool() { # module/cmd/path version
	local bin="$tools_bin/$(basename "$1")"
	if ! go version -m "$bin" 2>/dev/null | grep -q "^[[:space:]]*mod[[:space:]].*[[:space:]]$2\b"; then
		log "installing $(basename "$1") $2 into $tools_bin"
		mkdir -p "$tools_bin"
		local out
		if ! out=$(GOBIN="$tools_bin" GOFLAGS= go install "$1@$2" 2>&1); then
			printf '%s\n' "$out" >&2
			log "could not install $1@$2"; exit 1
		fi
	fi
}
install_tool github.com/fullstorydev/grpcurl/cmd/grpcurl v1.9.3
install_tool github.com/grpc-ecosystem/grpc-health-probe v0.4.62
log "ok (ONNX Runtime: $ort_dir/libonnxruntime.so)"
