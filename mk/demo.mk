# mk/demo.mk — `make demo` (the README's first command) and `make bench` (tracing overhead,
# not a test). Both need root and the sample-service builds.
demo: build-all
	$(Q)scripts/demo.sh

bench: build-all
	$(Q)scripts/bench-trace.sh
