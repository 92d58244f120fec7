# LivePush: the two commands of the README, and the benchmarks.
#   make run    install what is missing, build in release mode, run the main job
#   make test   install what is missing, start the private test environment, run every test
#   make bench  run every benchmark (prints figures; asserts nothing about speed)
SHELL := /bin/bash
SWIFT ?= swift
RELEASE_BIN = .build/release

.PHONY: all bootstrap build run test bench fuzz clean

all: build

bootstrap:
	@tools/bootstrap

build: bootstrap
	$(SWIFT) build -c release

# The pusher (livepush screen / push) is not built yet, so the main job is the machine check.
# Without a desktop (no DISPLAY) it runs against the private environment of tools/testenv.
run: build
	@if [ -n "$${DISPLAY:-}" ]; then \
	    $(RELEASE_BIN)/livepush doctor; \
	else \
	    echo "make run: no DISPLAY; checking against a private Xvfb, nginx-rtmp and PipeWire (tools/testenv)"; \
	    tools/testenv run -- $(RELEASE_BIN)/livepush doctor; \
	fi
	@echo "make run: screen capture, recording and RTMP push are not built yet; 'livepush doctor' is what runs today."

# Build first, so that a compile error is reported without the environment's noise;
# tools/testenv stops the environment however the tests end.
test: bootstrap
	$(SWIFT) build --build-tests
	tools/testenv run -- $(SWIFT) test
	tools/fuzz/run $(FUZZ_SECONDS)

# The Capture Link decoder under libFuzzer + AddressSanitizer; `make test` runs it briefly.
# A long run: make fuzz FUZZ_SECONDS=3600
FUZZ_SECONDS ?= 20
fuzz:
	tools/fuzz/run $(FUZZ_SECONDS)

# Each benchmark prints one line per case (the median of its runs); the line formats are a
# contract that tools read (docs/benchmarks.md).
bench: build
	$(RELEASE_BIN)/livepush-bench link --runs 3

clean:
	rm -rf .build
