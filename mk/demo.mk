# mk/demo.mk — `make demo` (the README's first command) and `make bench` (tracing overhead,
# not a test). Both need root and the sample-service builds. `make demo DEMO_OUT=DIR` writes the
# reports into DIR instead of build/demo (also DEMO_LINE, DEMO_SECONDS, DEMO_RPS: scripts/demo.sh).
demo: build-all
	$(Q)scripts/demo.sh

bench: build-all
	$(Q)scripts/bench-trace.sh
