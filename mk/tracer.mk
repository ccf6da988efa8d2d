# tracer/: the tokio-ebpf-trace binary (every tracer/*.c), plus the note-parser tests:
# fixtures (tests/fixtures/notes → $(BUILD)/fixtures/notes), unit tests and the fuzz target.
#   make fuzz-notes [FUZZ_TIME=600] [FUZZ_JOBS=1]   long fuzz run of the note parser
#   make fuzz-batch [FUZZ_TIME=600] [FUZZ_JOBS=1]   … of the batch decoder and the analyzer
#   make fuzz-analyzer [FUZZ_TIME=600] [FUZZ_JOBS=1] … of the analyzer fed per-event records
#   make fuzz-fdwhat [FUZZ_TIME=600] [FUZZ_JOBS=1]  … of the /proc fd, fdinfo and socket-table readers
TRACER_OBJS   += $(TRACER_C_OBJS)
# --remote-write (report/remote_write.c): libcurl (http, https) and snappy
TRACER_LIBS   += -lcurl -lsnappy
TRACER_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -I$(OBJ) $(TRACER_INC) -Ibpf -MMD -MP

# build/obj/x.o from tracer/STAGE/x.c (file names are unique across the stages)
define tracer_obj
$(OBJ)/$(notdir $(1:.c=.o)): $(1)
	$$(call msg,CC,$$@)
	$(Q)mkdir -p $$(@D)
	$(Q)$$(CC) $$(TRACER_CFLAGS) -MF $$(@:.o=.dep) -c $$< -o $$@
endef
$(foreach s,$(TRACER_SRCS),$(eval $(call tracer_obj,$(s))))

# protobuf schemas (PROTO_C, Makefile): protoc-c's C, compiled like the tracer's own files;
# every tracer object waits for the headers
$(OBJ)/%.pb-c.c $(OBJ)/%.pb-c.h: tracer/report/proto/%.proto
	$(call msg,PROTOC,$@)
	$(Q)mkdir -p $(OBJ)
	$(Q)protoc-c --c_out=$(OBJ) --proto_path=tracer/report/proto $<
$(OBJ)/%.pb-c.o: $(OBJ)/%.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(TRACER_CFLAGS) -MF $(@:.o=.dep) -c $< -o $@
TRACER_OBJS += $(PROTO_C:.c=.o)
$(TRACER_C_OBJS): | $(PROTO_C)
.SECONDARY: $(PROTO_C) $(PROTO_C:.c=.h)

