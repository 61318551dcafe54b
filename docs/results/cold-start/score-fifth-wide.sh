#!/bin/sh
# Scores the fifth round's wide-feature runs (runs/cold5, fifth-round-wide.sh) on the VALIDATION
# split only, each finished run once (marker runs/cold5/NAME.scored), with the Gaussian classifier
# (default), the softmax head, and configs/fmnist-t5.yaml's classifier (the head mixed with 5 x the
# Gaussian classifier, age bias -0.2); appends to runs/cold5/val5-wide.json and .txt. With
# BASE=1 it first scores the 64-dim runs they are compared with (R: the third round's folder),
# with the same build and variants. CS is bench/coldstart's binary.
V=default,head-softmax,head-softmax+mixG5+agebias-0.2
R=${R:-runs/cold3}
O=runs/cold5
CS=${CS:-$O/coldstart}
score() { echo "$(date -u +%T) score val $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >>$O/score.log
	nice -n 10 $CS --split val --variants $V --runs $1 --out $O/val5-wide.json >>$O/val5-wide.txt 2>>$O/score.err; }
if [ "${BASE:-0}" = 1 ]; then
	for o in d0 o2; do for s in 0 1 2; do score $R/${o}s$s-e6-lr1 || exit 1; done; done
fi
for d in $O/*/; do
	name=$(basename $d)
	[ -f $O/$name.scored ] && continue
	last=$(python3 -c "import json; m=json.load(open('$d/metrics.json')); print(int(m['completed_tasks'] == m['tasks']))" 2>/dev/null)
	[ "$last" = 1 ] || continue
	score $O/$name || exit 1
	touch $O/$name.scored
done
