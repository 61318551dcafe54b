#!/usr/bin/env bash
# setup-gpu.sh installs ONNX Runtime's GPU execution providers for bicyc-infer
# (`--provider cuda|tensorrt|auto`), idempotently. Never part of `make test`.
#
#   - the CUDA and TensorRT providers of ONNX Runtime 1.29.0 (libonnxruntime_providers_cuda.so,
#     _tensorrt.so, _shared.so; CUDA 13) from the npm package
#     com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9, fetched with `npm pack` (no install
#     scripts run), its sha512 integrity checked against the pin below and every library
#     against scripts/onnxruntime/SHA256SUMS;
#   - beside them a copy of the ONNX Runtime core that scripts/setup.sh installed (same release:
#     the core loads the providers from its own directory);
#   - into $BICYC_ORT_GPU_DIR (default $BICYC_ORT_DIR/gpu, i.e. /usr/local/lib/bicyc/gpu).
#
# It then looks for the CUDA 13 libraries the providers need (cuBLAS, cuBLASLt, cudart, cuRAND,
# cuDNN 9, the driver's libcuda; TensorRT 10 for the tensorrt provider), says which the dynamic
# loader would not find and where they are if a CUDA toolkit or a PyTorch installation's nvidia-*
# wheels hold them. Missing CUDA libraries are reported, not an error: the providers are
# installed either way.
#
#   scripts/setup-gpu.sh              install and report
#   scripts/setup-gpu.sh --print-env  print the export lines for BICYC_ORT_LIB and
#                                     LD_LIBRARY_PATH (eval "$(scripts/setup-gpu.sh --print-env)")
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=gpu/cuda-libs.sh
source "$root/scripts/gpu/cuda-libs.sh"
ort_dir=${BICYC_ORT_DIR:-/usr/local/lib/bicyc}
gpu_dir=${BICYC_ORT_GPU_DIR:-$ort_dir/gpu}
sums=$root/scripts/onnxruntime/SHA256SUMS

# The npm package of the providers and the ONNX Runtime release they are
# built from. The package is no longer published upstream: its integrity is
# pinned here, as npm's lock file would.
gpu_package=com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9
gpu_integrity=sha512-FopIhNE/Ng+v2X65wVc9clPCBCvhvA53Hxo2U0Kf5fGdVsC7iCA+mZ0KLWggcQAj7TIZ6pNidR4AC10g74Xo6w==
providers_version=1.29.0
provider_libs=(libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so libonnxruntime_providers_tensorrt.so)
core=libonnxruntime.so.$providers_version

log() { printf 'setup-gpu: %s\n' "$*" >&2; }

print_env=false
case "${1:-}" in
--print-env) print_env=true ;;
"") ;;
*) log "unknown argument $1 (want none or --print-env)"; exit 2 ;;
esac

sudo_cmd=()
if [ "$(id -u)" != 0 ] && [ ! -w "$(dirname "$gpu_dir")" ]; then
	command -v sudo >/dev/null || { log "cannot write $gpu_dir: run as root or set BICYC_ORT_GPU_DIR"; exit 1; }
	sudo_cmd=(sudo)
fi

# verified DIR: whether the core and every provider library in DIR match SHA256SUMS.
verified() {
	(cd "$1" 2>/dev/null && grep -E " ($core|$(IFS='|'; echo "${provider_libs[*]}"))\$" "$sums" | sha256sum --check --quiet --status)
}

if $print_env; then
	verified "$gpu_dir" || { log "no verified GPU install in $gpu_dir: run make setup-gpu"; exit 1; }
	cuda_report >/dev/null
	echo "export BICYC_ORT_LIB=$gpu_dir/libonnxruntime.so"
	[ -n "$cuda_extra_path" ] && echo "export LD_LIBRARY_PATH=$cuda_extra_path\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
	exit 0
fi

if [ ! -f "$ort_dir/$core" ]; then
	log "the ONNX Runtime core $ort_dir/$core is not installed: run scripts/setup.sh first (make setup-gpu does)"
	exit 1
fi

if verified "$gpu_dir"; then
	log "GPU providers of ONNX Runtime $providers_version already installed in $gpu_dir"
else
	log "installing the GPU providers of ONNX Runtime $providers_version into $gpu_dir (npm package $gpu_package, 179 MB)"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	(cd "$work" && npm pack --ignore-scripts --silent --pack-destination "$work" "$gpu_package" >/dev/null)
	tarball=$(ls "$work"/*.tgz)
	got=$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tarball")
	if [ "$got" != "$gpu_integrity" ]; then
		log "$gpu_package has integrity $got, pinned $gpu_integrity: refusing it"
		exit 1
	fi
	tar -xzf "$tarball" -C "$work" package/Plugins/Linux/x64
	for lib in "${provider_libs[@]}"; do
		mv "$work/package/Plugins/Linux/x64/$lib" "$work/$lib"
	done
	cp "$ort_dir/$core" "$work/$core"
	verified "$work" || { log "the libraries do not match $sums"; exit 1; }
	"${sudo_cmd[@]}" mkdir -p "$gpu_dir"
	for lib in "${provider_libs[@]}" "$core"; do
		"${sudo_cmd[@]}" install -m 0644 "$work/$lib" "$gpu_dir/$lib"
	done
	"${sudo_cmd[@]}" ln -sfn "$core" "$gpu_dir/libonnxruntime.so"
	log "installed $gpu_dir/libonnxruntime.so with the cuda and tensorrt providers beside it"
fi

echo "CUDA libraries for the GPU providers:"
cuda_report
if [ ${#cuda_missing[@]} -gt 0 ]; then
	echo "  not found anywhere: ${cuda_missing[*]}"
	echo "  The cuda provider needs CUDA 13 (cuBLAS, cuBLASLt, cudart, cuRAND), cuDNN 9 and an NVIDIA driver (libcuda.so.1)."
	echo "  Install the CUDA 13 toolkit and cuDNN 9, or: pip install nvidia-cublas nvidia-cuda-runtime nvidia-curand nvidia-cudnn-cu13"
	echo "  (PyTorch built for CUDA 13 brings them), then run this again: it finds their site-packages/nvidia/*/lib folders."
fi
if [ ${#tensorrt_missing[@]} -gt 0 ]; then
	echo "  for the tensorrt provider, not found: ${tensorrt_missing[*]} (TensorRT 10; without it, auto uses cuda)"
fi
if [ -n "$cuda_extra_path" ]; then
	echo "  add to LD_LIBRARY_PATH: $cuda_extra_path"
fi
echo "Use it:"
echo "  eval \"\$(scripts/setup-gpu.sh --print-env)\"   # sets BICYC_ORT_LIB=$gpu_dir/libonnxruntime.so${cuda_extra_path:+ and LD_LIBRARY_PATH}"
echo "  bicyc-infer doctor --model DIR                # CUDA/TensorRT against the CPU, as JSON"
