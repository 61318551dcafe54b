"""PyTorch side of the inference benchmark (go run ./bench/infer).

The same network as a bicyc model directory in PyTorch eager mode: the
backbone from the run's checkpoint (backbone.safetensors, BN as separate
eval-mode layers, or folded into the convs like backbone.onnx with
--variant folded) and the Gaussian classifier of the model directory
(bicyc_torch.load_classifier: classifier.onnx's tables, or the
prototypes.safetensors of a directory older than schema version 5). Run with Debian's /usr/bin/python3.

  infer_torch.py once  --model DIR --backbone FILE [--threads N] IMAGE
      classify one image and print its top-k, as `bicyc-infer IMAGE` does:
      the whole-process comparison (import, load, decode, classify).
  infer_torch.py serve --model DIR --backbone FILE [--threads N] --images DIR
      decode every PNG of DIR, then answer one JSON request per stdin line
      with one JSON reply line on stdout (see serve below).
"""

import argparse
import json
import os
import resource
import sys
import time

import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bicyc_torch  # noqa: E402


class Model:
    """Preprocessing, backbone and classifier of one model directory."""

    def __init__(self, model_dir, backbone_path, variant="eager"):
        with open(os.path.join(model_dir, "manifest.json")) as f:
            self.manifest = json.load(f)
        self.pre = bicyc_torch.Preprocess(self.manifest)
        self.backbone = bicyc_torch.load_backbone(backbone_path)
        if variant == "folded":
            self.backbone = bicyc_torch.fold_bn(self.backbone)
        elif variant != "eager":
            raise ValueError(f"variant {variant!r}, want eager or folded")
        self.classifier = bicyc_torch.load_classifier(model_dir, self.manifest)
        self.classes = self.manifest["classes"]
        self.top_k = min(self.manifest["classifier"]["top_k"], len(self.classes))

    def scores(self, imgs):
        """Scores [N,K] of decoded PIL images, smaller is closer."""
        return self.classifier(self.backbone(self.pre(imgs)))

    def classify(self, imgs):
        """Top-k (class index, distance) pairs of every image, closest first:
        what infer.Classifier.ClassifyBatch returns."""
        d, i = torch.topk(self.scores(imgs), self.top_k, dim=1, largest=False, sorted=True)
        return [list(zip(ii, dd)) for ii, dd in zip(i.tolist(), d.tolist())]


def set_threads(n):
    torch.set_num_threads(n)
    torch.set_num_interop_threads(1)


def peak_rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def once(args):
    set_threads(args.threads)
    with torch.inference_mode():
        m = Model(args.model, args.backbone)
        img = Image.open(args.image)
        img.load()
        (preds,) = m.classify([img])
    print("FILE  RANK  CLASS  NAME  TASK  DISTANCE")
    for rank, (c, d) in enumerate(preds, 1):
        cl = m.classes[c]
        print(f"{args.image}  {rank}  {cl['id']}  {cl['name']}  {cl['task']}  {d:.5g}")


def serve(args):
    """Answers requests, one JSON object per line; every reply carries
    peak_rss_kib. Requests:

      {"op": "latency", "calls": N, "variant": V}
          N single-image classifications of image 0, timed one by one:
          {"latency_us": [...]}
      {"op": "throughput", "batch": B, "reps": R, "variant": V}
          R classifications of a batch of B images (images 0..B-1, cycled):
          {"seconds": total wall time, "images": B*R}
      {"op": "scores", "count": N}
          eager scores of images 0..N-1 for the parity check: {"scores": [[...]]}
    """
    set_threads(args.threads)
    names = sorted(n for n in os.listdir(args.images) if n.endswith(".png"))
    imgs = []
    for n in names:
        img = Image.open(os.path.join(args.images, n))
        img.load()
        imgs.append(img)
    models = {v: Model(args.model, args.backbone, v) for v in ("eager", "folded")}
    torch.inference_mode().__enter__()
    reply({"torch": torch.__version__, "threads": torch.get_num_threads(), "images": len(imgs)})
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        m = models[req.get("variant", "eager")]
        if op == "latency":
            img = [imgs[0]]
            m.classify(img)
            lat = []
            for _ in range(req["calls"]):
                t0 = time.perf_counter_ns()
                m.classify(img)
                lat.append((time.perf_counter_ns() - t0) / 1e3)
            reply({"latency_us": lat})
        elif op == "throughput":
            b = req["batch"]
            batch = [imgs[i % len(imgs)] for i in range(b)]
            m.classify(batch)
            t0 = time.perf_counter()
            for _ in range(req["reps"]):
                m.classify(batch)
            reply({"seconds": time.perf_counter() - t0, "images": b * req["reps"]})
        elif op == "scores":
            reply({"scores": m.scores(imgs[: req["count"]]).tolist()})
        else:
            raise ValueError(f"unknown request op {op!r}")


def reply(obj):
    obj["peak_rss_kib"] = peak_rss_kib()
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    for name in ("once", "serve"):
        s = sub.add_parser(name)
        s.add_argument("--model", required=True, help="model directory exported by bicyc")
        s.add_argument("--backbone", required=True, help="the run's checkpoints/task-NN/backbone.safetensors")
        s.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
        if name == "once":
            s.add_argument("image")
        else:
            s.add_argument("--images", required=True, help="directory of PNG images")
    args = p.parse_args()
    once(args) if args.mode == "once" else serve(args)


if __name__ == "__main__":
    main()
