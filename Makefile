# tdmap: the two commands that matter are `make demo` and `make test`.
CARGO ?= cargo
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: setup build demo test lint unit bench clean

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

## Everything CI checks.
test: lint unit

bench: setup
	$(CARGO) build --release --workspace --benches

clean:
	$(CARGO) clean

## Simulator throughput (simulated accesses per second, one core, release build).
.PHONY: bench-sim
bench-sim: setup
	$(CARGO) bench -p tdmap-sim --bench throughput
	$(CARGO) bench -p tdmap-sim --bench policies
