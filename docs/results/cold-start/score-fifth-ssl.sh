#!/bin/sh
# Scores every finished run of runs/cold5ssl not scored yet (marker runs/cold5ssl/NAME.scored) on the
# VALIDATION split only, with the Gaussian classifier and the shipped classifier (the softmax head mixed
# with the Gaussian, gaussian_weight 5, age_bias -0.2); appends to runs/cold5ssl/val5-ssl.json and .txt.
V=default,head-softmax+mixG5+agebias-0.2
O=runs/cold5ssl
CS=${CS:-$O/coldstart}
for d in $O/*/; do
	name=$(basename $d)
	[ -f $O/$name.scored ] && continue
	last=$(python3 -c "import json; m=json.load(open('$d/metrics.json')); print(int(m['completed_tasks'] == m['tasks']))" 2>/dev/null)
	[ "$last" = 1 ] || continue
	echo "$(date -u +%T) score val $name (load $(cut -d' ' -f1-3 /proc/loadavg))" >>$O/score.log
	nice -n 10 $CS --split val --variants $V --runs $O/$name --out $O/val5-ssl.json \
		>>$O/val5-ssl.txt 2>>$O/score.err || exit 1
	echo "$(date -u +%T) done $name" >>$O/score.log
	touch $O/$name.scored
done
