#!/usr/bin/env bash
# check-bench.sh runs issue 47's training benchmark (go run ./bench/train) on a lent machine's CPUs,
# against the PyTorch installed there, with no Go and no network (bench/README.md, "On a lent machine's
# CPUs"; scripts/gpu/pack-bench.sh builds what it carries):
#
#   bash scripts/gpu/check-bench.sh        # with .gpu-carry-bench carried
#
# It verifies and unpacks the carried build, puts the carried Fashion-MNIST subset where bicyc reads it
# if that machine has none, prints the processor, its vector extensions and PyTorch's version, then runs,
# most important first, each within what is left of BUDGET seconds (default 540):
#   1. all four rows, --rounds 5, 2 threads, the widest vector kernels (train-2threads.md);
#   2. the same with BICYC_VECTOR=avx2, on a processor with AVX-512 (train-2threads-avx2.md);
#   3. the convnet and ResNet-18 3x32x32 rows, --rounds 2, at 1, 4, 8 and 16 threads up to the
#      machine's cores (scaling.md).
# Under $OUT: check-bench.log and those tables. Exit status: that of part 1 (0: it ran and step 1's loss
# terms agreed with PyTorch's). SMOKE=1 runs each part at its smallest (one convnet step, one round): what
# `make bench-smoke` runs here, so that the script cannot rot between lent machines.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/bicyc-gpu-bench}
mkdir -p "$out"
start=$SECONDS
budget=${BUDGET:-540}
# left prints the seconds part $1 may take: its cap, or what is left of the budget less a margin.
left() { local l=$((budget - (SECONDS - start) - 10)); echo $((l < $1 ? l : $1)); }
{
carry=$root/.gpu-carry-bench
state=/tmp/bicyc-bench-root
# shellcheck source=carry.sh
source "$root/scripts/gpu/carry.sh"
unpack_carry "$carry" bench.tar.gz "$state" scripts/gpu/pack-bench.sh || exit 2
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -e "$fmnist/train-images-idx3-ubyte.gz" ] && [ ! -e "$fmnist/train-images-idx3-ubyte" ]; then
	mkdir -p "$fmnist" && cp "$state"/fashion-mnist/*.gz "$fmnist/" && echo "Fashion-MNIST: the carried subset, in $fmnist"
fi
echo "== machine"
grep -m1 '^model name' /proc/cpuinfo
echo "cores: $(nproc)"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
for f in avx512f avx512bw avx512_bf16 avx2 fma; do
	case " $flags " in *" $f "*) printf '%s ' "$f" ;; esac
done
echo
python=${BICYC_BENCH_PYTHON:-$(command -v python3)}
export BICYC_BENCH_PYTHON=$python
"$python" -c 'import torch; print("PyTorch", torch.__version__, "at", torch.__file__); print(torch.__config__.parallel_info())' || { echo "$python has no PyTorch"; exit 2; }
export LD_LIBRARY_PATH=$state/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cd "$state" || exit 2
bench=./bench-train
full=(--rounds 5)
scale=(--models convnet,resnet18 --rounds 2)
ceiling=2048
if [ -n "${SMOKE:-}" ]; then
	full=(--models convnet --rounds 1 --convnet-steps 1)
	scale=(--models convnet --rounds 1 --convnet-steps 1)
	ceiling=0
fi

echo "== 1. ${full[*]}, 2 threads ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
timeout "$(left 240)" "$bench" "${full[@]}" --threads 2 --ceiling-size "$ceiling" >"$out/train-2threads.md"
status=$?
echo "exit $status"
grep '^|' "$out/train-2threads.md" | cut -c1-160

case " $flags " in
*" avx512f "*)
	echo "== 2. the same with BICYC_VECTOR=avx2 ($(date -u +%H:%M:%S))"
	BICYC_VECTOR=avx2 timeout "$(left 200)" "$bench" "${full[@]}" --threads 2 --ceiling-size 0 >"$out/train-2threads-avx2.md"
	echo "exit $?"
	grep '^|' "$out/train-2threads-avx2.md" | cut -c1-160
	;;
*) echo "== 2. skipped: no AVX-512 here, part 1 ran the AVX2 kernels" ;;
esac

echo "== 3. scaling ($(date -u +%H:%M:%S))"
for t in 1 4 8 16; do
	[ "$t" -le "$(nproc)" ] || continue
	[ "$(left 90)" -gt 20 ] || { echo "threads $t: skipped, out of budget"; continue; }
	echo "-- $t threads" >>"$out/scaling.md"
	timeout "$(left 90)" "$bench" "${scale[@]}" --threads "$t" --ceiling-size 0 >>"$out/scaling.md"
	echo "threads $t: exit $?"
done
grep -E '^-- |^\| (convnet BiCyc|ResNet)' "$out/scaling.md" | cut -c1-160
echo "== done in $((SECONDS - start)) s"
exit $status
} 2>&1 | tee -a "$out/check-bench.log"
exit "${PIPESTATUS[0]}"
