#!/usr/bin/env bash
# check-infer.sh is the GPU self-check of bicyc-infer on a machine with an NVIDIA GPU and CUDA 13
# libraries but no Go and no network, fed one carried part at a time (docs/gpu.md, "Checking on
# a lent GPU"; scripts/gpu/pack.sh makes the parts). Every call runs the same command:
#
#   bash scripts/gpu/check-infer.sh
#
# with one folder .gpu-carry/N carried. It moves the part it finds there into /tmp/bicyc-gpu
# (which lasts as long as the machine), checks it against the manifest, and says which parts it
# still lacks. Once it holds them all it reassembles and verifies the archive, finds the CUDA
# libraries (a PyTorch installation's nvidia-* wheels, a CUDA toolkit, the driver), and runs:
#   - bicyc-infer with --provider auto and --provider cuda on a few images (the start-up lines);
#   - bicyc-infer doctor --require cuda over 256 Fashion-MNIST test images, with one intra-op
#     thread per call (the default) and with one per core;
# writing under $OUT (what comes back) check.log and one doctor-*.json per run. Exit status: that
# of the doctor run with one thread, or 3 while parts are missing.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
state=/tmp/bicyc-gpu
out=${OUT:-$state/out}
mkdir -p "$state/parts" "$out"
# Everything below also goes to $OUT/check.log; the group runs in a subshell, so its exits
# end it and the script exits with its status.
{

# Receive: a manifest that differs from the one held means a new pack; drop the old parts.
for dir in "$root"/.gpu-carry/*/; do
	[ -f "$dir/manifest" ] || continue
	if ! cmp -s "$dir/manifest" "$state/manifest"; then
		rm -rf "$state/parts" "$state/root"
		mkdir -p "$state/parts"
		cp "$dir/manifest" "$state/manifest"
	fi
	for part in "$dir"/part*; do
		[ -f "$part" ] || continue
		name=$(basename "$part")
		want=$(awk -v n="$name" '$1 == "part" && $2 == n { print $3 }' "$state/manifest")
		got=$(sha256sum <"$part" | cut -d' ' -f1)
		if [ "$got" = "$want" ]; then
			mv "$part" "$state/parts/$name"
			echo "received $name"
		else
			echo "$name arrived damaged (sha256 $got, manifest $want): carry it again"
		fi
	done
done
if [ ! -f "$state/manifest" ]; then
	echo "nothing received yet on this machine: carry .gpu-carry/0 first"
	exit 3
fi
missing=()
for name in $(awk '$1 == "part" { print $2 }' "$state/manifest"); do
	[ -f "$state/parts/$name" ] || missing+=(".gpu-carry/$((10#${name#part}))")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "holding $(ls "$state/parts" | wc -l) parts; still to carry, one per call: ${missing[*]}"
	echo "(a machine that went cold starts empty: then carry every part again, from .gpu-carry/0)"
	exit 3
fi

# Reassemble once.
if [ ! -f "$state/root/SHA256SUMS" ]; then
	read -r _ whole size < <(grep '^whole ' "$state/manifest")
	cat "$state/parts"/part* >"$state/check.tar.gz"
	got=$(sha256sum <"$state/check.tar.gz" | cut -d' ' -f1)
	[ "$got" = "$whole" ] || { echo "reassembled archive has sha256 $got, manifest $whole ($size bytes)"; exit 1; }
	mkdir -p "$state/root"
	tar -xzf "$state/check.tar.gz" -C "$state/root"
	(cd "$state/root" && sha256sum --check --quiet SHA256SUMS) || { echo "unpacked files do not match their SHA256SUMS"; exit 1; }
	rm "$state/check.tar.gz"
	echo "archive verified and unpacked in $state/root"
fi

bin=$state/root/bin/bicyc-infer
lib=$state/root/ort/libonnxruntime.so
model=$state/root/model
images=$state/root/images
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"
nproc
echo "== CUDA libraries"
# shellcheck source=cuda-libs.sh
source "$root/scripts/gpu/cuda-libs.sh"
cuda_report
echo "  not found: ${cuda_missing[*]:-none}; for tensorrt: ${tensorrt_missing[*]:-none}"
export LD_LIBRARY_PATH=$cuda_extra_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

echo "== start-up lines"
few=$(ls "$images"/*.png | head -4)
for provider in auto cuda; do
	echo "--provider $provider:"
	# shellcheck disable=SC2086
	timeout 120 "$bin" --model "$model" --ort-lib "$lib" --provider "$provider" $few
	echo "exit $?"
done

doctor() { # doctor NAME ARGS...: one doctor run into $OUT/doctor-NAME.json
	local name=$1
	shift
	echo "doctor $name:"
	timeout 240 "$bin" doctor --model "$model" --ort-lib "$lib" --require cuda --images 256 "$@" "$images" >"$out/doctor-$name.json"
	local rc=$?
	echo "exit $rc"
	return $rc
}
echo "== doctor"
doctor threads1
status=$?
if [ $status -ne 0 ] && grep -qi cudnn "$out/check.log" "$out/doctor-threads1.json" 2>/dev/null; then
	# cuDNN is opened at run time by name; a wheel ships only libcudnn.so.9.
	d=$(find_lib libcudnn.so.9 $(cuda_lib_dirs)) && mkdir -p "$state/shim" && ln -sfn "$d/libcudnn.so.9" "$state/shim/libcudnn.so" &&
		export LD_LIBRARY_PATH=$state/shim:$LD_LIBRARY_PATH && echo "retrying with $state/shim/libcudnn.so -> $d/libcudnn.so.9" &&
		doctor threads1-cudnn-shim
	status=$?
fi
doctor threads0 --threads 0
python3 - "$out" <<'PY' || true
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/doctor-*.json")):
    try:
        r = json.load(open(f))
    except Exception as e:
        print(f, "unreadable:", e); continue
    print(f.split("/")[-1], r.get("onnx_runtime"), r.get("images"), "images")
    for p in r["providers"]:
        if p.get("error"):
            print("  %-8s error: %s" % (p["provider"], p["error"][:300])); continue
        print("  %-8s p50 %.3f ms  p99 %.3f ms  %.0f img/s at batch %d  max|diff| %s  rel %s  same top-1 %s  open %.1fs" % (
            p["provider"], p["p50_ms_batch1"], p["p99_ms_batch1"], p["images_per_second"], p["batch"],
            p.get("max_abs_diff"), p.get("max_rel_diff"), p.get("same_top1"), p.get("open_seconds", 0)))
PY
exit $status
} 2>&1 | tee -a "$out/check.log"
exit "${PIPESTATUS[0]}"
