#!/bin/sh
# The classifier side of the cold-start study (docs/results/cold-start.md):
# scores every variant on every checkpoint of one finished run, validation
# split, and the oracle diagnostics at its last checkpoint.
#   sh docs/results/cold-start/study.sh runs/cold/default-s0
# writes docs/results/cold-start/val-<run>.json and .txt.
set -e
run=$1
name=$(basename "$run")
out=docs/results/cold-start
main=default,flip,shrink0.5,shrink0.5+flip,shrink1+flip,shrink2+flip,shrink0.5+flip+agebias0.01,shrink0.5+flip+agebias-0.01,shrink1+flip+offdiag1,shrink1+flip+pool0.2,mc-pow1-shrink0.5+flip,mc-pow0.5-shrink0.5+flip,mc-pow0.5-shrink1+flip,head-softmax,head-softmax+flip,softmax-gs-pow0.5-wd0.0001+flip,softmax-gs-pow1-wd0.0001-raw+flip,softmax-gs-pow1-wd0+flip,softmax-gs-pow1-wd0.001+flip
go run ./bench/coldstart --runs "$run" --split val --variants "$main" --oracle --out "$out/val-$name.json" > "$out/val-$name.txt"
