#!/bin/sh
# Fingerprints of every shipped config: each config in configs/ runs a few seeded steps, and one
# line per config gives the SHA-256 of its model file and of its summary.json (with the fields
# that name paths or the machine's BLAS left out). Two builds that print the same lines trained
# the same models and reported the same guarantees, bit for bit: a change meant to move code and
# not behaviour is checked this way.
#
#   benchmarks/seeded-summaries.sh >before.txt           # from the repository root, after make build
#   ... change the code, make build ...
#   benchmarks/seeded-summaries.sh >after.txt && diff before.txt after.txt
#
# Environment: BIN (default bin/dptrain), STEPS (default 3), OUT (default: a temporary directory,
# removed at the end), CONFIGS (default configs/*.yaml). Seeded runs are NOT private; this is a
# test of the code, not a training run. A config whose data is not on the machine prints its
# error's first line instead of hashes, the same on both sides.
set -eu
bin=${BIN:-bin/dptrain}
steps=${STEPS:-3}
configs=${CONFIGS:-configs/*.yaml}
out=${OUT:-}
if [ -z "$out" ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
for cfg in $configs; do
	name=$(basename "$cfg" .yaml)
	dir=$out/$name
	rm -rf "$dir"
	set -- --config "$cfg" --no-progress --json --set seed=1 --set training.steps="$steps" \
		--set training.eval_every=0 --set training.checkpoint_every=0 --set output.dir="$dir"
	# The canonical CIFAR-10 files are rarely on the machine: such a config runs on the JPEG
	# copy instead (same shape and classes), and its line says so.
	if grep -q '^  dataset: cifar10$' "$cfg" && ! "$bin" data list 2>/dev/null | grep -q '^cifar10 .*[0-9]  */'; then
		set -- "$@" --set data.dataset=cifar10-jpeg
		name="$name(on-cifar10-jpeg)"
	fi
	if ! "$bin" train "$@" >"$out/$name.json" 2>"$out/$name.log"; then
		printf '%s error: %s\n' "$name" "$(grep -m1 -i 'error\|refus\|not found' "$out/$name.log" | cut -c1-160)"
		continue
	fi
	model=$(sha256sum "$dir/model.dpm" | cut -c1-16)
	summary=$(python3 -c '
import json, sys, hashlib
d = json.load(open(sys.argv[1]))
for k in ("output_dir", "config_file", "model_file", "blas"):
    d.pop(k, None)
print(hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16])
' "$dir/summary.json")
	printf '%s model %s summary %s\n' "$name" "$model" "$summary"
done
