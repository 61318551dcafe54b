#!/usr/bin/env bash
# pack-bench.sh prepares the CPU training benchmark (bench/train, issue 47) for a lent machine that has
# no Go and no network but its own CPUs and its own PyTorch (bench/README.md, "On a lent machine's
# CPUs"). Run it here, from the repository root:
#
#   bash scripts/gpu/pack-bench.sh
#
# It builds bench/train with cgo (OpenBLAS, as bicyc trains), copies Debian's libopenblas.so.0,
# libgfortran.so.5 and libquadmath.so.0 beside it, the PyTorch side (bench/train_torch.py,
# bench/bicyc_torch.py) and the first 6000 training and 1000 test images of Debian's Fashion-MNIST (the
# convnet row's batches; the ResNet rows use generated images), and packs them into
# .gpu-carry-bench/bench.tar.gz (ignored by git) with its sha256. One call on the lent machine carries
# that folder and runs scripts/gpu/check-bench.sh.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PATH=/usr/local/go/bin:$PATH
carry=$root/.gpu-carry-bench
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
log() { printf 'pack-bench: %s\n' "$*" >&2; }
# shellcheck source=carry.sh
source "$root/scripts/gpu/carry.sh"

log "building bench/train with cgo (OpenBLAS)"
CGO_ENABLED=1 CGO_LDFLAGS=-lopenblas go build -trimpath -ldflags="-s -w" -o "$stage/bench-train" ./bench/train
copy_openblas "$stage/bench-train" "$stage/lib"
mkdir -p "$stage/bench" "$stage/fashion-mnist"
cp bench/train_torch.py bench/bicyc_torch.py "$stage/bench/"
log "writing a Fashion-MNIST subset (6000 training, 1000 test images)"
/usr/bin/python3 - /usr/share/datasets/fashion-mnist "$stage/fashion-mnist" <<'PY'
import gzip, os, struct, sys

src, dst = sys.argv[1], sys.argv[2]
for split, n in (("train", 6000), ("t10k", 1000)):
    for kind, item in (("images-idx3-ubyte", 28 * 28), ("labels-idx1-ubyte", 1)):
        name = "%s-%s" % (split, kind)
        path = os.path.join(src, name + ".gz")
        data = gzip.open(path).read() if os.path.exists(path) else open(os.path.join(src, name), "rb").read()
        dims = 3 if kind.startswith("images") else 1
        header = 4 + 4 * dims
        count = struct.unpack(">I", data[4:8])[0]
        if count < n:
            sys.exit("%s holds %d items, want at least %d" % (path, count, n))
        out = data[:4] + struct.pack(">I", n) + data[8:header] + data[header:header + n * item]
        with gzip.open(os.path.join(dst, name + ".gz"), "wb") as f:
            f.write(out)
PY
pack_stage "$stage" "$carry" bench.tar.gz
du -sh "$stage" "$carry"/bench.tar.gz >&2
