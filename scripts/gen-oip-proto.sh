#!/usr/bin/env bash
# Regenerates serve/oippb/grpc_service.pb.go and grpc_service_grpc.pb.go
# from serve/oippb/grpc_service.proto, the Open Inference Protocol's gRPC
# API (package inference) as bicyc serves it.
#
# The file is registered under the path serve/oippb/grpc_service.proto, not
# a bare grpc_service.proto that another module's copy of the protocol could
# also register; its package stays "inference", which the protocol's service
# and method names on the wire depend on.
#
# Needs: protoc (apt-get install protobuf-compiler) and
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
# Running it twice gives identical output.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
want_gen="protoc-gen-go v1.36.12"
want_grpc="protoc-gen-go-grpc 1.6.2"

command -v protoc >/dev/null || { echo "gen-oip-proto: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
plugin() {
	local p
	p="$(command -v "$1" || true)"
	[ -n "$p" ] || p="$(go env GOPATH)/bin/$1"
	[ -x "$p" ] || { echo "gen-oip-proto: $1 not found (go install $2)" >&2; exit 1; }
	echo "$p"
}
gen="$(plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12)"
grpc="$(plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2)"
have_gen="$("$gen" --version)"
[ "$have_gen" = "$want_gen" ] || { echo "gen-oip-proto: have $have_gen, want $want_gen" >&2; exit 1; }
have_grpc="$("$grpc" --version)"
[ "$have_grpc" = "$want_grpc" ] || { echo "gen-oip-proto: have $have_grpc, want $want_grpc" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
protoc --plugin=protoc-gen-go="$gen" --plugin=protoc-gen-go-grpc="$grpc" -I "$root" \
	--go_out="$tmp" --go_opt=module=github.com/bicyc/bicyc \
	--go-grpc_out="$tmp" --go-grpc_opt=module=github.com/bicyc/bicyc \
	serve/oippb/grpc_service.proto
for f in grpc_service.pb.go grpc_service_grpc.pb.go; do
	install -m 0644 "$tmp/serve/oippb/$f" "$root/serve/oippb/$f"
done
echo "gen-oip-proto: wrote serve/oippb/grpc_service.pb.go and grpc_service_grpc.pb.go"
