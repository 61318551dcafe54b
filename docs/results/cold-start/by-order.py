#!/usr/bin/env python3
"""Mean ± sd per class order (the run's name without -sS) of every variant
in the JSON files bench/coldstart wrote, validation A_last / F_last:
python3 docs/results/cold-start/by-order.py FILE.json... (Markdown)."""
import json, re, statistics, sys
from collections import defaultdict

rows = defaultdict(lambda: defaultdict(list))
variants, groups = [], []
for path in sys.argv[1:]:
    for r in json.load(open(path)):
        g = re.sub(r"-s\d+$", "", r["Run"].rstrip("/").split("/")[-1])
        if r["Variant"] not in variants:
            variants.append(r["Variant"])
        if g not in groups:
            groups.append(g)
        rows[r["Variant"]][g].append(r)

def ms(v):
    if len(v) == 1:
        return f"{v[0]:.2f}"
    return f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}"

print("| variant | " + " | ".join(f"{g} A_last / F_last" for g in groups) + " |")
print("|---" * (len(groups) + 1) + "|")
for v in variants:
    cells = []
    for g in groups:
        rs = rows[v][g]
        cells.append(f"{ms([r['ALast'] for r in rs])} / {ms([r['FLast'] for r in rs])} (n={len(rs)})" if rs else "")
    print(f"| `{v}` | " + " | ".join(cells) + " |")
