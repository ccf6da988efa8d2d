# make tls-matrix: the locator of Tokio's thread-local task id (tracer/discover/tlsctx.c, `check`'s
# task_id_slot) checked by gdb against the DWARF of a small program built on a Tokio release at
# each end of every change of CONTEXT's layout (tests/tls_matrix.sh; TLS_MATRIX="V …" picks
# releases). Not in make test: each release is a ~30-40 s cargo build (kept under
# .cache/tls-matrix); make test's t_tls_taskid covers the three Debian lines.
.PHONY: tls-matrix
tls-matrix: build-all
	$(Q)tests/tls_matrix.sh
