#!/usr/bin/env python3
"""The Gaussian classifier's numbers of finished runs, read from their own
metrics.json (what training scored after each task, which bench/coldstart's
`default` variant reproduces): one line per run and split (test, val), and
mean ± sd per group (per task: the mean of the seeds) (the run's name without -sS / sS, e.g. d0s2-lr1 -> d0-lr1).
python3 docs/results/cold-start/runmetrics.py RUN..."""
import json, re, statistics, sys
from collections import defaultdict


def scores(rows, counts):
    """A_last, A_inc, F_last (%) of a lower-triangular accuracy matrix (one row
    per task), every task weighted by its classes as package metrics does
    (F_last over the old tasks only)."""
    def alast(r):
        return sum(c * a for c, a in zip(counts, r)) / sum(counts[:len(r)])
    last = rows[-1]
    t = len(rows) - 1
    old = [max(rows[j][u] for j in range(u, t)) - last[u] for u in range(t)]
    fl = sum(c * max(f, 0) for c, f in zip(counts, old)) / sum(counts[:t]) if t else 0.0
    return 100 * alast(last), 100 * statistics.mean(alast(r) for r in rows), 100 * fl


groups = defaultdict(lambda: defaultdict(list))
for run in sys.argv[1:]:
    m = json.load(open(run.rstrip("/") + "/metrics.json"))
    name = run.rstrip("/").split("/")[-1]
    if m["completed_tasks"] != m["tasks"]:
        print(f"{name:14s} unfinished: {m['completed_tasks']} of {m['tasks']} tasks", file=sys.stderr)
        continue
    g = re.sub(r"-?s\d+(?=-|$)", "", name, count=1)
    for split, key, wkey in (("test", "tag", "taw"), ("val", "val_tag", "val_taw")):
        rows = [r.get(key) for r in m["reports"]]
        if any(r is None for r in rows):
            continue
        al, ai, fl = scores(rows, [len(r["classes"]) for r in m["reports"]])
        wrows = [r.get(wkey) for r in m["reports"]]
        counts = [len(r["classes"]) for r in m["reports"]]
        taw = 100 * sum(c * a for c, a in zip(counts, wrows[-1])) / sum(counts) if wrows[-1] else None
        per = "/".join(f"{100 * a:.1f}" for a in rows[-1])
        tw = f"{taw:6.2f}" if taw is not None else "     -"
        print(f"{name:14s} {split:4s} A_last {al:6.2f} A_inc {ai:6.2f} F_last {fl:6.2f} TAw {tw} per task {per}")
        groups[g][split].append((al, ai, fl, taw, rows[-1]))


def ms(v):
    if None in v:
        return "-"
    return f"{v[0]:.2f}" if len(v) == 1 else f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}"


print()
for g, by in groups.items():
    for split, rs in by.items():
        per = "/".join(f"{100 * statistics.mean(x):.1f}" for x in zip(*[r[4] for r in rs]))
        print(f"{g:12s} {split:4s} n={len(rs)} A_last {ms([r[0] for r in rs])} A_inc {ms([r[1] for r in rs])} "
              f"F_last {ms([r[2] for r in rs])} TAw {ms([r[3] for r in rs])} per task {per}")
