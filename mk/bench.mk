# Benchmarks (not tests): figures as ratios measured side by side in one run.
bench-probes: build-all
	$(Q)scripts/bench-probes.sh
