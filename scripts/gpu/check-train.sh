#!/usr/bin/env bash
# check-train.sh is the GPU training check of issue 32 on a machine with an NVIDIA GPU and CUDA 13
# libraries (a PyTorch installation's nvidia-* wheels, a CUDA toolkit) but no Go and no network
# (docs/gpu.md, "Checking training on a lent GPU"; scripts/gpu/pack-train.sh builds what it carries):
#
#   bash scripts/gpu/check-train.sh        # with .gpu-carry-train carried
#
# It verifies and unpacks the carried bicyc-gpucheck builds, finds the CUDA libraries and runs the check: the small
# layers first, each in its own process (seconds; the first CUDA calls this code ever made, so a crash
# inside a CUDA library names its case), then the default layers together (a 3x3 convolution at the
# convnet's size, ResNet-18's stem and a last-stage 3x3 convolution at 224x224 and batch 64, a matrix
# product, max pooling, batch norm in both modes, and the NVRTC ops: ReLU, GELU, bias, cross-entropy,
# average pooling, SGD), their CPU side on OpenBLAS if that build starts here, else in pure Go. Under $OUT: check-train.log, gpucheck-small-*.json (one per small case)
# and gpucheck-default.json. Exit status: that of the default run (0: every layer within 1e-4 of the
# CPU).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/bicyc-gpu-train}
mkdir -p "$out"
{
carry=$root/.gpu-carry-train
state=/tmp/bicyc-gpu-train-root
# shellcheck source=carry.sh
source "$root/scripts/gpu/carry.sh"
unpack_carry "$carry" check.tar.gz "$state" scripts/gpu/pack-train.sh || exit 2
purego=$state/purego/bicyc-gpucheck
openblas=$state/openblas/bicyc-gpucheck
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"
nproc
ldd --version 2>&1 | head -1
echo "== CUDA libraries"
# shellcheck source=cuda-libs.sh
source "$root/scripts/gpu/cuda-libs.sh"
dirs=$(cuda_lib_dirs | awk '!seen[$0]++' | paste -sd: -)
export BICYC_CUDA_LIB_PATH=$dirs
# cuDNN 9 opens its sub-libraries by name: put the same folders on the loader's path as well.
export LD_LIBRARY_PATH=$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "BICYC_CUDA_LIB_PATH=$BICYC_CUDA_LIB_PATH"
for lib in libcuda.so.1 libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libcudnn_cnn.so.9 libnvrtc.so.13; do
	d=$(find_lib "$lib" $(cuda_lib_dirs)) && echo "  $lib: $d" || { lib_loadable "$lib" && echo "  $lib: loader path" || echo "  $lib: NOT FOUND"; }
done

echo "== small layers, one process each (a crash inside a CUDA library then names its case)"
for name in $("$purego" --small --list); do
	timeout 120 "$purego" --small --cases "$name" --runs 3 >"$out/gpucheck-$name.json"
	echo "$name: exit $?"
done
echo "== default layers"
bin=$purego
if LD_LIBRARY_PATH=$state/openblas/lib:$LD_LIBRARY_PATH "$openblas" --list >/dev/null; then
	bin=$openblas
	export LD_LIBRARY_PATH=$state/openblas/lib:$LD_LIBRARY_PATH
	echo "CPU side on OpenBLAS"
else
	echo "the OpenBLAS build does not start here (above: why); CPU side in pure Go"
fi
# CASES=name,... (bicyc-gpucheck --list) runs only those default layers.
timeout 300 "$bin" --runs 2 ${CASES:+--cases "$CASES"} >"$out/gpucheck-default.json"
status=$?
echo "exit $status"
python3 - "$out" <<'PY' || true
import json, sys
import glob, os
for path in sorted(glob.glob(sys.argv[1] + "/gpucheck-small-*.json")) + [sys.argv[1] + "/gpucheck-default.json"]:
    name = os.path.basename(path)
    try:
        r = json.load(open(path))
    except Exception as e:
        print(name, "unreadable:", e); continue
    d = r.get("device") or {}
    print(name, "ok" if r.get("ok") else "NOT OK", d.get("name", ""), d.get("compute_capability", ""), "| cpu:", r.get("cpu_blas", ""), "| cuda_error:", r.get("cuda_error", "")[:400])
    for c in r.get("cases", []):
        print("  %-26s max_rel %-9.3g cpu %8.1f ms  gpu %8.1f ms  loss cpu %.6g gpu %.6g  %s" % (
            c["name"], c.get("max_rel_diff", float("nan")), c.get("cpu_ms_per_step", 0), c.get("gpu_ms_per_step", 0),
            c.get("loss_cpu", 0), c.get("loss_gpu", 0), c.get("error", "")))
        for k, v in sorted((c.get("diffs") or {}).items()):
            print("      %-3s abs %.3g rel %.3g" % (k, v["max_abs_diff"], v["max_rel_diff"]))
PY
exit $status
} 2>&1 | tee -a "$out/check-train.log"
exit "${PIPESTATUS[0]}"
