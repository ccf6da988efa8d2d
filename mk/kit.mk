# The kit's release matrix: every Tokio release with a source (../shared/tokio-src + Debian's),
# patched, built with and without the cfg, traced (tests/t_kit_matrix.sh). `make test` runs it on
# the newest release of each minor line; this runs all 70 (builds kept under .cache/kit-matrix).
.PHONY: kit-matrix
kit-matrix: build-all
	$(Q)KIT_MATRIX=all TEST_TIMEOUT=10800 tests/run.sh t_kit_matrix
