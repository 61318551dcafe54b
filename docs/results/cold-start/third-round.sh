#!/bin/sh
# The third round of the cold-start study (docs/results/cold-start.md,
# "Third round"): train.lr 0.1 for the later tasks on the settings the second
# round left out, 6 Stage I epochs, lr 0.3 and 4 later-task epochs. R is the
# first round's run folder (runs/cold: default-sS, order1-s0, order2-sS,
# n20-sS, n100-sS), R2 the second round's (runs/cold2: ft4-s0); the new runs
# go to runs/cold3. One command at a time, nice 10, one thread; each command
# resumes its run if the folder exists (bicyc train --resume runs/cold3/NAME).
set -e
R=${R:-runs/cold}
R2=${R2:-runs/cold2}
out=docs/results/cold-start
fork() { src=$1; name=$2; shift 2
	bin/bicyc train --fork $src --run-dir runs/cold3 --name $name --threads 1 --set export.enabled=false "$@"; }
full() { cfg=$1; name=$2; shift 2
	bin/bicyc train --config $cfg --run-dir runs/cold3 --name $name --threads 1 --set export.enabled=false "$@"; }

# (a) train.lr 0.1 (later tasks) where it had not been run.
for s in 0 1 2; do
	fork $R/n20-s$s n20s$s-lr1 --set train.lr=0.1
done
for s in 0 1 2; do
	fork $R/n100-s$s n100s$s-lr1 --set train.lr=0.1
done
fork $R2/ft4-s0 ft4s0-lr1 --set train.lr=0.1
fork $R/default-s2 d0s2-lr1 --set train.lr=0.1
fork $R/order1-s0 o1s0-lr1 --set train.lr=0.1
# Gaussian classifier, validation and test, from the runs' own metrics.json:
python3 $out/runmetrics.py $R/n20-s? runs/cold3/n20s?-lr1 $R/n100-s? runs/cold3/n100s?-lr1 \
	$R2/ft4-s0 runs/cold3/ft4s0-lr1 $R/default-s? $R2/d0s0-lr1 $R2/d0s1-lr1 runs/cold3/d0s2-lr1 \
	$R/order1-s0 runs/cold3/o1s0-lr1 >$out/run3-lr1.txt
# The softmax head and its fixes on the new lr-0.1 runs (test, read once):
go run ./bench/coldstart --split test --runs runs/cold3/d0s2-lr1,runs/cold3/o1s0-lr1,runs/cold3/ft4s0-lr1 \
	--variants default,head-softmax,head-softmax+agebias-0.3,head-softmax+mixG10+agebias-0.3 \
	--out $out/test3-lr1.json >$out/test3-lr1.txt

# (b) 6 Stage I epochs (the most the 1.25x time bound allows), with later-task lr 0.1,
# from scratch with the first round's configuration of the same order and seed;
# (d) lr 0.3 for the later tasks (order 2 seed 0 only).
full $R/order2-s0/config.yaml o2s0-e6-lr1 --set train.epochs_first=6 --set train.lr=0.1
fork $R/order2-s0 o2s0-lr3 --set train.lr=0.3
full $R/default-s0/config.yaml d0s0-e6-lr1 --set train.epochs_first=6 --set train.lr=0.1
T=default,head-softmax,head-softmax+agebias-0.3,head-softmax+mixG10+agebias-0.3
go run ./bench/coldstart --split val --runs runs/cold3/o2s0-e6-lr1,runs/cold3/d0s0-e6-lr1,runs/cold3/o2s0-lr3 \
	--variants $T --out $out/val3-e6.json >$out/val3-e6.txt
for r in order2-s1:o2s1 order2-s2:o2s2 default-s1:d0s1 default-s2:d0s2; do
	full $R/${r%%:*}/config.yaml ${r##*:}-e6-lr1 --set train.epochs_first=6 --set train.lr=0.1
done
go run ./bench/coldstart --split val --runs runs/cold3/o2s1-e6-lr1,runs/cold3/o2s2-e6-lr1,runs/cold3/d0s1-e6-lr1,runs/cold3/d0s2-e6-lr1 \
	--variants $T --out $out/val3-e6b.json >$out/val3-e6b.txt
python3 $out/runmetrics.py $R/default-s? $R2/d0s?-lr1 runs/cold3/d0s2-lr1 runs/cold3/d0s?-e6-lr1 \
	$R/order2-s? $R2/o2s?-lr1 runs/cold3/o2s?-e6-lr1 runs/cold3/o2s0-lr3 >$out/run3-train.txt

# The default job (make train's command: both threads, export on) with later-task lr 0.1,
# and today's job as a fork of it (the same task 1).
bin/bicyc train --config configs/fmnist-t5.yaml --set train.lr=0.1 --run-dir runs/cold3 --name job-lr1
bin/bicyc train --fork runs/cold3/job-lr1 --run-dir runs/cold3 --name job-lr001 --set train.lr=0.01

# Test, read once, for the 6-epoch runs.
go run ./bench/coldstart --split test --runs runs/cold3/d0s0-e6-lr1,runs/cold3/d0s1-e6-lr1,runs/cold3/d0s2-e6-lr1,runs/cold3/o2s0-e6-lr1,runs/cold3/o2s1-e6-lr1,runs/cold3/o2s2-e6-lr1 \
	--variants $T --out $out/test3-e6.json >$out/test3-e6.txt
