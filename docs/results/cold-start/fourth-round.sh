#!/bin/sh
# The fourth round of the cold-start study (docs/results/cold-start.md,
# "Fourth round"): 6 Stage I epochs with later-task lr 0.1 on the settings the
# third round left out, and today's configuration (lr 0.01, 4 Stage I epochs)
# for order 1 seeds 1-2, so order 1 has 3 seeds on both sides. R is the first
# round's run folder (runs/cold: default-sS, order1-s0, order2-sS, n20-sS,
# n100-sS), R2 the second round's (runs/cold2: ft4-s0); new runs go to
# runs/cold4. One run at a time, nice 19, one thread, export off. A finished
# run (its last task's checkpoint exists) is skipped, an unfinished one
# resumed (bicyc train --resume runs/cold4/NAME), so rerunning the script
# continues where it stopped. Each run's start, end, wall time and load
# average go to runs/cold4/queue.log. The file runs/cold4/STOP stops the queue
# before its next run.
set -e
R=${R:-runs/cold}
R2=${R2:-runs/cold2}
O=runs/cold4
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
E6="--set train.epochs_first=6 --set train.lr=0.1"

run o1s0-e6-lr1 5 $R/order1-s0/config.yaml $E6
run ft4s0-e6-lr1 4 $R2/ft4-s0/config.yaml $E6
run n100s0-e6-lr1 5 $R/n100-s0/config.yaml $E6
run n20s0-e6-lr1 5 $R/n20-s0/config.yaml $E6
for s in 1 2; do
	run o1s$s-e6-lr1 5 $R/order1-s0/config.yaml --seed $s $E6
done
# Today's configuration (the first round's order1-s0 config: lr 0.01, 4 Stage I epochs), seeds 1-2.
for s in 1 2; do
	run order1-s$s 5 $R/order1-s0/config.yaml --seed $s
done
for s in 1 2; do
	run n100s$s-e6-lr1 5 $R/n100-s$s/config.yaml $E6
	run n20s$s-e6-lr1 5 $R/n20-s$s/config.yaml $E6
done
