# mk/fallback.mk — the uprobe fallback (stock Tokio, no USDT notes): libraries of tracer/discover/symbols.c
# (libdw for DWARF type names, libiberty's Rust demangler) and the symbol-table inspector the
# tests use (build/tests/fallback_symbols: what the fallback finds in a binary, as JSON).
TRACER_LIBS += -ldw -liberty

FALLBACK_SYMS := $(BUILD)/tests/fallback_symbols
ALL_TARGETS   += $(FALLBACK_SYMS)

$(FALLBACK_SYMS): tests/unit/fallback_symbols.c $(call tsrc,symbols.c symbols.h seterr.h tokio_fns.def) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ \
	    tests/unit/fallback_symbols.c $(call tsrc,symbols.c) -lelf -ldw -liberty

$(OBJ)/fallback.o: $(OBJ)/tokio_uprobe.skel.h bpf/events.h
$(OBJ)/sampler.o: $(OBJ)/tokio_uprobe.skel.h bpf/events.h
