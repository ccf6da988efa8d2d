# The kit's release matrix: every Tokio release with a source (../shared/tokio-src + Debian's),
# patched, built with and without the cfg, traced (tests/t_kit_matrix.sh). `make test` runs it on
# the releases that together take every variant of every hook point (probes-patch/hooks.py
# cover; three of them compared with stock, KIT_MATRIX=cover all seven); this runs all of it on all 70 (builds kept under .cache/kit-matrix); KIT_MATRIX=latest
# make kit-matrix: the newest of each minor line.
.PHONY: kit-matrix
kit-matrix: build-all
	$(Q)KIT_MATRIX=$${KIT_MATRIX:-all} TEST_TIMEOUT=10800 tests/run.sh t_kit_matrix
