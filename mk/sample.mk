# sample-service: one source tree (sample-service/src), one manifest directory per Tokio line
# (sample-service/lines/tokio-X.Y, each with its own Cargo.lock and .cargo/config.toml pointing
# at .cache/crates/SUITE). Per line two binaries:
#   build/sample-service/tokio-X.Y/stock/sample-service   stock Tokio (uprobe fallback mode)
#   build/sample-service/tokio-X.Y/usdt/sample-service    Tokio with the USDT probe patches
#                                                         (scripts/tokio-usdt-build)
# Cargo reads .cargo/config.toml from the directory it runs in, not from --manifest-path, so
# every cargo command runs inside the line's manifest directory.
#   make sample-stock   only the stock binaries;  make sample-usdt   only the usdt ones.
# The line 1.53-uring (sample-service/lines/tokio-1.53-uring, crates of the sid-uring suite) is
# the 1.53 line with tokio-uring: the only build with `sample-service uring-workload`. The line
# 1.53-named (usdt build only, below) has tokio::task::Builder for `sample-service waits`.

SAMPLE_LINES := 1.24 1.43 1.53 1.53-uring
sample_suite  = $(if $(filter 1.24,$(1)),bookworm,$(if $(filter 1.43,$(1)),trixie,$(if $(filter 1.53-uring,$(1)),sid-uring,sid)))
SAMPLE_SRCS  := $(shell find sample-service/src -name '*.rs' 2>/dev/null)
# Inputs of the usdt builds besides the sources: the probe patches and the build kit.
SAMPLE_USDT_KIT := scripts/tokio-usdt-build $(shell find probes-patch -type f 2>/dev/null)
SAMPLE_CARGO_QUIET := $(if $(filter 1,$(V)),,--quiet)

SAMPLE_STOCK :=
SAMPLE_USDT  :=

# $(1): Tokio line (1.24); $(2): Debian suite (bookworm)
define sample_line
SAMPLE_DIR_$(1)  := sample-service/lines/tokio-$(1)
SAMPLE_DEPS_$(1) := $(SAMPLE_SRCS) $$(addprefix sample-service/lines/tokio-$(1)/,Cargo.toml Cargo.lock .cargo/config.toml) \
                    $$(wildcard $(CACHE)/crates/$(2)/.stamp)

$(BUILD)/sample-service/tokio-$(1)/stock/sample-service: $$(SAMPLE_DEPS_$(1))
	$$(call msg,CARGO,$$@)
	$(Q)test -f $(CACHE)/crates/$(2)/.stamp || { echo "sample-service: no Debian $(2) crates in .cache/crates/$(2): run 'make deps'" >&2; exit 1; }
	$(Q)cd $$(SAMPLE_DIR_$(1)) && cargo build $(SAMPLE_CARGO_QUIET) --release --locked \
		--manifest-path Cargo.toml --target-dir $(BUILD)/cargo/tokio-$(1)/stock
	$(Q)install -D -m 755 $(BUILD)/cargo/tokio-$(1)/stock/release/sample-service $$@

# The kit rewrites the line's Cargo.lock during its build (restoring it after), so under make -j
# it must not overlap the stock build of the same line (cargo --locked would see the edit).
$(BUILD)/sample-service/tokio-$(1)/usdt/sample-service: $$(SAMPLE_DEPS_$(1)) $(SAMPLE_USDT_KIT) \
		| $(BUILD)/sample-service/tokio-$(1)/stock/sample-service
	$$(call msg,USDT,$$@)
	$(Q)test -f $(CACHE)/crates/$(2)/.stamp || { echo "sample-service: no Debian $(2) crates in .cache/crates/$(2): run 'make deps'" >&2; exit 1; }
	$(Q)cd $$(SAMPLE_DIR_$(1)) && $(ROOT)/scripts/tokio-usdt-build --release --locked \
		--manifest-path $(ROOT)/$$(SAMPLE_DIR_$(1))/Cargo.toml --target-dir $(BUILD)/cargo/tokio-$(1)/usdt
	$(Q)install -D -m 755 $(BUILD)/cargo/tokio-$(1)/usdt/release/sample-service $$@

