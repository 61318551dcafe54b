#!/usr/bin/env python3
"""The fourth round's tables (docs/results/cold-start.md, "Fourth round"):
mean ± sd over seeds of A_last, A_inc, F_last, TAw A_last and the per-task
A_last (mean of seeds), per setting (class order, first task of 4, images
per class), training configuration and classifier, for one split.
python3 docs/results/cold-start/fourth.py --split test FILE.json... [--metrics RUN...]
FILE.json: what bench/coldstart wrote; --metrics: runs whose Gaussian
classifier (`default`) is read from their own metrics.json (today's runs).
The setting and configuration come from the run's name: default-sS / d0sS,
order1-sS / o1sS, order2-sS / o2sS, ft4-s0 / ft4s0, nN-sS / nNsS; -e6-lr1:
6 Stage I epochs and lr 0.1, -lr1: lr 0.1, none: today (lr 0.01, 4 epochs)."""
import argparse, json, re, statistics, sys
from collections import defaultdict

SETTINGS = [("d0", "default order"), ("o1", "order 1"), ("o2", "order 2"),
            ("ft4", "first task of 4"), ("n100", "100 per class"), ("n20", "20 per class")]
CONFIGS = [("today", "today (lr 0.01, 4 ep.)"), ("lr1", "lr 0.1, 4 ep."), ("e6", "lr 0.1, 6 ep.")]
CLASSIFIERS = ["default", "head-softmax", "head-softmax+mixG10+agebias-0.3", "head-softmax+mixG5+agebias-0.2"]


def parse(run):
    name = run.rstrip("/").split("/")[-1]
    m = re.match(r"(default|d0|order1|o1|order2|o2|ft4|n100|n20)-?s(\d)(-e6-lr1|-lr1)?$", name)
    if not m:
        return None
    setting = {"default": "d0", "order1": "o1", "order2": "o2"}.get(m.group(1), m.group(1))
    config = {"-e6-lr1": "e6", "-lr1": "lr1", None: "today"}[m.group(3)]
    return setting, config, int(m.group(2))


def scores(rows, counts):
    """A_last, A_inc, F_last (%) as package metrics computes them."""
    def alast(r):
        return sum(c * a for c, a in zip(counts, r)) / sum(counts[:len(r)])
    last, t = rows[-1], len(rows) - 1
    old = [max(rows[j][u] for j in range(u, t)) - last[u] for u in range(t)]
    fl = sum(c * max(f, 0) for c, f in zip(counts, old)) / sum(counts[:t]) if t else 0.0
    return 100 * alast(last), 100 * statistics.mean(alast(r) for r in rows), 100 * fl


def from_metrics(run, split):
    m = json.load(open(run.rstrip("/") + "/metrics.json"))
    if m["completed_tasks"] != m["tasks"]:
        return None
    key, wkey = ("tag", "taw") if split == "test" else ("val_tag", "val_taw")
    rows = [r[key] for r in m["reports"]]
    counts = [len(r["classes"]) for r in m["reports"]]
    al, ai, fl = scores(rows, counts)
    w = m["reports"][-1].get(wkey)  # the first round's runs kept no validation TAw
    taw = 100 * sum(c * a for c, a in zip(counts, w)) / sum(counts) if w else None
    return {"Run": run, "Variant": "default", "ALast": al, "AInc": ai, "FLast": fl, "TAwALast": taw,
            "ALastPerTask": [100 * a for a in rows[-1]]}


def ms(v):
    if None in v:
        return "-"
    return f"{v[0]:.2f}" if len(v) == 1 else f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}"


ap = argparse.ArgumentParser()
ap.add_argument("--split", required=True)
ap.add_argument("--metrics", nargs="*", default=[])
ap.add_argument("files", nargs="*")
a = ap.parse_args()
res = {}  # (setting, config, classifier, seed) -> result
for f in a.files:
    for r in json.load(open(f)):
        p = parse(r["Run"])
        if p:
            res[(p[0], p[1], r["Variant"], p[2])] = r
for run in a.metrics:
    p, r = parse(run), from_metrics(run, a.split)
    if p and r:
        res.setdefault((p[0], p[1], "default", p[2]), r)

print(f"split: {a.split}\n")
print("| setting | configuration | classifier | seeds | A_last | A_inc | F_last | TAw A_last | A_last per task | per seed |")
print("|---|---|---|---|---|---|---|---|---|---|")
for s, sname in SETTINGS:
    for c, cname in CONFIGS:
        for v in CLASSIFIERS:
            rs = sorted((k[3], r) for k, r in res.items() if k[:3] == (s, c, v))
            if not rs:
                continue
            seeds = [k for k, _ in rs]
            rs = [r for _, r in rs]
            each = ", ".join(f"{r['ALast']:.2f}" for r in rs)
            per = " / ".join(f"{statistics.mean(x):.1f}" for x in zip(*[r["ALastPerTask"] for r in rs]))
            print(f"| {sname} | {cname} | `{v}` | {','.join(map(str, seeds))} | {ms([r['ALast'] for r in rs])} | "
                  f"{ms([r['AInc'] for r in rs])} | {ms([r['FLast'] for r in rs])} | {ms([r['TAwALast'] for r in rs])} | "
                  f"{per} | {each} |")
