# dptrain: the two commands a new user needs are `make demo` and `make test` (README.md).
#
# Both install what is missing first: on Debian as root, libopenblas-dev (fast BLAS),
# libdnnl-dev (oneDNN, for model.engine dnnl) and dataset-fashion-mnist (the real dataset that works offline), and for the tests only slurm-wlm
# and munge (the single-node Slurm cluster that the sweep test starts on 127.0.0.1) and
# openmpi-bin and libopenmpi-dev (the 2-rank data-parallel tests on 127.0.0.1); Go modules
# through the module proxy, and MNIST the same way (build fetches it). Without root, or without the packages, the build falls back to the pure-Go BLAS and
# tests that need a dataset say how to get it and skip.

SHELL   := /bin/bash
GO      ?= go
BIN     := bin/dptrain
# SHARED is the data beside the project (shared/data: the MNIST test set, the CIFAR-10 JPEG
# copy); tests find it through DPTRAIN_SHARED and skip, naming what is missing, without it.
SHARED  ?= $(abspath ../shared)
# Debian's interpreter, where python3-torch installs PyTorch (a pyenv shim may shadow it).
PYTHON  ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
export DPTRAIN_SHARED := $(SHARED)

# OpenBLAS is used when a C compiler can link against it; `make BLAS=gonum ...` forces pure Go.
BLAS ?= $(shell printf 'int main(void){return 0;}' | cc -x c - -lopenblas -o /dev/null >/dev/null 2>&1 && echo openblas || echo gonum)
# MPI (data-parallel training under mpirun or srun) is built in when Debian's libopenmpi-dev is
# installed; `make MPI= ...` leaves it out.
MPI ?= $(shell pkg-config --exists ompi 2>/dev/null && echo mpi)
# oneDNN (model.engine dnnl: the direct executor's convolutions on oneDNN) is built in when
# Debian's libdnnl-dev is installed; `make DNNL= ...` leaves it out.
DNNL ?= $(shell printf '\043include <oneapi/dnnl/dnnl.h>\nint main(void){return 0;}' | cc -x c - -ldnnl -o /dev/null >/dev/null 2>&1 && echo dnnl)
TAGLIST := $(strip $(filter openblas,$(BLAS)) $(MPI) $(DNNL))
ifneq ($(TAGLIST),)
TAGS := -tags "$(TAGLIST)"
else
TAGS :=
endif
# The tests add the integration tag: the end-to-end tests that start a Slurm cluster or MPI
# jobs, or train on real datasets, are built only with it (go test -tags integration), and each
# skips, naming the install command, where what it needs is missing.
TEST_TAGS := -tags "$(strip $(TAGLIST) integration)"

.PHONY: all deps build test test-only demo bench lint clean fuzz

all: build

# DEBS are the Debian packages deps installs; the tests add the Slurm cluster's.
DEBS ?= libopenblas-dev libdnnl-dev dataset-fashion-mnist

deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		missing=""; \
		for p in $(DEBS); do \
			dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
		done; \
		if [ -n "$$missing" ]; then \
			echo "deps: installing Debian packages:$$missing"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null) \
				|| echo "deps: apt-get failed; continuing with what is installed (tests that need the rest say so and skip)"; \
		fi; \
	else \
		dpkg -s libopenblas-dev >/dev/null 2>&1 || echo "deps: not root: using pure-Go BLAS (for speed: sudo apt-get install libopenblas-dev)"; \
		[ -d /usr/share/datasets/fashion-mnist ] || echo "deps: Fashion-MNIST not found (sudo apt-get install dataset-fashion-mnist, or: dptrain data download --dataset fashion-mnist)"; \
	fi
	@$(GO) mod download

# build then fetches MNIST into the data directory ($$DPTRAIN_DATA or the user cache) when it is
# not there: through the Go module proxy (the go command), else from its mirror; and copies the
# CIFAR-10 JPEG copy beside the project there, checksum checked. Best effort, never failing the
# build.
CIFAR_JPEG := $(SHARED)/data/cifar10-jpeg/cifar10-jpeg.tar.gz
build: deps
	@$(MAKE) --no-print-directory $(BIN)
	@out=$$(./$(BIN) data download --dataset mnist 2>&1) || \
		echo "build: MNIST not fetched (best effort; tests that need it skip): $$out"
	@if [ -f "$(CIFAR_JPEG)" ]; then \
		out=$$(./$(BIN) data download --dataset cifar10-jpeg --from "$(CIFAR_JPEG)" 2>&1) || \
		echo "build: cifar10-jpeg not copied (best effort): $$out"; \
	fi

