#!/bin/sh
# DP-ULR's Table 1 grid (Feng et al., "Forward Learning with Differential Privacy", Section 4.2) on one dataset: B ∈ {64, 200, 500} × σ0 ∈ {1, 4, 8}, DP-ULR
# with optimizer.dp_ulr's defaults (a fixed injected σ_l = 1, K = 16 copies) in paper and certified
# mode, and DP-SGD at σ = σ0 on the same MLP, one JSON summary per run in $OUT/<run>.json.
# Usage (from the repository root, after make build):
#
#   benchmarks/dpulr-table1.sh fmnist 25 runs/dpulr-table1      # the paper's 25 epochs
#   benchmarks/dpulr-table1.sh mnist 25 runs/dpulr-table1-mnist  # needs the full MNIST set
#
# Environment: BATCHES (default "500 200 64"), SIGMAS (default "8 1 4"), MODES (DP-ULR modes,
# default "paper certified"; "none" runs DP-SGD only), DPSGD=0 skips the DP-SGD baseline, SEEDS
# (default: one unseeded run; "1 2 3" runs each cell once per seed, NOT private: for measuring
# only), JOBS=2 runs two at a time, BIN the dptrain binary. The defaults order the cells B = 500
# first, σ0 = 8 and 1 first: the cells the paper's claims are about.
set -eu
ds=${1:-fmnist}; epochs=${2:-25}; out=${3:-runs/dpulr-table1}; jobs=${JOBS:-1}
bin=${BIN:-bin/dptrain}
batches=${BATCHES:-500 200 64}; sigmas=${SIGMAS:-8 1 4}; modes=${MODES:-paper certified}
dpsgd=${DPSGD:-1}; seeds=${SEEDS:-none}
run() { # name config extra-flags...
	name=$1; cfg=$2; shift 2
	for seed in $seeds; do
		n=$name; s=""
		[ "$seed" != none ] && n=$name-seed$seed && s="--set seed=$seed"
		# shellcheck disable=SC2086 # $s is one flag pair or empty
		"$bin" train --config "$cfg" --no-progress --json --set training.epochs="$epochs" \
			--set output.dir="$out/$n" --set training.eval_every=0 --set training.checkpoint_every=0 $s "$@" \
			>"$out/$n.json" 2>"$out/$n.log" || echo "$n failed: see $out/$n.log" >&2
	done
}
mkdir -p "$out"
i=0
for b in $batches; do
	every=$((600000 / b)) # ×0.85 every 10 epochs of 60000 examples
	for s in $sigmas; do
		for mode in $modes; do
			[ "$mode" = none ] && continue
			run "ulr-$mode-b$b-s$s" "configs/$ds-mlp-dpulr.yaml" --set optimizer.batch_size="$b" \
				--set optimizer.min_batch_size=$((b / 2)) --set optimizer.noise_multiplier="$s" \
				--set optimizer.schedule.step_every=$every --set optimizer.dp_ulr.mode="$mode" &
			i=$((i + 1)); [ $((i % jobs)) -eq 0 ] && wait
		done
		[ "$dpsgd" = 0 ] && continue
		# DP-SGD baseline (the paper's: SGD lr 0.1, same decay, σ = σ0, C = 1), Poisson sampling.
		run "dpsgd-b$b-s$s" "configs/$ds-mlp-dpulr.yaml" --set optimizer.algorithm=dp-sgd --set optimizer.update=sgd \
			--set optimizer.learning_rate=0.1 --set optimizer.sampling=poisson --set optimizer.min_batch_size=0 \
			--set optimizer.batch_size="$b" --set optimizer.noise_multiplier="$s" --set optimizer.schedule.step_every=$every \
			--set privacy.accountants=[rdp] &
		i=$((i + 1)); [ $((i % jobs)) -eq 0 ] && wait
	done
done
wait
