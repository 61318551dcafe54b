#!/usr/bin/env python3
"""Tables of the fifth round (wider features): validation scores from val5-wide.json by order,
feature width and classifier (mean ± sd over seeds, and per seed), and each run's time per task
from its log.txt (only the timing part of the task lines is read: training's own evaluation is of
the test split and is not printed here).

usage: wide.py val5-wide.json RUN_DIR...   (RUN_DIRs: the runs whose times to tabulate)"""
import json, re, statistics, sys

NAMES = {"default": "Gaussian", "head-softmax": "head",
         "head-softmax+mixG5+agebias-0.2": "shipped (head + 5 x Gaussian, age bias -0.2)"}


def group(run):
    name = run.rstrip("/").split("/")[-1]
    m = re.match(r"(d0|o2)s(\d)-(e6-lr1|e6-lr1-f128|f128-lr01)$", name)
    dim = {"e6-lr1": "64", "e6-lr1-f128": "128", "f128-lr01": "128, later lr 0.01"}[m[3]]
    return ("default order" if m[1] == "d0" else "order 2"), dim, int(m[2])


def ms(xs):
    return f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs):.2f}" if len(xs) > 1 else f"{xs[0]:.2f}"


def scores(path):
    rows = {}
    for e in json.load(open(path)):
        order, dim, seed = group(e["Run"])
        rows.setdefault((e["Variant"], order, dim), {})[seed] = e
    print("| classifier | order | dim | seeds | A_last | A_inc | F_last | TAw A_last | A_last per seed | per task after the last (mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for v in NAMES:
        for order in ("default order", "order 2"):
            for dim in ("64", "128", "128, later lr 0.01"):
                r = rows.get((v, order, dim))
                if not r:
                    continue
                es = [r[s] for s in sorted(r)]
                per = [statistics.mean(e["ALastPerTask"][i] for e in es) for i in range(5)]
                print(f"| {NAMES[v]} | {order} | {dim} | {len(es)} | {ms([e['ALast'] for e in es])} | "
                      f"{ms([e['AInc'] for e in es])} | {ms([e['FLast'] for e in es])} | "
                      f"{ms([e['TAwALast'] for e in es])} | {' / '.join('%.2f' % e['ALast'] for e in es)} | "
                      f"{' / '.join('%.1f' % p for p in per)} |")


TIME = re.compile(r"task (\d) done: .*\(stage I (\d+)s at \d+ img/s, stage II ([\d.]+)s, transport ([\d.]+)s, eval ([\d.]+)s\)")


def times(runs):
    print()
    print("| run | stage I task 1 (s) | stage I tasks 2-5 (s, mean) | stage II tasks 2-5 (s, mean) | eval per task (s, mean) | total (s) |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        t = {}
        for line in open(run + "/log.txt"):
            m = TIME.search(line)
            if m and int(m[1]) not in t:  # the first pass only (a resumed run repeats nothing)
                t[int(m[1])] = [float(x) for x in m.groups()[1:]]
        if len(t) < 5:
            print(f"| {run.split('/')[-1]} | unfinished ({len(t)} tasks) | | | | |")
            continue
        later = [t[k] for k in range(2, 6)]
        tot = sum(sum(v) for v in t.values())
        print(f"| {run.rstrip('/').split('/')[-1]} | {t[1][0]:.0f} | {statistics.mean(x[0] for x in later):.1f} | "
              f"{statistics.mean(x[1] for x in later):.1f} | {statistics.mean(v[3] for v in t.values()):.1f} | {tot:.0f} |")


scores(sys.argv[1])
times(sys.argv[2:])