SAMPLE_STOCK += $(BUILD)/sample-service/tokio-$(1)/stock/sample-service
SAMPLE_USDT  += $(BUILD)/sample-service/tokio-$(1)/usdt/sample-service
endef

$(foreach l,$(SAMPLE_LINES),$(eval $(call sample_line,$(l),$(call sample_suite,$(l)))))

# The line 1.53-named (sample-service/lines/tokio-1.53-named: Tokio's tracing feature and --cfg
# tokio_unstable, hence tokio::task::Builder) exists for `sample-service waits`'s named task:
# only its usdt build is made.
SAMPLE_DEPS_NAMED := $(SAMPLE_SRCS) $(addprefix sample-service/lines/tokio-1.53-named/,Cargo.toml Cargo.lock .cargo/config.toml) \
                     $(wildcard $(CACHE)/crates/sid/.stamp)
$(BUILD)/sample-service/tokio-1.53-named/usdt/sample-service: $(SAMPLE_DEPS_NAMED) $(SAMPLE_USDT_KIT)
	$(call msg,USDT,$@)
	$(Q)test -f $(CACHE)/crates/sid/.stamp || { echo "sample-service: no Debian sid crates in .cache/crates/sid: run 'make deps'" >&2; exit 1; }
	$(Q)cd sample-service/lines/tokio-1.53-named && $(ROOT)/scripts/tokio-usdt-build --release --locked \
		--manifest-path $(ROOT)/sample-service/lines/tokio-1.53-named/Cargo.toml --target-dir $(BUILD)/cargo/tokio-1.53-named/usdt
	$(Q)install -D -m 755 $(BUILD)/cargo/tokio-1.53-named/usdt/release/sample-service $@
SAMPLE_USDT += $(BUILD)/sample-service/tokio-1.53-named/usdt/sample-service

# The dialect programs (sample-service/dialects, crates of sid): Tokio 1.53 with the probes of
# the two other Tokio USDT dialects, Tokio's upstream proposal and oxide's tokio-dtrace, fired
# from the runtime hooks (docs/dialects.md). One cargo build makes both (a grouped target).
DIALECT_BINS := tokio-upstream-dialect tokio-dtrace-dialect
SAMPLE_DIALECTS := $(addprefix $(BUILD)/sample-service/dialects/,$(DIALECT_BINS))
DIALECT_DEPS := $(shell find sample-service/dialects/src -name '*.rs' 2>/dev/null) \
                $(addprefix sample-service/dialects/,Cargo.toml Cargo.lock .cargo/config.toml) \
                $(wildcard $(CACHE)/crates/sid/.stamp)
$(SAMPLE_DIALECTS) &: $(DIALECT_DEPS)
	$(call msg,CARGO,$(BUILD)/sample-service/dialects)
	$(Q)test -f $(CACHE)/crates/sid/.stamp || { echo "sample-service dialects: no Debian sid crates in .cache/crates/sid: run 'make deps'" >&2; exit 1; }
	$(Q)cd sample-service/dialects && cargo build $(SAMPLE_CARGO_QUIET) --release --locked \
		--manifest-path Cargo.toml --target-dir $(BUILD)/cargo/dialects
	$(Q)for b in $(DIALECT_BINS); do install -D -m 755 $(BUILD)/cargo/dialects/release/$$b $(BUILD)/sample-service/dialects/$$b || exit 1; done

# Until the kit exists, say so instead of make's bare "No rule to make target".
scripts/tokio-usdt-build:
	@echo "sample-service: scripts/tokio-usdt-build is missing: the usdt builds need it ('make sample-stock' builds the stock binaries alone)" >&2; exit 1

.PHONY: sample-stock sample-usdt sample-dialects
sample-stock: $(SAMPLE_STOCK)
sample-usdt: $(SAMPLE_USDT)
sample-dialects: $(SAMPLE_DIALECTS)

ALL_TARGETS += $(SAMPLE_STOCK) $(SAMPLE_USDT) $(SAMPLE_DIALECTS)
CARGO_TARGETS += $(SAMPLE_STOCK) $(SAMPLE_USDT) $(SAMPLE_DIALECTS)
