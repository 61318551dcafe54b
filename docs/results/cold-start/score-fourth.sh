#!/bin/sh
# Scores every finished run of runs/cold4 not scored yet (marker runs/cold4/NAME.scored), validation
# then test (each read once per run), with the Gaussian classifier, the head, the third round's
# mixture and the fourth round's choice; appends to runs/cold4/val4-new.json and test4-new.json.
V=default,head-softmax,head-softmax+mixG10+agebias-0.3,head-softmax+mixG5+agebias-0.2
CS=${CS:-runs/cold4/coldstart}
for d in runs/cold4/*/; do
	name=$(basename $d)
	[ -f runs/cold4/$name.scored ] && continue
	last=$(python3 -c "import json; m=json.load(open('$d/metrics.json')); print(int(m['completed_tasks'] == m['tasks']))" 2>/dev/null)
	[ "$last" = 1 ] || continue
	for split in val test; do
		echo "$(date -u +%T) score $split $name (load $(cut -d' ' -f1-3 /proc/loadavg))" >>runs/cold4/score.log
		nice -n 10 $CS --split $split --variants $V --runs runs/cold4/$name --out runs/cold4/${split}4-new.json \
			>>runs/cold4/${split}4-new.txt 2>>runs/cold4/score.err || exit 1
	done
	touch runs/cold4/$name.scored
done
