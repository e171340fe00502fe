# segflake: one command for every test, one for the demo.
#   make test   - every test suite (Rust, C, Node, WASM, Python, the cross-built
#                 platforms, real-database scenarios), installing what it needs
#   make demo   - the CLI on the embedded defaults
#   make bench  - the benchmark tables beside peer libraries
#   make test-rust (or test-c, test-node, ...) - one suite
SHELL := /bin/bash
SUITES := platforms rust c node wasm python scenarios

.PHONY: test demo bench

test:
	bash scripts/test-all.sh $(SUITES)

test-%:
	bash scripts/test-all.sh $*

demo:
	bash scripts/demo.sh

bench:
	bash bench/run-all.sh
