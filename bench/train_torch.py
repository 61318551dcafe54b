"""PyTorch side of the training benchmark (go run ./bench/train).

  train_torch.py serve --arch convnet|resnet18|resnet18-imagenet --state FILE
                       --batches FILE --batch B [--threads N] [--bicyc] [--freeze N]

Builds the networks from the state file bench/train writes (tensors under
backbone., head. and, for --bicyc, old., distiller., adapter.; names of
package models), reads the kept batches ("images" [n,C,H,W] normalised,
"labels" [n]), greets with one JSON line, then answers one JSON request per
stdin line:

  {"op": "steps", "first": F, "steps": N}
      N training steps on kept batches F, F+1, ... (cycled):
      {"seconds": wall time, "cpu_seconds": CPU time of all threads,
       "losses": {term: value of the last step}}

Every reply carries peak_rss_kib. Run with Debian's /usr/bin/python3.
"""

import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bicyc_torch  # noqa: E402

# config.Default (config/config.go) and docs/method.md: loss weights and the
# anti-collapse constants, SGD for tasks t > 1.
LAMBDA_BI, LAMBDA_CYC, LAMBDA_PAIR = 5.0, 2.0, 0.05
ALPHA, BETA, AC_JITTER = 1.0, 1.0, 1e-6
PAIR_ROWS = 128
LR, MOMENTUM, WEIGHT_DECAY, CLIP_NORM = 0.01, 0.9, 5e-4, 1.0
FEATURE_DIM, HIDDEN_MULT = 64, 32


def load(module, tensors, prefix):
    """Loads the tensors named prefix+name into module (strict but for
    BatchNorm's num_batches_tracked, which bicyc does not keep)."""
    state = {k[len(prefix) :]: torch.from_numpy(v) for k, v in tensors.items() if k.startswith(prefix)}
    missing, unexpected = module.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise ValueError(f"state under {prefix!r}: missing {missing}, unexpected {unexpected}")
    return module


def mse(a, b):
    return F.mse_loss(a, b)


def cosine_matrix(x):
    """train/losses.go cosineMatrix: Xn Xn^T, Xn[i] = x[i]/sqrt(||x[i]||^2 + 1e-12)."""
    x = x[:PAIR_ROWS]
    xn = x / torch.sqrt((x * x).sum(dim=1, keepdim=True) + 1e-12)
    return xn @ xn.t()


def anti_collapse(z):
    """models/ops AntiCollapse with kappa 0: -(1/S) sum_i min(chol(Sigma + eps I)_ii, beta),
    Sigma the unbiased batch covariance; growing jitter if the factorisation fails."""
    b, s = z.shape
    zc = z - z.mean(dim=0, keepdim=True)
    cov = zc.t() @ zc / (b - 1)
    eye = torch.eye(s, dtype=z.dtype)
    jitter = AC_JITTER
    while True:
        l, info = torch.linalg.cholesky_ex(cov + jitter * eye)
        if int(info) == 0:
            break
        jitter *= 10
    return -torch.clamp(torch.diagonal(l), max=BETA).sum() / s


