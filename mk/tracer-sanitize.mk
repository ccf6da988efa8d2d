# The tracer, its unit tests and the replay tool built once more with ASan + UBSan under
# $(BUILD)/asan: any memory error or undefined behaviour aborts the run that meets it
# (tests/t_sanitizers.sh runs them and a few integration captures).
SAN       := $(BUILD)/asan
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_TRACER_OBJS := $(addprefix $(SAN)/obj/,$(notdir $(TRACER_SRCS:.c=.o)))

# $(SAN)/obj/x.o from tracer/STAGE/x.c, after the plain build's x.o (its generated headers exist)
define san_obj
$(SAN)/obj/$(notdir $(1:.c=.o)): $(1) $(OBJ)/$(notdir $(1:.c=.o))
	$$(call msg,ASAN-CC,$$@)
	$(Q)mkdir -p $$(@D)
	$(Q)$$(CC) $$(TRACER_CFLAGS) $$(SAN_FLAGS) -MF $$(@:.o=.dep) -c $$< -o $$@
endef
$(foreach s,$(TRACER_SRCS),$(eval $(call san_obj,$(s))))
SAN_TRACER_OBJS += $(patsubst $(OBJ)/%.c,$(SAN)/obj/%.o,$(PROTO_C))
$(SAN)/obj/%.pb-c.o: $(OBJ)/%.pb-c.c
	$(call msg,ASAN-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TRACER_CFLAGS) $(SAN_FLAGS) -MF $(@:.o=.dep) -c $< -o $@
-include $(SAN_TRACER_OBJS:.o=.dep)

$(SAN)/tokio-ebpf-trace: $(SAN_TRACER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(SAN_FLAGS) $(LDFLAGS) $^ $(TRACER_LIBS) -o $@

$(SAN)/unit_trace: $(FIXTURES)/unit_trace
	$(call msg,ASAN-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) $(SAN_FLAGS) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -I$(OBJ) -Ibpf -o $@ \
	    $(FIXTURE_SRC)/unit_trace.c $(UNIT_TRACE_SRCS) -lm $(TRACER_LIBS)

$(SAN)/batch_test: $(BATCH_TEST)
	$(call msg,ASAN-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(SAN_FLAGS) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ \
	    tests/unit/batch_test.c $(call tsrc,batch.c)

SAN_REPLAY_SRCS := tests/unit/batch_replay.c $(call tsrc,batch.c analyzer.c starve.c locks.c htab.c uring.c hist.c)
$(SAN)/batch_replay: $(BATCH_REPLAY)
	$(call msg,ASAN-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(SAN_FLAGS) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $(SAN_REPLAY_SRCS)

$(SAN)/flight_test: $(FLIGHT_TEST)
	$(call msg,ASAN-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) $(SAN_FLAGS) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ \
	    tests/unit/flight_test.c $(FLIGHT_TEST_SRCS) -lm

ALL_TARGETS += $(SAN)/tokio-ebpf-trace $(SAN)/unit_trace $(SAN)/batch_test $(SAN)/batch_replay \
	       $(SAN)/flight_test