$(BIN): FORCE
	$(GO) build $(TAGS) -o $(BIN) ./cmd/dptrain
	@./$(BIN) version

FORCE:

# test re-enters make after build so that BLAS (and so TAGS) is decided after deps installed
# OpenBLAS: a fresh machine's first `make test` tests the same build that `make build` made.
test:
	@$(MAKE) --no-print-directory build DEBS="$(DEBS) slurm-wlm munge openmpi-bin libopenmpi-dev"
	@$(MAKE) --no-print-directory test-only

# SLOT_TESTS compare every example's contribution with the example alone, bit for bit; test-only
# runs them on the pure-Go BLAS too when the main build is OpenBLAS's, so both builds are held to it.
SLOT_TESTS := -run 'TestEachExampleAloneBitForBit|TestSlotAmplification|TestShardedContributionsBitIdentical|TestCopiesAloneBitForBit|SlotInvariant' \
	./models ./models/lifted ./internal/kernels ./internal/mpi ./train/internal/augment ./algorithm/dpmbcd/nmf

# Each package's tests have a timeout from its measured time, with a wide margin for a 2-core
# machine with two CPU-bound jobs beside it. The whole of `make test` from a fresh clone, quiet
# and then beside two CPU-bound jobs: cmd/dptrain 297 and 447 s (its cluster tests 195 and
# 264 s), train 247 and 364 s, models 205 and 297 s, cmd/dptrain/internal/sweep 42 and 95 s,
# every other package under 30 s; 5 min 18 s and 8 min 3 s in all.
# cmd/dptrain's tests run one after another, and its cluster tests (Slurm, MPI: CLUSTER) mostly
# wait for daemons, so they run as a second test binary of the package, beside the rest (HEAVY),
# the medium and then the light packages, and the per-example bit tests on the pure-Go BLAS: the
# wall time is then about that of the longest package, train.
MODULE         := github.com/dptrain/dptrain
HEAVY          := $(MODULE)/cmd/dptrain $(MODULE)/train
MEDIUM         := $(MODULE)/models $(MODULE)/cmd/dptrain/internal/sweep
CLUSTER        := ^Test(Slurm|MPI)
HEAVY_TIMEOUT  ?= 25m
MEDIUM_TIMEOUT ?= 12m
LIGHT_TIMEOUT  ?= 3m

# go test's output goes through internal/cmd/testsummary: go test's own lines, then every
# skipped test with its reason (no ../shared, no MPI, not root...) and a closing count. The
# invocations write to one pipe (test2json's lines are short enough to stay whole) and the
# recipe fails when any of them does. The pure-Go bit tests write to a file, summarised after.
test-only:
	$(GO) vet $(TEST_TAGS) ./...
	@set -o pipefail; slot=$$(mktemp); slotpid=; \
	if [ "$(BLAS)" = openblas ]; then \
		$(GO) test -count=1 -timeout 10m -json $(SLOT_TESTS) > $$slot 2>&1 & slotpid=$$!; \
	fi; \
	{ \
		$(GO) test $(TEST_TAGS) -count=1 -timeout $(HEAVY_TIMEOUT) -json -skip '$(CLUSTER)' $(HEAVY) & heavy=$$!; \
		$(GO) test $(TEST_TAGS) -count=1 -timeout $(HEAVY_TIMEOUT) -json -run '$(CLUSTER)' $(MODULE)/cmd/dptrain & cluster=$$!; \
		$(GO) test $(TEST_TAGS) -count=1 -timeout $(MEDIUM_TIMEOUT) -json $(MEDIUM); medium=$$?; \
		$(GO) test $(TEST_TAGS) -count=1 -timeout $(LIGHT_TIMEOUT) -json $(filter-out $(HEAVY) $(MEDIUM),$(shell $(GO) list ./...)); light=$$?; \
		wait $$heavy; heavy=$$?; wait $$cluster; cluster=$$?; \
		[ $$heavy = 0 ] && [ $$cluster = 0 ] && [ $$medium = 0 ] && [ $$light = 0 ]; \
	} | $(GO) run ./internal/cmd/testsummary; status=$$?; \
	if [ -n "$$slotpid" ]; then \
		wait $$slotpid; s=$$?; \
		echo "test: the per-example bit tests on the pure-Go BLAS"; \
		$(GO) run ./internal/cmd/testsummary < $$slot && [ $$s = 0 ] || status=1; \
	fi; \
	rm -f $$slot; exit $$status

