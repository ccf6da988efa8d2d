# tracer/: the tokio-ebpf-trace binary (every tracer/*.c), plus the note-parser tests:
# fixtures (tests/fixtures/notes → $(BUILD)/fixtures/notes), unit tests and the fuzz target.
#   make fuzz-notes [FUZZ_TIME=600] [FUZZ_JOBS=1]   long fuzz run of the note parser
TRACER_SRCS   := $(sort $(wildcard tracer/*.c))
TRACER_C_OBJS := $(patsubst tracer/%.c,$(OBJ)/%.o,$(TRACER_SRCS))
TRACER_OBJS   += $(TRACER_C_OBJS)
TRACER_CFLAGS := $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -I$(OBJ) -Itracer -Ibpf -MMD -MP

$(TRACER_C_OBJS): $(OBJ)/%.o: tracer/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TRACER_CFLAGS) -c $< -o $@

$(BIN)/tokio-ebpf-trace: $(TRACER_OBJS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $(filter %.o,$^) $(TRACER_LIBS) -o $@

ALL_TARGETS += $(BIN)/tokio-ebpf-trace
-include $(TRACER_C_OBJS:.o=.d)
