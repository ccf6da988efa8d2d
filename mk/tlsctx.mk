# make tls-matrix: the locator of Tokio's thread-local task id (tracer/discover/tlsctx.c, `check`'s
# task_id_slot) checked by gdb against the DWARF of a small program built on a Tokio release at
# each end of every change of CONTEXT's layout (tests/tls_matrix.sh; TLS_MATRIX="V …" picks
# releases). Not in make test: each release is a ~30-40 s cargo build (kept under
# .cache/tls-matrix); make test's t_tls_taskid covers the three Debian lines.
.PHONY: tls-matrix
tls-matrix: build-all
	$(Q)tests/tls_matrix.sh

# fake_context*: a C++ stand-in for Tokio's CONTEXT (tests/fixtures/tls/fake_context.cc, which
# prints the field's real offset from the thread pointer) for t_tls_taskid: with and without
# DWARF, one-word and tagged Option<Id>, an accessor that stores elsewhere than the DWARF's
# field, and one whose accessor symbol is gone (DWARF alone).
FAKE_CTX_SRC := tests/fixtures/tls/fake_context.cc
FAKE_CTX_FLAGS := -O2 -Wall -Wextra -Werror
FAKE_CTX := $(BUILD)/fixtures/fake_context $(BUILD)/fixtures/fake_context_tagged $(BUILD)/fixtures/fake_context_nodwarf \
            $(BUILD)/fixtures/fake_context_tagged_nodwarf $(BUILD)/fixtures/fake_context_elsewhere \
            $(BUILD)/fixtures/fake_context_nosym
ALL_TARGETS += $(FAKE_CTX)

fake_ctx_defs = $(if $(findstring tagged,$(1)),-DTAGGED) $(if $(findstring elsewhere,$(1)),-DSTORE_ELSEWHERE) \
                $(if $(findstring nodwarf,$(1)),,-g)

$(filter-out %_nosym,$(FAKE_CTX)): $(BUILD)/fixtures/fake_context%: $(FAKE_CTX_SRC)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D) && $(CXX) $(FAKE_CTX_FLAGS) $(call fake_ctx_defs,$(notdir $@)) -o $@ $<

$(BUILD)/fixtures/fake_context_nosym: $(BUILD)/fixtures/fake_context
	$(call msg,OBJCOPY,$@)
	$(Q)objcopy --strip-symbol=_ZN5tokio7runtime7context19set_current_task_idEm $< $@
