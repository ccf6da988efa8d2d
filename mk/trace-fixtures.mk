# mk/trace-fixtures.mk — C stand-ins for Tokio processes, used by tests/t_trace_*.sh.
#   fake_tokio     the probes linked into the executable
#   fake_tokio_so  the same scenario with the probes in a shared library (libfake_rt.so)
#   fake_tokio_nop5  the scenario with 5-byte nop sites (as the Rust patch emits them)
#   stock_like     Tokio symbols, no probes (what a stock Tokio binary looks like)
#   batch_badrate  tokio:event_batch, but 3 tokio:sample_rate sites instead of 16
#   hostile        the probes used against the tracer, one scenario per run (t_hostile);
#                  hostile_batch the same with tokio:event_batch (batched capture)
#   unit_trace     unit tests of the analyzer, histograms, durations, report (no BPF)
#   stallmon       a witness of machine stalls (a SCHED_FIFO thread per CPU), for the tests that
#                  excuse a healthy site's lone long poll with one (tests/stall_excuse.py)
FIXTURES := $(BUILD)/fixtures
FIXTURE_CFLAGS := -O2 -g -pthread $(WARN) -Itests/fixtures/trace
FIXTURE_SRC := tests/fixtures/trace

ALL_TARGETS += $(FIXTURES)/fake_tokio $(FIXTURES)/fake_tokio_so $(FIXTURES)/libfake_rt.so \
               $(FIXTURES)/stock_like $(FIXTURES)/unit_trace $(FIXTURES)/fake_tokio_nop5 \
               $(FIXTURES)/batch_badrate $(FIXTURES)/stallmon $(FIXTURES)/hostile $(FIXTURES)/hostile_batch

$(FIXTURES)/fake_tokio: $(FIXTURE_SRC)/fake_tokio.c $(FIXTURE_SRC)/fixture_main.h $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h $(FIXTURE_SRC)/fake_workers.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $(FIXTURE_SRC)/fake_tokio.c $(FIXTURE_SRC)/fake_rt.c

$(FIXTURES)/fake_tokio_nop5: $(FIXTURE_SRC)/fake_tokio.c $(FIXTURE_SRC)/fixture_main.h $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h $(FIXTURE_SRC)/fake_workers.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -DFAKE_NOP5 -o $@ $(FIXTURE_SRC)/fake_tokio.c $(FIXTURE_SRC)/fake_rt.c

$(FIXTURES)/libfake_rt.so: $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -fPIC -shared -o $@ $(FIXTURE_SRC)/fake_rt.c

$(FIXTURES)/fake_tokio_so: $(FIXTURE_SRC)/fake_tokio.c $(FIXTURE_SRC)/fixture_main.h $(FIXTURE_SRC)/fake_workers.h $(FIXTURES)/libfake_rt.so
	$(call msg,CC,$@)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $(FIXTURE_SRC)/fake_tokio.c -L$(FIXTURES) -lfake_rt \
	    -Wl,-rpath,'$$ORIGIN'

$(FIXTURES)/stallmon: $(FIXTURE_SRC)/stallmon.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $<

$(FIXTURES)/stock_like: $(FIXTURE_SRC)/stock_like.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $<

$(FIXTURES)/hostile: $(FIXTURE_SRC)/hostile.c $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $(FIXTURE_SRC)/hostile.c $(FIXTURE_SRC)/fake_rt.c

$(FIXTURES)/hostile_batch: $(FIXTURE_SRC)/hostile.c $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -Ibpf -DHOSTILE_BATCH -o $@ $(FIXTURE_SRC)/hostile.c $(FIXTURE_SRC)/fake_rt.c

$(FIXTURES)/batch_badrate: $(FIXTURE_SRC)/batch_badrate.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $<

# Every reporter (tracer/report/*.c), the flight recorder and --mode sampling's analysis, linked without the command layer
# (tracer/cli/): a library that printed through p_err would not link.
UNIT_TRACE_SRCS := $(call tsrc,hist.c text.c analyzer.c starve.c locks.c htab.c uring.c units.c json.c batch.c dialect.c \
                   flight.c fsutil.c why.c stacksym.c symbols.c sampling.c sampling_heat.c) $(wildcard tracer/report/*.c) $(PROTO_C)
$(FIXTURES)/unit_trace: $(FIXTURE_SRC)/unit_trace.c $(UNIT_TRACE_SRCS) $(wildcard tracer/*/*.h) bpf/events.h tests/unit/check.h \
                        $(OBJ)/html_assets.h $(OBJ)/syscall_names.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -I$(OBJ) -Ibpf -o $@ $< $(UNIT_TRACE_SRCS) \
	    -lm $(TRACER_LIBS)