$(BIN)/tokio-ebpf-trace: $(TRACER_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(TRACER_LIBS) -o $@

ALL_TARGETS += $(BIN)/tokio-ebpf-trace
# .dep, not .d: the .d files of the flat layout (before tracer/STAGE/) name sources that moved
-include $(TRACER_C_OBJS:.o=.dep)

# ---- note-parser tests: fixtures, JSON unit test, fuzz target ------------------------------
NOTES_FX   := $(BUILD)/fixtures/notes
NOTES_SRC  := tests/fixtures/notes
NOTES_CC   := $(CC) -g -Wall -Wextra -Werror -I$(NOTES_SRC)
# sys/sdt.h is in the x86_64 multiarch include dir only; it serves -m32 too
NOTES_CC32 := $(NOTES_CC) -m32 -idirafter /usr/include/x86_64-linux-gnu
OPS_SRCS   := $(NOTES_SRC)/sdt_ops.c $(NOTES_SRC)/sdt_ops_sema.c
SDT_ASM    := $(NOTES_SRC)/sdt_asm.h
MKELF      := $(NOTES_FX)/mkelf
SYNTH      := 64le 64be 32le 32be
DEFECTS    := overrun-name overrun-desc short-desc nonul-provider nonul-name nonul-args \
              trailing-bytes too-many-args bad-args site-not-exec sema-in-text sec-past-eof \
              type-rel bad-class

NOTES_FIXTURES := \
	$(addprefix $(NOTES_FX)/,ops_O0 ops_O2 ops_O2_nopie ops32_O0 ops32_O2 ops32_O2_nopie \
	  libops.so hand hand32 hand32_bad tokio_probes tokio_nop1 tokio_partial \
	  libtokioprobes.so tokio_host tokio_upstream tokio_oxide tokio_stock \
	  tokio_stock_stripped tokio_stock_noraw plain) \
	$(foreach s,$(SYNTH),$(NOTES_FX)/synth_$(s).elf $(NOTES_FX)/synth_$(s)_prelink.elf) \
	$(foreach d,$(DEFECTS),$(NOTES_FX)/bad_$(d).elf) \
	$(BUILD)/tests/json_test

ALL_TARGETS += $(NOTES_FIXTURES)

$(NOTES_FX)/ops_O0: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O0 -o $@ $(OPS_SRCS)
$(NOTES_FX)/ops_O2: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -fPIE -pie -o $@ $(OPS_SRCS)
$(NOTES_FX)/ops_O2_nopie: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -fno-pie -no-pie -o $@ $(OPS_SRCS)
$(NOTES_FX)/ops32_O0: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC32) -O0 -o $@ $(OPS_SRCS)
$(NOTES_FX)/ops32_O2: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC32) -O2 -fPIE -pie -o $@ $(OPS_SRCS)
$(NOTES_FX)/ops32_O2_nopie: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC32) -O2 -fno-pie -no-pie -o $@ $(OPS_SRCS)
$(NOTES_FX)/libops.so: $(OPS_SRCS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -fPIC -shared -DOPS_LIB -o $@ $(OPS_SRCS)
$(NOTES_FX)/hand: $(NOTES_SRC)/hand_args.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<
$(NOTES_FX)/hand32: $(NOTES_SRC)/hand_args.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC32) -O2 -o $@ $<
$(NOTES_FX)/hand32_bad: $(NOTES_SRC)/hand_args.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC32) -O2 -DBAD32 -o $@ $<
$(NOTES_FX)/tokio_probes: $(NOTES_SRC)/tokio_probes.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<
$(NOTES_FX)/tokio_nop1: $(NOTES_SRC)/tokio_probes.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -DSITE_NOP1 -o $@ $<
$(NOTES_FX)/tokio_partial: $(NOTES_SRC)/tokio_probes.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -DPARTIAL -o $@ $<
$(NOTES_FX)/libtokioprobes.so: $(NOTES_SRC)/tokio_probes.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -fPIC -shared -DTOKIO_LIB -o $@ $<
$(NOTES_FX)/tokio_host: $(NOTES_SRC)/tokio_probes.c $(NOTES_FX)/libtokioprobes.so
	$(call msg,CC,$@)
	$(Q)$(NOTES_CC) -O2 -DTOKIO_HOST -o $@ $< -L$(NOTES_FX) -ltokioprobes -Wl,-rpath,'$$ORIGIN'
$(NOTES_FX)/tokio_upstream: $(NOTES_SRC)/tokio_upstream.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<
$(NOTES_FX)/tokio_oxide: $(NOTES_SRC)/tokio_oxide.c $(SDT_ASM)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<
$(NOTES_FX)/tokio_stock: $(NOTES_SRC)/tokio_stock.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<
$(NOTES_FX)/tokio_stock_stripped: $(NOTES_FX)/tokio_stock
	$(call msg,STRIP,$@)
	$(Q)strip -o $@ $<
$(NOTES_FX)/tokio_stock_noraw: $(NOTES_SRC)/tokio_stock.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -DNO_RAW_POLL -o $@ $<
$(NOTES_FX)/plain: $(NOTES_SRC)/plain.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<

$(MKELF): $(NOTES_SRC)/mkelf.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(NOTES_CC) -O2 -o $@ $<
synth_args = --class $(if $(findstring 32,$(1)),32,64) $(if $(findstring be,$(1)),--big)
$(NOTES_FX)/synth_%_prelink.elf: $(MKELF)
	$(Q)$(MKELF) $@ $(call synth_args,$*) --prelink 0x200000
$(NOTES_FX)/synth_%.elf: $(MKELF)
	$(Q)$(MKELF) $@ $(call synth_args,$*)
$(NOTES_FX)/bad_%.elf: $(MKELF)
	$(Q)$(MKELF) $@ --defect $*

