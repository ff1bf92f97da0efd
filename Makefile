# tdmap: the two commands that matter are `make demo` and `make test`.
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup build demo test lint unit vm-test bench fuzz-trace clean workloads bench-trace

setup:
	bash scripts/setup.sh

build: setup
	$(CARGO) build --release

## The main job on a bundled default.
demo: build
	@echo "== tdmap topo (this machine)"
	./target/release/tdmap topo
	@echo
	@echo "== tdmap topo --machine xeon-x7550-4s (a preset of the kMAF paper's machine)"
	./target/release/tdmap topo --machine xeon-x7550-4s

lint: setup
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit: setup
	$(CARGO) test --workspace

## Boots 2-node and 4-node QEMU (TCG) guests and tests tdmap and the sys layer inside
## (tests/vm); about a minute on 2 cores.
vm-test: setup
	$(CARGO) build -p tdmap --bin tdmap
	$(CARGO) build -p tdmap-sys --example numa_check
	bash tests/vm/test.sh

## Everything CI checks.
test: lint unit vm-test

bench: setup
	$(CARGO) build --release --workspace --benches
	$(CARGO) bench -p tdmap-sharing --bench model
	$(CARGO) bench -p tdmap-map --bench mapping

## Long fuzzing of the trace reader (TDMAP_FUZZ_CASES cases per property).
fuzz-trace: setup
	TDMAP_FUZZ_CASES=$${TDMAP_FUZZ_CASES:-100000} $(CARGO) test --release -p tdmap-trace --test fuzz

## Workloads with known sharing: gcc, clang and `tdmap cc` builds under workloads/build.
workloads: setup
	$(CARGO) build --release -p tdmap -p tdmap-rt
	$(MAKE) -C workloads all tdmap TDMAP=$(CURDIR)/target/release/tdmap

## Overhead of `tdmap trace` against gcc -O2 (about 5 minutes on 2 cores).
bench-trace: setup
	bash bench/trace.sh

clean:
	$(CARGO) clean

## Simulator throughput (simulated accesses per second, one core, release build).
.PHONY: bench-sim
bench-sim: setup
	$(CARGO) bench -p tdmap-sim --bench throughput
	$(CARGO) bench -p tdmap-sim --bench policies

## The simulated gain table of every workload under every policy on xeon-x7550-4s, and
## the replay throughput (about 2 minutes on 2 cores; figures are SIMULATED).
.PHONY: bench-sim-workloads
bench-sim-workloads: setup
	bash bench/sim_workloads.sh
