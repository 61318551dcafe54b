#!/usr/bin/env bash
# Installs what the PyTorch side of the benchmarks needs, from Debian:
# python3-torch (1.13), python3-torchvision and python3-pil for /usr/bin/python3, and GNU time,
# which measures the peak RSS of whole processes. Idempotent: it does
# nothing when they are all there. Only `make bench-infer`, `make bench-smoke`,
# `make bench-train` and `make bench-pretrained` run it; PyTorch is never a dependency of bicyc itself.
set -euo pipefail

if /usr/bin/python3 -c 'import torch, torchvision, PIL' 2>/dev/null && [ -x /usr/bin/time ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	sudo=sudo
fi
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends python3-torch python3-torchvision python3-pil time
/usr/bin/python3 -c 'import torch, PIL; print("bench: torch", torch.__version__, "PIL", PIL.__version__)'
