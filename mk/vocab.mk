# The probe vocabulary for the shell: build/tet-vocab.sh from bpf/probes.def,
# tracer/discover/tokio_fns.def, tracer/cli/exits.def and tracer/analyze/{findings,thresholds}.def
# (scripts/gen-vocab.c);
# scripts/tet-vocab.sh is its committed copy, which the kit's scripts and the tests source
# (tests/t_vocab.sh: the two are the same). `make vocab` refreshes the copy.
VOCAB_SH := $(BUILD)/tet-vocab.sh
ALL_TARGETS += $(VOCAB_SH)
$(BUILD)/gen-vocab: scripts/gen-vocab.c bpf/probes.def tracer/discover/tokio_fns.def tracer/cli/exits.def \
                   tracer/analyze/findings.def tracer/analyze/thresholds.def
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(WARN) -Ibpf -Itracer/discover -Itracer/cli -Itracer/analyze -o $@ $<
$(VOCAB_SH): $(BUILD)/gen-vocab
	$(call msg,GEN,$@)
	$(Q)$< > $@.tmp && mv $@.tmp $@

.PHONY: vocab
vocab: $(VOCAB_SH)
	$(Q)cp $(VOCAB_SH) scripts/tet-vocab.sh
