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

log "building bench/train with cgo (OpenBLAS)"
CGO_ENABLED=1 CGO_LDFLAGS=-lopenblas go build -trimpath -ldflags="-s -w" -o "$stage/bench-train" ./bench/train
mkdir -p "$stage/lib" "$stage/bench" "$stage/fashion-mnist"
for lib in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0; do
	path=$(ldd "$stage/bench-train" | awk -v l="$lib" '$1 == l { print $3 }')
	[ -n "$path" ] || path=$(ldd /lib/x86_64-linux-gnu/libopenblas.so.0 | awk -v l="$lib" '$1 == l { print $3 }')
	[ -f "$path" ] || { log "cannot find $lib"; exit 1; }
	cp -L "$path" "$stage/lib/$lib"
done
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
git rev-parse HEAD >"$stage/commit" 2>/dev/null || echo unknown >"$stage/commit"
(cd "$stage" && find . -type f ! -name SHA256SUMS -print0 | sort -z | xargs -0 sha256sum >SHA256SUMS)
rm -rf "$carry"
mkdir -p "$carry"
tar -C "$stage" -czf "$carry/bench.tar.gz" .
(cd "$carry" && sha256sum bench.tar.gz >SHA256SUMS)
du -sh "$stage" "$carry"/bench.tar.gz >&2
