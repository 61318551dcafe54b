#!/usr/bin/env bash
# setup-image.sh installs what `make test-image` runs the image with, idempotently:
# Debian's podman (loads the archive, runs containers as root without a daemon) and
# runc (podman's default runtime crun refuses a host with cgroup v1 and v2 mixed).
# `make image` itself needs neither.
set -euo pipefail

sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "setup-image: not root and no sudo: run as root" >&2; exit 1; }
	sudo_cmd=(sudo)
fi
missing=()
for p in podman runc; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup-image: installing Debian packages: ${missing[*]}" >&2
	"${sudo_cmd[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
