#!/usr/bin/env bash
# Regenerates export/onnxpb/onnx.pb.go from Debian's ONNX schema
# (libonnx-dev: /usr/include/onnx/onnx.proto, ONNX 1.12, proto2).
#
# The schema's `package onnx;` is renamed to `bicyc.onnx` and its file path to
# bicyc/onnx.proto: any other Go module that registers the official onnx.proto
# (onnx-go, for one) would otherwise collide with ours in the protobuf global
# registry, which panics at program start. Two comments that link to documents
# of the ONNX repository name them instead: the generated file cites nothing a
# clone of this repository cannot read.
#
# Needs: protoc (apt-get install protobuf-compiler libonnx-dev) and
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
# Running it twice gives identical output.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
src="${ONNX_PROTO:-/usr/include/onnx/onnx.proto}"
want_gen="protoc-gen-go v1.36.12"

[ -r "$src" ] || { echo "gen-onnx-proto: $src not found (apt-get install libonnx-dev)" >&2; exit 1; }
command -v protoc >/dev/null || { echo "gen-onnx-proto: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
gen="$(command -v protoc-gen-go || true)"
[ -n "$gen" ] || gen="$(go env GOPATH)/bin/protoc-gen-go"
[ -x "$gen" ] || { echo "gen-onnx-proto: protoc-gen-go not found (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12)" >&2; exit 1; }
have_gen="$("$gen" --version)"
[ "$have_gen" = "$want_gen" ] || { echo "gen-onnx-proto: have $have_gen, want $want_gen" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bicyc"
grep -q '^package onnx;$' "$src" || { echo "gen-onnx-proto: $src has no 'package onnx;' line" >&2; exit 1; }
sed -e 's/^package onnx;$/package bicyc.onnx;\noption go_package = "github.com\/bicyc\/bicyc\/export\/onnxpb;onnxpb";/' \
	-e 's|Refer to https://github.com/onnx/onnx/blob/main/docs/TypeDenotation.md#type-denotation-definition|Refer to the Type Denotation section of the ONNX specification|' \
	-e 's|Refer to https://github.com/onnx/onnx/blob/main/docs/DimensionDenotation.md#denotation-definition|Refer to the Dimension Denotation section of the ONNX specification|' \
	"$src" >"$tmp/bicyc/onnx.proto"

protoc --plugin=protoc-gen-go="$gen" -I "$tmp" \
	--go_out="$tmp" --go_opt=module=github.com/bicyc/bicyc \
	bicyc/onnx.proto
install -m 0644 "$tmp/export/onnxpb/onnx.pb.go" "$root/export/onnxpb/onnx.pb.go"
echo "gen-onnx-proto: wrote export/onnxpb/onnx.pb.go"
