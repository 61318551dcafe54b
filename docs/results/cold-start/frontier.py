#!/usr/bin/env python3
"""The fourth round's choice (docs/results/cold-start.md, "Fourth round"):
the lambda x age-bias frontier of head-softmax+mixG<l>+agebias<b> from the
validation JSON bench/coldstart wrote for the default order's (d0sS...) and
order 2's (o2sS...) runs, mean over seeds per order, the admissible settings
(mean F_last <= today's Gaussian validation F_last on both orders) and the
chosen one (highest mean of the two orders' A_last; ties within 0.01: smaller
lambda, then age bias nearer 0).
python3 docs/results/cold-start/frontier.py VAL.json [CHECK.json]
CHECK.json (the runs of today's default configuration) gives the default=
line: yes if the chosen setting's mean A_last is above the Gaussian
classifier's (`default`) on both orders there."""
import json, re, statistics, sys
from collections import defaultdict

LAMBDAS = [1, 2, 3, 5, 10, 20]
BIASES = [0, -0.1, -0.2, -0.3, -0.4, -0.5]
F_TODAY = {"d0": 10.85, "o2": 14.49}  # Gaussian, lr 0.01, 4 Stage I epochs, validation, 3 seeds


def name(l, b):
    return f"head-softmax+mixG{l:g}" + (f"+agebias{b:g}" if b else "")


def load(path):
    """{variant: {order: [result per seed]}}, order = d0 or o2."""
    out = defaultdict(lambda: defaultdict(list))
    for r in json.load(open(path)):
        order = re.match(r"(d0|o2)s\d", r["Run"].rstrip("/").split("/")[-1]).group(1)
        out[r["Variant"]][order].append(r)
    return out


def mean(rs, key):
    return statistics.mean(r[key] for r in rs)


def ms(rs, key):
    v = [r[key] for r in rs]
    return f"{statistics.mean(v):.2f} ± {statistics.stdev(v):.2f}"


val = load(sys.argv[1])
print("| setting | default order A_last / F_last | order 2 A_last / F_last | mean A_last | admissible |")
print("|---|---|---|---|---|")
ref = ["default", "head-softmax", "head-softmax+agebias-0.1", "head-softmax+agebias-0.3"]
for v in ref:
    d, o = val[v]["d0"], val[v]["o2"]
    print(f"| `{v}` (reference) | {ms(d, 'ALast')} / {ms(d, 'FLast')} | {ms(o, 'ALast')} / {ms(o, 'FLast')} | "
          f"{(mean(d, 'ALast') + mean(o, 'ALast')) / 2:.2f} | |")
cands = []
for l in LAMBDAS:
    for b in BIASES:
        v = name(l, b)
        d, o = val[v]["d0"], val[v]["o2"]
        assert len(d) == 3 and len(o) == 3, v
        ok = mean(d, "FLast") <= F_TODAY["d0"] and mean(o, "FLast") <= F_TODAY["o2"]
        a = (mean(d, "ALast") + mean(o, "ALast")) / 2
        cands.append((a, l, b, ok))
        print(f"| `{v}` | {ms(d, 'ALast')} / {ms(d, 'FLast')} | {ms(o, 'ALast')} / {ms(o, 'FLast')} | "
              f"{a:.2f} | {'yes' if ok else 'no'} |")
best = max(a for a, _, _, ok in cands if ok)
chosen = min((l, -b) for a, l, b, ok in cands if ok and a >= best - 0.01)
l, b = chosen[0], -chosen[1]
print(f"\nchosen: lambda={l:g} age_bias={b:g} ({name(l, b)}), mean validation A_last {best:.2f}")
if len(sys.argv) > 2:
    chk = load(sys.argv[2])
    wins = []
    for order in ("d0", "o2"):
        m, g = chk[name(l, b)][order], chk["default"][order]
        wins.append(mean(m, "ALast") > mean(g, "ALast"))
        print(f"today's configuration, {order}: chosen {ms(m, 'ALast')} / {ms(m, 'FLast')}, "
              f"Gaussian {ms(g, 'ALast')} / {ms(g, 'FLast')} (n={len(m)})")
    print(f"lambda={l:g} age_bias={b:g}")
    print("default=" + ("yes" if all(wins) else "no"))
