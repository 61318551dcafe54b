#!/bin/sh
# The fifth round's contrastive screen of the cold-start study (docs/results/cold-start.md,
# "Fifth round: contrastive Stage I"): the fourth round's training setting (6 Stage I epochs,
# later-task lr 0.1) with train.contrastive_weight W on task 1, from the third round's run configs
# (R: runs/cold3 of that round, d0s0-e6-lr1 = default order, o2s0-e6-lr1 = order 2) with --seed S;
# new runs go to runs/cold5ssl. One run at a time, nice 19, one thread, export off. A finished run
# (its last task's checkpoint exists) is skipped, an unfinished one resumed (bicyc train --resume
# runs/cold5ssl/NAME), so rerunning the script continues where it stopped. Each run's start, end,
# wall time and load average go to runs/cold5ssl/queue.log. The file runs/cold5ssl/STOP stops the
# queue before its next run. SEEDS (default "0") and W (default 0.5) choose the runs.
set -e
R=${R:-runs/cold3}
O=runs/cold5ssl
BIN=${BIN:-bin/bicyc}
SEEDS=${SEEDS:-0}
W=${W:-0.5}
mkdir -p $O
log() { echo "$(date -u +%H:%M:%S) $* (load $(cut -d' ' -f1-3 /proc/loadavg))" >>$O/queue.log; }
# run NAME LAST CONFIG [--set k=v ...]: trains NAME (LAST = its number of tasks)
# from scratch with CONFIG, or resumes it, unless it is finished.
run() { name=$1; last=$2; cfg=$3; shift 3
	[ -f $O/STOP ] && { log "STOP before $name"; exit 0; }
	if [ -d $O/$name/checkpoints/task-0$last ]; then return 0; fi
	start=$(date +%s)
	if [ -f $O/$name/config.yaml ]; then
		log "resume $name"
		nice -n 19 $BIN train --resume $O/$name --threads 1 >>$O/$name.out 2>&1
	else
		log "start $name"
		nice -n 19 $BIN train --config $cfg --run-dir $O --name $name --threads 1 \
			--set export.enabled=false "$@" >>$O/$name.out 2>&1
	fi
	log "end $name wall $(($(date +%s) - start)) s"
}
SSL="--set train.contrastive_weight=$W --set train.contrastive_temperature=0.5"
for s in $SEEDS; do
	run d0s$s-ssl$W 5 $R/d0s0-e6-lr1/config.yaml --seed $s $SSL
	run o2s$s-ssl$W 5 $R/o2s0-e6-lr1/config.yaml --seed $s $SSL
done
