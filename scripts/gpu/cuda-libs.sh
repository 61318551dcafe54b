# cuda-libs.sh: shell functions, sourced by scripts/setup-gpu.sh and
# scripts/gpu/check-infer.sh, that find the CUDA libraries ONNX Runtime's GPU
# providers need. They come from a CUDA toolkit, the NVIDIA driver, or the
# nvidia-* Python wheels a PyTorch installation carries (site-packages/nvidia/*/lib).

# The libraries libonnxruntime_providers_cuda.so needs (readelf -d: NEEDED), and
# cuDNN 9, which it loads at run time for convolutions.
cuda_needed=(libcublasLt.so.13 libcublas.so.13 libcurand.so.10 libcudart.so.13 libcuda.so.1 libcudnn.so.9)
# What libonnxruntime_providers_tensorrt.so needs beyond those.
tensorrt_needed=(libnvinfer.so.10 libnvonnxparser.so.10)

# cuda_lib_dirs prints, one a line, the directories that may hold CUDA
# libraries: the lib folders of the nvidia-* wheels of every python3 found,
# those of common virtual environments, a CUDA toolkit, and the driver's.
cuda_lib_dirs() {
	local py
	for py in python3 /usr/bin/python3 /opt/*/.venv/bin/python3 /opt/conda/bin/python3; do
		command -v "$py" >/dev/null 2>&1 || continue
		"$py" -c '
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    roots = []
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "*", "lib")) + glob.glob(os.path.join(r, "*", "lib64"))):
        print(d)
' 2>/dev/null || true
	done
	local d
	for d in /usr/local/lib/python3*/dist-packages/nvidia/*/lib /usr/lib/python3/dist-packages/nvidia/*/lib \
		"$HOME"/.local/lib/python3*/site-packages/nvidia/*/lib /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib \
		/opt/conda/lib/python3*/site-packages/nvidia/*/lib /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
		/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib/wsl/lib /usr/local/tensorrt/lib; do
		[ -d "$d" ] && echo "$d"
	done
	return 0
}

# lib_loadable NAME: whether the dynamic loader finds NAME now (LD_LIBRARY_PATH
# or its cache).
lib_loadable() {
	local d
	local IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		[ -n "$d" ] && [ -e "$d/$1" ] && return 0
	done
	/sbin/ldconfig -p 2>/dev/null | grep -q " $1 " && return 0
	return 1
}

# find_lib NAME DIR...: prints the first DIR holding NAME.
find_lib() {
	local name=$1 d
	shift
	for d in "$@"; do
		if [ -e "$d/$name" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

# cuda_report: for each library of cuda_needed and tensorrt_needed, says
# whether the loader finds it, where it is if not, and sets
# cuda_extra_path to the directories to add to LD_LIBRARY_PATH (":"-joined)
# and cuda_missing / tensorrt_missing to what is found nowhere.
cuda_report() {
	local dirs=() lib d
	mapfile -t dirs < <(cuda_lib_dirs | awk '!seen[$0]++')
	cuda_extra_path=""
	cuda_missing=()
	tensorrt_missing=()
	for lib in "${cuda_needed[@]}" "${tensorrt_needed[@]}"; do
		if lib_loadable "$lib"; then
			continue
		fi
		if d=$(find_lib "$lib" "${dirs[@]}"); then
			echo "  $lib: not on the loader's path; found in $d"
			case ":$cuda_extra_path:" in *":$d:"*) ;; *) cuda_extra_path=${cuda_extra_path:+$cuda_extra_path:}$d ;; esac
		elif [[ " ${tensorrt_needed[*]} " == *" $lib "* ]]; then
			tensorrt_missing+=("$lib")
		else
			cuda_missing+=("$lib")
		fi
	done
}
