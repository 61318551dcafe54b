#!/usr/bin/env bash
# Runs every fuzz target (func Fuzz...) of the packages that parse outside
# bytes, one target at a time, each for a fixed time: the short fuzz run of
# the test command. Plain `go test` already replays each target's seeds and
# its committed corpus (testdata/fuzz/<target>/); this script searches for
# new failures.
#
# Usage: scripts/fuzz.sh [package ...]   (default: the five packages below)
#
# Environment:
#   FUZZTIME      time per target, a go duration (default 10s); an "Nx"
#                 count also works
#   FUZZMINIMIZE  -fuzzminimizetime, the effort spent shrinking each new
#                 input (default 100x: 100 runs; the go default of 60s per
#                 input would eat a short run)
#   FUZZPARALLEL  fuzzing worker processes (default: GOMAXPROCS)
#   GO            the go command (default: go on PATH)
#
# A failing input is written by go test to <package>/testdata/fuzz/<target>/
# and fails the script; commit it with a fix, or with the regression test
# when the fix belongs to someone else. To keep new coverage-increasing
# inputs found locally, copy them from "$(go env GOCACHE)/fuzz/<import
# path>/<target>/" into that directory.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is busy (golang/go#75804,
# fixed in Go 1.27). Such a run that wrote no failing input and failed no
# seed is reported as a toolchain flake, not a failure.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}
FUZZMINIMIZE=${FUZZMINIMIZE:-100x}
packages=("$@")
if [ ${#packages[@]} -eq 0 ]; then
	packages=(./safetensors ./data ./imaging ./bundle ./infer ./serve)
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
summary=()
for pkg in "${packages[@]}"; do
	targets=$("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	if [ -z "$targets" ]; then
		echo "fuzz.sh: $pkg has no fuzz targets" >&2
		exit 1
	fi
	for target in $targets; do
		echo "=== $pkg $target ($FUZZTIME)"
		args=(test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE")
		if [ -n "${FUZZPARALLEL:-}" ]; then
			args+=(-parallel "$FUZZPARALLEL")
		fi
		status=0
		"$GO" "${args[@]}" "$pkg" >"$log" 2>&1 || status=$?
		cat "$log"
		execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
		result="ok"
		if [ "$status" -ne 0 ]; then
			if grep -q 'Failing input written' "$log" || grep -q -- "--- FAIL: ${target}/" "$log" ||
				! grep -qx '    context deadline exceeded' "$log"; then
				result="FAIL"
				failed+=("$pkg $target")
			else
				result="flake (golang/go#75804)"
			fi
		fi
		summary+=("$(printf '%-18s %-24s %10s execs  %s' "$pkg" "$target" "${execs:-0}" "$result")")
	done
done

echo
echo "fuzz.sh summary ($FUZZTIME per target):"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
	exit 1
fi
