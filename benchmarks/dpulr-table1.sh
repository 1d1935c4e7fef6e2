#!/bin/sh
# DP-ULR's Table 1 grid (Feng et al., "Forward Learning with Differential Privacy", Section 4.2) on one dataset: B ∈ {64, 200, 500} × σ0 ∈ {1, 4, 8}, DP-ULR
# in paper and certified mode and DP-SGD at σ = σ0 on the same MLP, one JSON summary per run in
# $OUT/<run>/summary.json. Usage (from the repository root, after make build):
#
#   benchmarks/dpulr-table1.sh fmnist 25 runs/dpulr-table1      # the paper's 25 epochs
#   benchmarks/dpulr-table1.sh mnist 25 runs/dpulr-table1-mnist  # needs the full MNIST set
#
# Runs are sequential; JOBS=2 runs two at a time.
set -eu
ds=${1:-fmnist}; epochs=${2:-25}; out=${3:-runs/dpulr-table1}; jobs=${JOBS:-1}
bin=${BIN:-bin/dptrain}
run() { # name config extra-flags...
	name=$1; cfg=$2; shift 2
	"$bin" train --config "$cfg" --no-progress --json --set training.epochs="$epochs" \
		--set output.dir="$out/$name" --set training.eval_every=0 --set training.checkpoint_every=0 "$@" \
		>"$out/$name.json" 2>"$out/$name.log" || echo "$name failed: see $out/$name.log" >&2
}
mkdir -p "$out"
i=0
for b in 64 200 500; do
	every=$((600000 / b)) # ×0.85 every 10 epochs of 60000 examples
	for s in 1 4 8; do
		for mode in paper certified; do
			sigma=0 # paper: the controller's σ_l; certified: a public σ_l
			[ $mode = certified ] && sigma=1
			run "ulr-$mode-b$b-s$s" "configs/$ds-mlp-dpulr.yaml" --set optimizer.batch_size=$b \
				--set optimizer.min_batch_size=$((b / 2)) --set optimizer.noise_multiplier=$s \
				--set optimizer.schedule.step_every=$every --set optimizer.dp_ulr.mode=$mode \
				--set optimizer.dp_ulr.sigma=$sigma &
			i=$((i + 1)); [ $((i % jobs)) -eq 0 ] && wait
		done
		# DP-SGD baseline (the paper's: SGD lr 0.1, same decay, σ = σ0, C = 1), Poisson sampling.
		run "dpsgd-b$b-s$s" "configs/$ds-mlp-dpulr.yaml" --set optimizer.algorithm=dp-sgd --set optimizer.update=sgd \
			--set optimizer.learning_rate=0.1 --set optimizer.sampling=poisson --set optimizer.min_batch_size=0 \
			--set optimizer.batch_size=$b --set optimizer.noise_multiplier=$s --set optimizer.schedule.step_every=$every \
			--set privacy.accountants=[rdp] &
		i=$((i + 1)); [ $((i % jobs)) -eq 0 ] && wait
	done
done
wait
