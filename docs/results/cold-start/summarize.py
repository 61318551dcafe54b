#!/usr/bin/env python3
"""Mean ± sd over runs of every variant in the JSON files bench/coldstart
wrote: python3 docs/results/cold-start/summarize.py FILE.json... (Markdown)."""
import json, statistics, sys
from collections import defaultdict

rows = defaultdict(list)
order = []
for path in sys.argv[1:]:
    for r in json.load(open(path)):
        if r["Variant"] not in rows:
            order.append(r["Variant"])
        rows[r["Variant"]].append(r)

def ms(v):
    if len(v) == 1:
        return f"{v[0]:.2f}"
    return f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}"

print("| variant | runs | A_last | A_inc | F_last | TAw A_last | A_last per task (mean) |")
print("|---|---|---|---|---|---|---|")
for v in sorted(order, key=lambda v: -statistics.mean(r["ALast"] for r in rows[v])):
    rs = rows[v]
    per = [statistics.mean(x) for x in zip(*[r["ALastPerTask"] for r in rs])]
    print(f"| `{v}` | {len(rs)} | {ms([r['ALast'] for r in rs])} | {ms([r['AInc'] for r in rs])} | "
          f"{ms([r['FLast'] for r in rs])} | {ms([r['TAwALast'] for r in rs])} | {' / '.join(f'{p:.1f}' for p in per)} |")
