# Benchmarks (not tests): figures as ratios measured side by side in one run.
bench-probes: build-all
	$(Q)scripts/bench-probes.sh

# The flight recorder left running 10 minutes under load (SOAK_SECS=600): RSS, CPU per event.
.PHONY: soak-flight
soak-flight: build-all
	$(Q)scripts/soak-flight.sh