# report_replay: a recorded capture (tests/fixtures/replay) through decode, analysis and the report
# writers with fixed metadata: the reports byte for byte across changes (tests/t_report_replay.sh)
REPORT_REPLAY := $(BUILD)/tests/report_replay
ALL_TARGETS += $(REPORT_REPLAY)
$(REPORT_REPLAY): tests/unit/report_replay.c $(UNIT_TRACE_SRCS) $(wildcard tracer/*/*.h) bpf/events.h \
                  $(OBJ)/html_assets.h $(OBJ)/syscall_names.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -I$(OBJ) -Ibpf -o $@ $< $(UNIT_TRACE_SRCS) \
	    -lm $(TRACER_LIBS)

# batch_replay: a dump of batched-capture ring records (TET_BATCH_DUMP) through the decode stage
# and the analyzer, on one core (the consumer's speed for make bench; real-data regressions)
BATCH_REPLAY := $(BUILD)/tests/batch_replay
ALL_TARGETS += $(BATCH_REPLAY)
$(BATCH_REPLAY): tests/unit/batch_replay.c $(call tsrc,batch.c) $(call tsrc,analyzer.c) $(call tsrc,starve.c) $(call tsrc,locks.c) $(call tsrc,htab.c) $(call tsrc,uring.c) $(call tsrc,hist.c) $(wildcard tracer/*/*.h) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $< $(call tsrc,batch.c) $(call tsrc,analyzer.c) $(call tsrc,starve.c) $(call tsrc,locks.c) $(call tsrc,htab.c) $(call tsrc,uring.c) $(call tsrc,hist.c)

# batch_test: unit tests of the decode stage on synthetic batches (tests/t_batch_unit.sh)
BATCH_TEST := $(BUILD)/tests/batch_test
ALL_TARGETS += $(BATCH_TEST)
$(BATCH_TEST): tests/unit/batch_test.c tests/unit/check.h $(call tsrc,batch.c) $(call tsrc,batch.h) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $< $(call tsrc,batch.c)

# flight_test: unit tests of the flight recorder's store, triggers, dump names and directory, its
# runtime decisions (tracer/run/flight_rt.c), and
# of the analyzer's on_detect hook (tests/t_flight_unit.sh)
FLIGHT_TEST := $(BUILD)/tests/flight_test
FLIGHT_TEST_SRCS := $(call tsrc,flight.c flight_rt.c fsutil.c batch.c analyzer.c starve.c locks.c htab.c uring.c hist.c units.c)
ALL_TARGETS += $(FLIGHT_TEST)
$(FLIGHT_TEST): tests/unit/flight_test.c tests/unit/check.h $(FLIGHT_TEST_SRCS) $(call tsrc,flight.h flight_rt.h) \
                $(call tsrc,analyzer.h) $(call tsrc,hist.h) $(call tsrc,units.h) $(call tsrc,seterr.h) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $< $(FLIGHT_TEST_SRCS)

# thresholds_test: the finding kinds' thresholds table (tracer/analyze/thresholds.def) whole, its
# defaults read back through the option parser (tests/t_thresholds_unit.sh)
THRESHOLDS_TEST := $(BUILD)/tests/thresholds_test
THRESHOLDS_TEST_SRCS := $(call tsrc,thresholds.c units.c analyzer.c starve.c locks.c htab.c uring.c hist.c)
ALL_TARGETS += $(THRESHOLDS_TEST)
$(THRESHOLDS_TEST): tests/unit/thresholds_test.c tests/unit/check.h $(THRESHOLDS_TEST_SRCS) \
                    $(call tsrc,thresholds.h thresholds.def findings.def analyzer.h units.h seterr.h) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $< $(THRESHOLDS_TEST_SRCS)

# uring_test: unit tests of the io_uring request tracking (tracer/analyze/uring.c) on synthetic records
# (tests/t_uring_unit.sh); calloc wrapped so a test can make one allocation fail
URING_TEST := $(BUILD)/tests/uring_test
URING_TEST_SRCS := $(call tsrc,uring.c htab.c hist.c)
ALL_TARGETS += $(URING_TEST)
$(URING_TEST): tests/unit/uring_test.c tests/unit/check.h $(URING_TEST_SRCS) $(call tsrc,uring.h) \
               $(call tsrc,htab.h) $(call tsrc,hist.h) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $< $(URING_TEST_SRCS) \
	    -Wl,--wrap=calloc

# fdwhat_test: epoll tokens → fds → descriptions from /proc (tracer/decode/fdwhat.c) on real sockets,
# pipes and files the test creates (tests/t_fdwhat_unit.sh)
FDWHAT_TEST := $(BUILD)/tests/fdwhat_test
ALL_TARGETS += $(FDWHAT_TEST)
$(FDWHAT_TEST): tests/unit/fdwhat_test.c tests/unit/check.h $(call tsrc,fdwhat.c) $(call tsrc,fdwhat.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -o $@ $< $(call tsrc,fdwhat.c)

# pmem_test: reads of a process's memory that a userfaultfd page holds (tracer/lib/pmem.c) are
# given up, bounded and counted (tests/t_pmem_unit.sh)
PMEM_TEST := $(BUILD)/tests/pmem_test
ALL_TARGETS += $(PMEM_TEST)
$(PMEM_TEST): tests/unit/pmem_test.c tests/unit/check.h $(call tsrc,pmem.c) $(call tsrc,pmem.h)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -pthread -o $@ $< $(call tsrc,pmem.c)

# sampling_test: adaptive sampling's rule (tracer/capture/ratectl.c) and the analyzer's handling of
# rate and gap records (tests/t_sampling_unit.sh)
SAMPLING_TEST := $(BUILD)/tests/sampling_test
SAMPLING_TEST_SRCS := $(call tsrc,ratectl.c analyzer.c starve.c locks.c htab.c uring.c hist.c)
ALL_TARGETS += $(SAMPLING_TEST)
$(SAMPLING_TEST): tests/unit/sampling_test.c tests/unit/check.h $(SAMPLING_TEST_SRCS) \
                  $(call tsrc,ratectl.h analyzer.h) bpf/events.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE $(TRACER_INC) -Ibpf -o $@ $< $(SAMPLING_TEST_SRCS)
