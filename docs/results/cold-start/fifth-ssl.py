#!/usr/bin/env python3
"""Tables of the fifth round's contrastive screen (docs/results/cold-start.md, "Fifth round:
contrastive Stage I"): each contrastive run of val5-ssl.txt beside its baseline (the third round's
6-epoch, lr-0.1 run of the same order and seed, val4-frontier-e6.txt), validation split, for the
Gaussian classifier and the shipped classifier. Usage: fifth-ssl.py val5-ssl.txt val4-frontier-e6.txt"""
import re
import sys

LINE = re.compile(r"^(\S+)\s+(\S+)\s+A_last\s+([\d.]+)\s+A_inc\s+([\d.]+)\s+F_last\s+([\d.]+)\s+TAw\s+([\d.]+)\s+per task (\S+)")
VARIANTS = {"default": "Gaussian", "head-softmax+mixG5+agebias-0.2": "shipped"}


def read(path):
    rows = {}
    for line in open(path):
        m = LINE.match(line)
        if m and m.group(2) in VARIANTS:
            rows[(m.group(1).rstrip("/").split("/")[-1], m.group(2))] = m.groups()[2:]
    return rows


ssl, base = read(sys.argv[1]), read(sys.argv[2])
print("| run | classifier | A_last | A_inc | F_last | TAw | per task (TAg) | baseline A_last / A_inc / F_last / TAw | per task | dA_last |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (run, variant), (a, inc, f, taw, per) in sorted(ssl.items(), key=lambda kv: (kv[0][0][:2], kv[0][0], kv[0][1])):
    order_seed = run.split("-")[0]  # d0s0, o2s0
    b = base.get((order_seed + "-e6-lr1", variant))
    if b is None:
        continue
    print(f"| {run} | {VARIANTS[variant]} | {a} | {inc} | {f} | {taw} | {per} | {b[0]} / {b[1]} / {b[2]} / {b[3]} | {b[4]} | {float(a) - float(b[0]):+.2f} |")
