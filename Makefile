# tokio-ebpf-trace — top-level build.
#   make deps    install system packages and vendor Debian crates (idempotent)
#   make         build the tracer and the sample service (every Tokio line, usdt + stock)
#   make test    run every test (tests/run.sh); make test T=pattern runs a subset
#   make demo    build, run the sample service with its pathologies, trace it, write a report
#   make bench-probes / make bench   benchmarks (not tests)
#   make kit-matrix   the kit on all 70 Tokio releases (make test: the hooks.py cover)
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
TRACER_LIBS := -lbpf -lelf -lz
ALL_TARGETS :=

.PHONY: all deps test demo bench bench-probes clean distclean
all: build-all

include $(sort $(wildcard mk/*.mk))

build-all: $(BUILD)/.deps-ok $(ALL_TARGETS)
$(ALL_TARGETS): | $(BUILD)/.deps-ok

# Everything needs the system packages and vendored crates; deps.sh is idempotent and quick
# when nothing is missing, so a fresh machine needs nothing but `make demo` / `make test`.
$(BUILD)/.deps-ok: scripts/deps.sh scripts/packages.txt scripts/vendor-crates.sh $(wildcard crates/*)
	$(Q)scripts/deps.sh
	$(Q)mkdir -p $(BUILD) && touch $@

deps:
	$(Q)scripts/deps.sh
	$(Q)mkdir -p $(BUILD) && touch $(BUILD)/.deps-ok

# The build runs as many jobs as the machine has CPUs (cargo's own parallelism leaves cores idle
# while a crate links or a build script runs); the tests run one at a time.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test:
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) all
	$(Q)tests/run.sh $(T)

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(CACHE)
