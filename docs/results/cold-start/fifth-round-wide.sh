#!/bin/sh
# The fifth round of the cold-start study, wider features
# (docs/results/cold-start.md, "Fifth round: wider features"): model.feature_dim
# 128 instead of 64 with the fourth round's training setting (6 Stage I epochs,
# later-task lr 0.1), default order and order 2, seeds 0-2. R is the third
# round's run folder (runs/cold3), whose 64-dim runs d0sS-e6-lr1 and
# o2sS-e6-lr1 give each new run its configuration; BIN the binary (the 64-dim
# runs were trained by the third round's build); new runs go to runs/cold5.
# One run at a time, nice 19, one thread, export off. A finished run (its last
# task's checkpoint exists) is skipped, an unfinished one resumed (bicyc train
# --resume runs/cold5/NAME), so rerunning the script continues where it
# stopped. Each run's start, end, wall time and load average go to
# runs/cold5/queue.log. The file runs/cold5/STOP stops the queue before its
# next run.
set -e
R=${R:-runs/cold3}
O=runs/cold5
BIN=${BIN:-bin/bicyc}
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
W="--set model.feature_dim=128"

# Seed 0 of both orders first (a screen), then seeds 1-2.
for s in 0 1 2; do
	run d0s$s-e6-lr1-f128 5 $R/d0s$s-e6-lr1/config.yaml --seed $s $W
	run o2s$s-e6-lr1-f128 5 $R/o2s$s-e6-lr1/config.yaml --seed $s $W
done
