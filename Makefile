# tokio-ebpf-trace — top-level build.
#   make deps    install system packages and vendor Debian crates (idempotent)
#   make deps-packages   the system packages alone (make all vendors the crates while C builds)
#   make         build the tracer and the sample service (every Tokio line, usdt + stock)
#   make test    run every test (tests/run.sh); make test T=pattern runs a subset
#   make demo    build, run the sample service with its pathologies, trace it, write a report
#   make bench-probes / make bench   benchmarks (not tests)
#   make kit-matrix   the kit on all 70 Tokio releases (make test: the hooks.py cover)
#   make tls-matrix   check's thread-local task-id slot against gdb + DWARF on 4 Tokio releases
#   make vocab   refresh scripts/tet-vocab.sh (bpf/probes.def and Tokio's functions for the shell)
# V=1 shows full commands.

.DELETE_ON_ERROR:
.SUFFIXES:
SHELL := /bin/bash

ROOT   := $(CURDIR)
BUILD  := $(ROOT)/build
BIN    := $(BUILD)/bin
OBJ    := $(BUILD)/obj
CACHE  := $(ROOT)/.cache

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(patsubst $(ROOT)/%,%,$(2))";
endif

CC      ?= cc
CLANG   ?= clang
BPFTOOL ?= bpftool
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -Wformat-signedness -Wmissing-field-initializers -Wno-unused-parameter
# The tracer's sources, by stage of the data path (tracer/README.md): every folder is on the
# include path, and $(call tsrc,x.c y.h) finds files by name in them.
TRACER_DIRS := $(addprefix tracer/,cli run discover capture decode analyze report lib)
TRACER_INC  := $(addprefix -I,$(TRACER_DIRS))
tsrc = $(foreach f,$(1),$(firstword $(wildcard $(addsuffix /$(f),$(TRACER_DIRS)))))
TRACER_SRCS   := $(sort $(wildcard $(addsuffix /*.c,$(TRACER_DIRS))))
TRACER_C_OBJS := $(addprefix $(OBJ)/,$(notdir $(TRACER_SRCS:.c=.o)))
# Objects of the tracer binary: fragments in mk/ append to these.
TRACER_OBJS :=
TRACER_LIBS := -lbpf -lelf -lz -lprotobuf-c
# protobuf schemas of the outputs (tracer/report/proto/NAME.proto): protoc-c makes
# $(OBJ)/NAME.pb-c.{c,h} (mk/tracer.mk), compiled into the tracer and its report tests
PROTO_C := $(patsubst tracer/report/proto/%.proto,$(OBJ)/%.pb-c.c,$(wildcard tracer/report/proto/*.proto))
ALL_TARGETS :=
# Those of ALL_TARGETS that cargo builds from the vendored crates (below)
CARGO_TARGETS :=

.PHONY: all deps deps-packages prebuild test demo bench bench-probes clean distclean
all: build-all

include $(sort $(wildcard mk/*.mk))

build-all: $(BUILD)/.deps-ok $(ALL_TARGETS)
# Everything needs the system packages; the cargo builds (CARGO_TARGETS, which the fragments
# that make them append to) need the vendored crates too. The other builds (C: the tracer,
# fixtures, unit tests, sanitizer and fuzz builds) wait for the packages alone, so under make -j
# they build while the crates download (make test: prebuild below). deps.sh is idempotent and
# quick when nothing is missing, so a fresh machine needs nothing but `make demo` / `make test`.
$(filter-out $(CARGO_TARGETS),$(ALL_TARGETS)): | $(BUILD)/.deps-pkgs-ok
$(CARGO_TARGETS): | $(BUILD)/.deps-ok

$(BUILD)/.deps-pkgs-ok: scripts/deps.sh scripts/packages.txt
	$(Q)scripts/deps.sh --packages
	$(Q)mkdir -p $(BUILD) && touch $@
$(BUILD)/.deps-ok: $(BUILD)/.deps-pkgs-ok scripts/vendor-crates.sh $(wildcard crates/*)
	$(Q)scripts/deps.sh --crates
	$(Q)touch $@

deps:
	$(Q)scripts/deps.sh
	$(Q)mkdir -p $(BUILD) && touch $(BUILD)/.deps-pkgs-ok $(BUILD)/.deps-ok
deps-packages: $(BUILD)/.deps-pkgs-ok

# The build runs as many jobs as the machine has CPUs (cargo's own parallelism leaves cores idle
# while a crate links or a build script runs); the tests run one at a time. First (prebuild) the
# crates are vendored, one job mostly waiting on the network, while the C parts build on every
# CPU beside it (one job more); then the cargo builds.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test:
	$(Q)$(MAKE) --no-print-directory -j$$(( $(JOBS) + 1 )) prebuild
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) all
	$(Q)tests/run.sh $(T)

# what needs no vendored crate, and the crates
prebuild: $(BUILD)/.deps-ok $(filter-out $(CARGO_TARGETS),$(ALL_TARGETS))

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(CACHE)
