#!/usr/bin/env bash
# Regenerates every instance file of the library from the generator commands (deterministic:
# same seed, same bytes). Run from the repository root: bash instances/generate.sh
set -euo pipefail
cd "$(dirname "$0")"
T=${TOPOOPT_MILP:-topoopt-milp}

# small/: n <= 12, mixed AllReduce + MP (sparse) and DLRM-like, proven optima in reference.csv
mkdir -p small
for s in 0 1 2; do
  $T generate sparse --n 6 --degree 2 --gbps 100 --seed $s --pairs 6 --groups 1 --group-size 4 \
     --out small/sparse-n6-d2-s$s.json
  $T generate sparse --n 8 --degree 4 --gbps 100 --seed $s --pairs 8 --groups 2 --group-size 4 \
     --out small/sparse-n8-d4-s$s.json
done
$T generate dlrm --n 8 --degree 4 --gbps 100 --seed 0 --tables 8 --out small/dlrm-n8-d4-s0.json
$T generate sparse --n 10 --degree 4 --gbps 100 --seed 0 --pairs 10 --groups 2 --group-size 5 \
   --out small/sparse-n10-d4-s0.json
$T generate sparse --n 12 --degree 4 --gbps 100 --seed 0 --pairs 12 --groups 2 --group-size 6 \
   --out small/sparse-n12-d4-s0.json

# circulant/: uniform all-to-all traffic, n from 8 to 128, d in {4, 6, 8}
mkdir -p circulant
for n in 8 12 16 24 32 64 128; do
  for d in 4 6 8; do
    [ "$d" -lt "$n" ] || continue
    $T generate uniform --n $n --degree $d --gbps 100 --bytes 1e7 --out circulant/uniform-n$n-d$d.json
  done
done

# dnn/: the six TopoOpt models, default strategy, n in {16, 128}, d in {4, 8}, B = 100 Gbps
mkdir -p dnn
for m in dlrm candle bert ncf resnet50 vgg16; do
  for n in 16 128; do
    for d in 4 8; do
      $T workload $m --n $n --degree $d --gbps 100 --out dnn/$m-n$n-d$d.json
    done
  done
done

# llm/: GPT-style jobs, data parallel and pipeline x data parallel
mkdir -p llm
for size in 1.3b 6.7b 13b; do
  $T workload gpt3-$size --n 16 --degree 4 --gbps 100 --out llm/gpt3-$size-n16-d4-dp.json
  $T workload gpt3-$size --n 16 --degree 4 --gbps 100 --strategy pp=4,tp=4 \
     --out llm/gpt3-$size-n16-d4-pp4tp4.json
done
$T workload gpt3-175b --n 128 --degree 8 --gbps 200 --strategy pp=8,tp=4 \
   --out llm/gpt3-175b-n128-d8-pp8tp4.json

# bandwidth/: iteration time vs link rate (the TopoOpt simulations' B values), n = 16, d = 4
mkdir -p bandwidth
for m in dlrm candle bert vgg16; do
  for b in 10 25 40 100 200; do
    $T workload $m --n 16 --degree 4 --gbps $b --out bandwidth/$m-n16-d4-b$b.json
  done
done
