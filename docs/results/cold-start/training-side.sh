#!/bin/sh
# The second round of the cold-start study (docs/results/cold-start.md,
# "Second round"): training-side forks of the first round's runs, a first
# task of 4 classes, and classifier-side fixes of the softmax head, scored
# by bench/coldstart. R is the first round's run folder (runs/cold:
# default-sS, order1-s0, order2-sS); the new runs go to runs/cold2. Each
# command was run on its own (two trainings at a time, nice 5); the raw
# outputs beside this file are those runs' (the .txt files of a file's
# several commands concatenated).
set -e
R=${R:-runs/cold}
out=docs/results/cold-start
train() { bin/bicyc train --threads 1 --run-dir runs/cold2 --set export.enabled=false "$@"; }

# Training side: tasks 2-5 forked from task 1 of the first round's runs.
train --fork $R/order2-s0 --name o2s0-pr --set loss.rehearsal.enabled=true
train --fork $R/default-s0 --name d0s0-pr --set loss.rehearsal.enabled=true
train --fork $R/order2-s0 --name o2s0-lr03 --set train.lr=0.03
train --fork $R/default-s0 --name d0s0-lr03 --set train.lr=0.03
train --fork $R/order2-s0 --name o2s0-lr03-pr --set train.lr=0.03 --set loss.rehearsal.enabled=true
for r in order2-s0:o2s0 default-s0:d0s0 order2-s1:o2s1 order2-s2:o2s2 default-s1:d0s1; do
	train --fork $R/${r%%:*} --name ${r##*:}-lr1 --set train.lr=0.1
done
# A first task of 4 classes (4 + 2 + 2 + 2), natural order, from scratch.
train --config configs/fmnist-t5.yaml --name ft4-s0 --set stream.tasks=4 --set stream.first_task=4

cs() { go run ./bench/coldstart "$@"; }
# Classifier side on the first round's runs (validation).
cs --split val --runs $R/order2-s0 --out $out/val2-fix-order2-s0.json \
	--variants default,head-softmax,head-softmax+agebias-0.3,head-softmax+mixG0.03,head-softmax+mixG0.1,head-softmax+mixG0.3,head-softmax+mixG1,head-softmax+mixG0.03+agebias-0.3,head-softmax+mixG0.1+agebias-0.3,head-softmax+mixG0.3+agebias-0.3,head-softmax+mixG1+agebias-0.3,head-softmax+ageinflate0.25,head-softmax+ageinflate0.5,head-softmax+ageinflate1,head-softmax+ageinflate2,head-softmax+taskcal \
	>$out/val2-fix-order2-s0.txt
cs --split val --runs $R/order2-s0,$R/default-s0 --out $out/val2-scale.json \
	--variants default,head-softmax,head-softmax+mixG3,head-softmax+mixG10,head-softmax+mixG30,head-softmax+mixG100,head-softmax+agedeflate0.25,head-softmax+agedeflate0.5,head-softmax+agedeflate1,head-softmax+agedeflate2,head-softmax+covscale0.5,head-softmax+covscale2 \
	>$out/val2-scale.txt
V=default,head-softmax,head-softmax+agebias-0.3,head-softmax+mixG10,head-softmax+mixG30,head-softmax+mixG10+agebias-0.3,head-softmax+mixG30+agebias-0.3,head-softmax+taskbalanced
cs --split val --runs $R/order2-s1,$R/order2-s2,$R/default-s1,$R/default-s2,$R/order1-s0,$R/order2-s0,$R/default-s0 \
	--variants $V --out $out/val2-mix.json >$out/val2-mix.txt
# The training-side runs with the classifiers (validation; the rehearsal
# runs with the first five variants).
cs --split val --runs runs/cold2/o2s0-pr,runs/cold2/d0s0-pr --variants default,head-softmax,head-softmax+agebias-0.3,head-softmax+mixG10,head-softmax+mixG30 \
	--out $out/val2-train-pr.json >$out/val2-train.txt
for r in o2s0-lr03 d0s0-lr03,ft4-s0 o2s0-lr1,o2s0-lr03-pr d0s0-lr1 o2s1-lr1 o2s2-lr1,d0s1-lr1; do
	cs --split val --runs runs/cold2/$(echo $r | sed 's#,#,runs/cold2/#g') --variants $V --out $out/val2-train.json >>$out/val2-train.txt
done
# Test, read once.
T=default,head-softmax,head-softmax+agebias-0.3,head-softmax+mixG10+agebias-0.3
cs --split test --runs $R/default-s0,$R/default-s1,$R/default-s2,$R/order2-s0,$R/order2-s1,$R/order2-s2,$R/order1-s0 \
	--variants $T --out $out/test2-classifier.json >$out/test2-classifier.txt
cs --split test --runs runs/cold2/ft4-s0 --variants $T --out $out/test2-ft4.json >$out/test2-ft4.txt
cs --split test --runs runs/cold2/d0s0-lr1,runs/cold2/o2s0-lr1,runs/cold2/o2s1-lr1,runs/cold2/o2s2-lr1,runs/cold2/d0s1-lr1 \
	--variants $T --out $out/test2-lr1.json >$out/test2-lr1.txt