# The demo trains configs/quickstart.yaml on Fashion-MNIST; without the dataset (no root to
# install it, no copy in $$DPTRAIN_DATA) it says how to get it and trains on the synthetic
# mixture instead, so that it always runs offline.
demo: build
	@rm -rf runs/demo
	@if ./$(BIN) data inspect --dataset fashion-mnist >/dev/null 2>&1; then \
		./$(BIN) train --config configs/quickstart.yaml --set output.dir=runs/demo; \
	else \
		echo "demo: Fashion-MNIST not found (as root: apt-get install dataset-fashion-mnist; or: $(BIN) data download --dataset fashion-mnist)"; \
		echo "demo: training on the synthetic Gaussian mixture instead"; \
		./$(BIN) train --config configs/quickstart.yaml --set output.dir=runs/demo --set data.dataset=synthetic-mixture --set data.normalize=none; \
	fi

bench: build
	$(GO) test $(TAGS) -run '^$$' -bench . -benchmem ./...
	./$(BIN) bench throughput --model mlp --batch 256
	./$(BIN) bench throughput --model cnn --batch 256
	@echo "bench: the same CNN step on the gorgonia graph (model.engine: graph), the path before the direct executor"
	./$(BIN) bench throughput --model cnn --batch 256 --engine graph --no-memory
	@echo "bench: dptrain against PyTorch's non-private step (and Opacus when importable) on 1 and 2 cores, interleaved rounds (python3-torch)"
	$(PYTHON) benchmarks/torch_compare.py --dptrain $(BIN) --cores 1 --cores 2 --shape cnn:256:5:10 --shape cnn:2048:3:5 \
		--shape mlp:256:5:10 --shape resnet20-gn:64:3:3 --shape resnet20-gn:256:2:2 --memory
	@if [ -n "$(DNNL)" ]; then \
		echo "bench: the conv steps on engine direct (im2col + OpenBLAS), the path without oneDNN"; \
		./$(BIN) bench throughput --model cnn --batch 256 --engine direct --no-memory && \
		./$(BIN) bench throughput --model resnet20-gn --batch 64 --engine direct --no-memory; \
	fi
	@if [ "$(BLAS)" = openblas ]; then \
		echo "bench: the same with the pure-Go BLAS"; \
		$(GO) build -o bin/dptrain-gonum ./cmd/dptrain && \
		bin/dptrain-gonum bench throughput --model mlp --batch 256 && \
		bin/dptrain-gonum bench throughput --model cnn --batch 256; \
	fi

# Fuzz every parser and the accountants' inputs for FUZZTIME each (Go's native fuzzing; one
# target at a time, as go test requires). A crasher is saved under the package's testdata/fuzz
# and then runs with the ordinary tests as a regression case: commit it with the fix.
FUZZTIME ?= 60s
FUZZ_TARGETS := ./data:FuzzDecodeIDX ./data:FuzzDecodeCIFAR ./data:FuzzCIFARArchive \
	./train/config:FuzzParseConfig ./train/rundir:FuzzDecodeCheckpoint ./models:FuzzReadParams \
	./accounting:FuzzStepValidate ./accounting:FuzzDescribe \
	./accounting/rdp:FuzzSampledGaussian ./accounting/pld:FuzzCompose \
	.:FuzzReadCheckpoint ./data:FuzzSamplerState

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz: $$name in $$pkg for $(FUZZTIME)"; \
		$(GO) test $(TAGS) -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(TEST_TAGS) ./...

clean:
	rm -rf bin