class Step:
    """One training step of the networks in the state file."""

    def __init__(self, args):
        tensors, _ = bicyc_torch.read_safetensors(args.state)
        batches, _ = bicyc_torch.read_safetensors(args.batches)
        self.images = torch.from_numpy(batches["images"])
        self.labels = torch.from_numpy(batches["labels"]).long()
        self.batch = args.batch
        self.kept = len(self.labels) // self.batch
        c = self.images.shape[1]
        classes = tensors["head.weight"].shape[0]
        self.backbone = load(bicyc_torch.BACKBONES[args.arch](c, FEATURE_DIM), tensors, "backbone.").train()
        if args.freeze:
            bicyc_torch.freeze_stages(self.backbone, args.freeze)
        self.head = load(nn.Linear(FEATURE_DIM, classes), tensors, "head.")
        params = [p for p in self.backbone.parameters() if p.requires_grad] + list(self.head.parameters())
        self.bicyc = args.bicyc
        if self.bicyc:
            self.old = load(bicyc_torch.BACKBONES[args.arch](c, FEATURE_DIM), tensors, "old.").eval()
            self.old.requires_grad_(False)
            self.distiller = load(bicyc_torch.Mapper(FEATURE_DIM, HIDDEN_MULT), tensors, "distiller.")
            self.adapter = load(bicyc_torch.Mapper(FEATURE_DIM, HIDDEN_MULT), tensors, "adapter.")
            params += list(self.distiller.parameters()) + list(self.adapter.parameters())
        self.params = params
        self.opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)

    def losses(self, x, y):
        """The unweighted loss terms and their weighted total (train/stage1.go)."""
        z = self.backbone(x)
        terms = {"ce": F.cross_entropy(self.head(z), y)}
        if not self.bicyc:
            return terms, terms["ce"]
        terms["ac"] = anti_collapse(z)
        with torch.no_grad():
            z_old = self.old(x)
        d, a = self.distiller, self.adapter
        sg_new = z.detach()
        dz, az = d(z), a(z_old)
        terms["n2o"] = mse(dz, z_old)
        terms["o2n"] = mse(az, sg_new)
        terms["cyc"] = mse(a(dz.detach()), sg_new) + mse(d(az.detach()), z_old)
        terms["pair"] = mse(cosine_matrix(sg_new), cosine_matrix(az)) + mse(cosine_matrix(z_old), cosine_matrix(dz))
        total = (
            terms["ce"]
            + ALPHA * terms["ac"]
            + LAMBDA_BI * (terms["n2o"] + terms["o2n"])
            + LAMBDA_CYC * terms["cyc"]
            + LAMBDA_PAIR * terms["pair"]
        )
        return terms, total

    def run(self, k):
        """One step on kept batch k: forward, backward, clipping, SGD update."""
        x = self.images[k * self.batch : (k + 1) * self.batch]
        y = self.labels[k * self.batch : (k + 1) * self.batch]
        terms, total = self.losses(x, y)
        self.opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(self.params, CLIP_NORM)
        self.opt.step()
        return terms


def kernels():
    """Names the kernels PyTorch runs: oneDNN's instruction set (convolutions; read from a short child
    process with ONEDNN_VERBOSE, which prints it at the first primitive), ATen's vector capability (element-
    wise ops) and the BLAS behind torch's libblas.so.3 (Debian builds with BLAS_INFO=generic: OpenBLAS)."""
    import ctypes
    import re
    import subprocess

    parts = []
    probe = "import torch; torch.nn.functional.conv2d(torch.zeros(8,64,32,32), torch.zeros(64,64,3,3), padding=1)"
    out = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1"),
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r"info,cpu,isa:(.*)", out)
    v = re.search(r"info,(oneDNN v[\d.]+)", out)
    parts.append(f"{v.group(1) if v else 'oneDNN'} {m.group(1).strip() if m else 'isa unknown'}")
    m = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    parts.append(f"ATen {m.group(1) if m else 'unknown'}")
    try:
        blas = ctypes.CDLL("libblas.so.3")
        blas.openblas_get_corename.restype = ctypes.c_char_p
        parts.append(f"BLAS OpenBLAS {blas.openblas_get_corename().decode()}")
    except (OSError, AttributeError):
        parts.append("BLAS not OpenBLAS")
    return "; ".join(parts)


def reply(obj):
    obj["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--arch", required=True, choices=sorted(bicyc_torch.BACKBONES))
    s.add_argument("--state", required=True)
    s.add_argument("--batches", required=True)
    s.add_argument("--batch", type=int, required=True)
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--bicyc", action="store_true", help="the BiCyc Stage I step (else backbone + CE)")
    s.add_argument("--freeze", type=int, default=0, help="leading ResNet stages frozen (models.Backbone.FreezeStages)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    step = Step(args)
    reply({"torch": torch.__version__, "threads": torch.get_num_threads(), "kernels": kernels()})
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] != "steps":
            raise ValueError(f"unknown request op {req['op']!r}")
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(req["steps"]):
            terms = step.run((req["first"] + i) % step.kept)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        reply({"seconds": seconds, "cpu_seconds": cpu, "losses": {k: float(v) for k, v in terms.items()}})


if __name__ == "__main__":
    main()