$(BUILD)/tests/json_test: tests/unit/json_test.c $(call tsrc,json.c) $(call tsrc,json.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(CFLAGS) $(WARN) $(TRACER_INC) -o $@ tests/unit/json_test.c $(call tsrc,json.c) -lm

# libFuzzer + ASan + UBSan build of the parser; seeds: every fixture (real binaries) and a
# few argument strings. The bounded run is tests/t_notes_fuzz.sh; the long one:
FUZZ_BIN   := $(BUILD)/fuzz/fuzz_notes
FUZZ_SEEDS := $(BUILD)/fuzz/seeds
FUZZ_TIME  ?= 600
FUZZ_JOBS  ?= 1
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
              -fno-omit-frame-pointer -D_GNU_SOURCE $(TRACER_INC)
ALL_TARGETS += $(FUZZ_BIN) $(FUZZ_SEEDS)/.done

$(FUZZ_BIN): tests/fuzz/fuzz_notes.c $(call tsrc,notes.c) $(call tsrc,notes.h) $(call tsrc,json.c) $(call tsrc,json.h)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_notes.c $(call tsrc,notes.c) \
	    $(call tsrc,json.c) -lelf -lz -lm

$(FUZZ_SEEDS)/.done: $(filter-out $(BUILD)/tests/json_test,$(NOTES_FIXTURES)) tests/fuzz/args.txt
	$(call msg,SEEDS,$(@D))
	$(Q)rm -rf $(@D) && mkdir -p $(@D)
	$(Q)for f in $(filter $(NOTES_FX)/%,$^); do cp $$f $(@D)/$$(basename $$f); done
	$(Q)i=0; while IFS= read -r l; do i=$$((i+1)); printf '%s' "$$l" > $(@D)/arg$$i; done < tests/fuzz/args.txt
	$(Q)touch $@

.PHONY: fuzz-notes
fuzz-notes: $(FUZZ_BIN) $(FUZZ_SEEDS)/.done
	$(Q)mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/artifacts
	$(FUZZ_BIN) -max_total_time=$(FUZZ_TIME) -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
	    -max_len=65536 -artifact_prefix=$(BUILD)/fuzz/artifacts/ -print_final_stats=1 \
	    $(BUILD)/fuzz/corpus $(FUZZ_SEEDS)
	@echo "crashes (copy each into tests/fixtures/notes/crashers/): $$(ls $(BUILD)/fuzz/artifacts | wc -l)"

# The batch decoder and the analyzer it feeds, fuzzed the same way (tests/fuzz/fuzz_batch.c: the
# traced process's side of batched capture comes from the input; seeds from batch_seeds.py).
# The bounded run is tests/t_batch_fuzz.sh; the long one: make fuzz-batch [FUZZ_TIME=600]
FUZZ_BATCH       := $(BUILD)/fuzz/fuzz_batch
FUZZ_BATCH_SEEDS := $(BUILD)/fuzz/batch-seeds
FUZZ_BATCH_SRCS  := $(call tsrc,batch.c analyzer.c starve.c locks.c htab.c uring.c hist.c)
ALL_TARGETS += $(FUZZ_BATCH) $(FUZZ_BATCH_SEEDS)/.done

$(FUZZ_BATCH): tests/fuzz/fuzz_batch.c $(FUZZ_BATCH_SRCS) $(wildcard tracer/*/*.h) bpf/events.h bpf/probes.def
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(FUZZ_FLAGS) -Ibpf -o $@ tests/fuzz/fuzz_batch.c $(FUZZ_BATCH_SRCS) -lm

$(FUZZ_BATCH_SEEDS)/.done: tests/fuzz/batch_seeds.py bpf/events.h
	$(call msg,SEEDS,$(@D))
	$(Q)rm -rf $(@D) && python3 tests/fuzz/batch_seeds.py $(@D) && touch $@

.PHONY: fuzz-batch
fuzz-batch: $(FUZZ_BATCH) $(FUZZ_BATCH_SEEDS)/.done
	$(Q)mkdir -p $(BUILD)/fuzz/batch-corpus $(BUILD)/fuzz/artifacts
	$(FUZZ_BATCH) -max_total_time=$(FUZZ_TIME) -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
	    -max_len=65536 -rss_limit_mb=2048 -artifact_prefix=$(BUILD)/fuzz/artifacts/ -print_final_stats=1 \
	    $(BUILD)/fuzz/batch-corpus $(FUZZ_BATCH_SEEDS) tests/fixtures/batch/crashers
	@echo "crashes (copy each into tests/fixtures/batch/crashers/): $$(ls $(BUILD)/fuzz/artifacts | wc -l)"

# The analyzer fed per-event records of every type (tests/fuzz/fuzz_analyzer.c); no seeds needed
# (every input is a script of records); tests/t_batch_fuzz.sh runs it too; make fuzz-analyzer
FUZZ_AN      := $(BUILD)/fuzz/fuzz_analyzer
FUZZ_AN_SRCS := $(call tsrc,analyzer.c starve.c locks.c htab.c uring.c hist.c)
ALL_TARGETS += $(FUZZ_AN)

$(FUZZ_AN): tests/fuzz/fuzz_analyzer.c $(FUZZ_AN_SRCS) $(wildcard tracer/*/*.h) bpf/events.h bpf/probes.def
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(FUZZ_FLAGS) -Ibpf -o $@ tests/fuzz/fuzz_analyzer.c $(FUZZ_AN_SRCS) -lm

# What the tracer reads of the process's /proc to name an epoll token's fd (fdinfo, fd links,
# socket tables), laid out from the input (tests/fuzz/fuzz_fdwhat.c; seeds: this machine's own
# /proc, tests/fuzz/fdwhat_seeds.py); tests/t_fdwhat_fuzz.sh, make fuzz-fdwhat
FUZZ_FDW       := $(BUILD)/fuzz/fuzz_fdwhat
FUZZ_FDW_SEEDS := $(BUILD)/fuzz/fdwhat-seeds
ALL_TARGETS += $(FUZZ_FDW) $(FUZZ_FDW_SEEDS)/.done

$(FUZZ_FDW): tests/fuzz/fuzz_fdwhat.c $(call tsrc,fdwhat.c fdwhat.h)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_fdwhat.c $(call tsrc,fdwhat.c)

$(FUZZ_FDW_SEEDS)/.done: tests/fuzz/fdwhat_seeds.py
	$(call msg,SEEDS,$(FUZZ_FDW_SEEDS))
	$(Q)rm -rf $(FUZZ_FDW_SEEDS) && python3 $< $(FUZZ_FDW_SEEDS) && touch $@

.PHONY: fuzz-fdwhat
fuzz-fdwhat: $(FUZZ_FDW) $(FUZZ_FDW_SEEDS)/.done
	$(Q)mkdir -p $(BUILD)/fuzz/fdwhat-corpus $(BUILD)/fuzz/artifacts
	$(FUZZ_FDW) -max_total_time=$(FUZZ_TIME) -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
	    -max_len=65536 -rss_limit_mb=2048 -artifact_prefix=$(BUILD)/fuzz/artifacts/ -print_final_stats=1 \
	    $(BUILD)/fuzz/fdwhat-corpus $(FUZZ_FDW_SEEDS)

.PHONY: fuzz-analyzer
fuzz-analyzer: $(FUZZ_AN)
	$(Q)mkdir -p $(BUILD)/fuzz/analyzer-corpus $(BUILD)/fuzz/artifacts
	$(FUZZ_AN) -max_total_time=$(FUZZ_TIME) -jobs=$(FUZZ_JOBS) -workers=$(FUZZ_JOBS) \
	    -max_len=65536 -rss_limit_mb=2048 -artifact_prefix=$(BUILD)/fuzz/artifacts/ -print_final_stats=1 \
	    $(BUILD)/fuzz/analyzer-corpus tests/fixtures/analyzer/crashers

# ---- stack symbolizer unit test (tests/t_why_symbols.sh) -----------------------------------
# It symbolizes its own code, so -O1 -g -fno-omit-frame-pointer whatever CFLAGS say; the two
# helper libraries (the same source, -DSTACKSYM_FP_LIB) are a C module with and without frame
# pointers: the test binary itself links libiberty.a, built without them.
SS_TEST    := $(BUILD)/tests/stacksym_test
SS_TEST_CC := $(CC) -O1 -g $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf
ALL_TARGETS += $(SS_TEST) $(BUILD)/tests/libstacksym_fp.so $(BUILD)/tests/libstacksym_nofp.so

$(SS_TEST): tests/unit/stacksym_test.c tests/unit/check.h $(call tsrc,stacksym.c) $(call tsrc,stacksym.h) \
    $(call tsrc,symbols.c) $(call tsrc,symbols.h) $(call tsrc,seterr.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(SS_TEST_CC) -fno-omit-frame-pointer -o $@ tests/unit/stacksym_test.c \
	    $(call tsrc,stacksym.c) $(call tsrc,symbols.c) -ldw -lelf -lz -liberty
$(BUILD)/tests/libstacksym_fp.so: tests/unit/stacksym_test.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(SS_TEST_CC) -fno-omit-frame-pointer -DSTACKSYM_FP_LIB -shared -fPIC -o $@ $<
$(BUILD)/tests/libstacksym_nofp.so: tests/unit/stacksym_test.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(SS_TEST_CC) -fomit-frame-pointer -DSTACKSYM_FP_LIB -shared -fPIC -o $@ $<
