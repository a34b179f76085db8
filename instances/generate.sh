#!/usr/bin/env bash
# Regenerates every instance file of the library from the generator commands (deterministic:
# same seed, same bytes). Run from the repository root:
#   bash instances/generate.sh              every section (coopt/ takes ~20 min on 2 cores)
#   bash instances/generate.sh coopt mixed  only these sections
# Sections: small circulant alltoall dnn llm bandwidth mixed coopt.
set -euo pipefail
cd "$(dirname "$0")"
T=${TOPOOPT_MILP:-topoopt-milp}

# small/: n <= 12, mixed AllReduce + MP (sparse) and DLRM-like, proven optima in reference.csv
gen_small() {
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
}

# circulant/: uniform all-to-all traffic, n from 8 to 128, d in {4, 6, 8}
gen_circulant() {
  mkdir -p circulant
  for n in 8 12 16 24 32 64 128; do
    for d in 4 6 8; do
      [ "$d" -lt "$n" ] || continue
      $T generate uniform --n $n --degree $d --gbps 100 --bytes 1e7 --out circulant/uniform-n$n-d$d.json
    done
  done
}

# alltoall/: uniform all-to-all reference rows at the paper's scale, 1e6 bytes per pair, certified
# against the Moore/Cerf average-distance bound (the Graph Golf figures are beside them in README)
gen_alltoall() {
  mkdir -p alltoall
  for nd in "64 4" "128 4" "128 8" "256 8"; do
    set -- $nd
    $T generate uniform --n $1 --degree $2 --gbps 100 --bytes 1e6 --name alltoall-n$1-d$2 \
       --out alltoall/alltoall-n$1-d$2.json
  done
}

# dnn/: the six TopoOpt models, default strategy, n in {16, 128}, d in {4, 8}, B = 100 Gbps
gen_dnn() {
  mkdir -p dnn
  for m in dlrm candle bert ncf resnet50 vgg16; do
    for n in 16 128; do
      for d in 4 8; do
        $T workload $m --n $n --degree $d --gbps 100 --out dnn/$m-n$n-d$d.json
      done
    done
  done
}

# llm/: GPT-style jobs, data parallel and pipeline x data parallel
gen_llm() {
  mkdir -p llm
  for size in 1.3b 6.7b 13b; do
    $T workload gpt3-$size --n 16 --degree 4 --gbps 100 --out llm/gpt3-$size-n16-d4-dp.json
    $T workload gpt3-$size --n 16 --degree 4 --gbps 100 --strategy pp=4,tp=4 \
       --out llm/gpt3-$size-n16-d4-pp4tp4.json
  done
  $T workload gpt3-175b --n 128 --degree 8 --gbps 200 --strategy pp=8,tp=4 \
     --out llm/gpt3-175b-n128-d8-pp8tp4.json
}

# bandwidth/: iteration time vs link rate (the TopoOpt simulations' B values), n = 16, d = 4
gen_bandwidth() {
  mkdir -p bandwidth
  for m in dlrm candle bert vgg16; do
    for b in 10 25 40 100 200; do
      $T workload $m --n 16 --degree 4 --gbps $b --out bandwidth/$m-n16-d4-b$b.json
    done
  done
}

# mixed/: synthetic coset AllReduce (4 cosets of n/4, 1.2e9 bytes each) plus dense random MP
# at a set share of all bytes, for controlled sweeps over the MP share; and two fixed targets
gen_mixed() {
  mkdir -p mixed
  for n in 16 32 64 128; do
    for d in 4 8; do
      for share in 05 15 30 50; do
        $T generate mixed --n $n --degree $d --gbps 100 --seed 0 --groups 4 --mp-share 0.$share \
           --name mixed-n$n-d$d-g4-mp$share --out mixed/mixed-n$n-d$d-g4-mp$share.json
      done
    done
  done
  # targets: n = 12, two cosets of 6, 35% MP (n = 16, four cosets of 4, 30% MP is mixed-n16-d4-g4-mp30)
  $T generate mixed --n 12 --degree 4 --gbps 100 --seed 0 --groups 2 --mp-share 0.35 \
     --name mixed-n12-d4-g2-mp35 --out mixed/mixed-n12-d4-g2-mp35.json
}

# coopt/: the traffic of the outer loop's co-optimized strategies (Metropolis search from data
# parallelism, GPT-3 from pp=4,tp=4; TopologyFinder rebuilds; fixed budget and seed). Slow:
# about 20 min on 2 cores; run it alone with `bash instances/generate.sh coopt`.
COOPT="--topology-method topologyfinder --budget 2000 --k 50 --temperature 0.05 --schedule every --seed 0"
gen_coopt() {
  mkdir -p coopt
  for n in 16 32 64 128; do
    for d in 4 8; do
      for m in dlrm candle bert ncf resnet50 vgg16; do
        $T cooptimize $m --n $n --degree $d --gbps 100 $COOPT --instance-out coopt/$m-n$n-d$d.json
      done
      for size in 1.3b 13b; do
        $T cooptimize gpt3-$size --n $n --degree $d --gbps 100 --strategy pp=4,tp=4 $COOPT \
           --instance-out coopt/gpt3-$size-n$n-d$d.json
      done
    done
  done
  for b in 25 400; do
    for m in dlrm bert; do
      $T cooptimize $m --n 64 --degree 4 --gbps $b $COOPT --instance-out coopt/$m-n64-d4-b$b.json
    done
    $T cooptimize gpt3-13b --n 64 --degree 4 --gbps $b --strategy pp=4,tp=4 $COOPT \
       --instance-out coopt/gpt3-13b-n64-d4-b$b.json
  done
}

SECTIONS=(small circulant alltoall dnn llm bandwidth mixed coopt)
for section in "${@:-${SECTIONS[@]}}"; do
  case " ${SECTIONS[*]} " in
    *" $section "*) "gen_$section" ;;
    *) echo "generate.sh: unknown section '$section' (known: ${SECTIONS[*]})" >&2; exit 2 ;;
  esac
done
