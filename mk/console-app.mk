# The tokio-console demo app (tests/fixtures/console-app: the `app` example of Debian's
# console-subscriber crate, from .cache/crates/sid-console, which `make deps` vendors), built with
# the kit (scripts/tokio-usdt-build) and --cfg tokio_unstable: build/console-app/app, for
# tests/t_console_app.sh. The manifest and its cargo configuration are generated under
# build/console-app/crate (the example's path and the crate directory depend on the vendored
# version); the lock file is resolved there, offline, from the vendored crates.
CONSOLE_APP   := $(BUILD)/console-app/app
CONSOLE_CRATE  = $(lastword $(sort $(wildcard $(CACHE)/crates/sid-console/console-subscriber-0.*)))
CONSOLE_DIR   := $(BUILD)/console-app/crate

$(CONSOLE_APP): tests/fixtures/console-app/Cargo.toml.in $(SAMPLE_USDT_KIT) \
		$(wildcard $(CACHE)/crates/sid-console/.stamp)
	$(call msg,USDT,$@)
	$(Q)test -f $(CACHE)/crates/sid-console/.stamp || { echo "console-app: no Debian sid-console crates in .cache/crates/sid-console: run 'make deps'" >&2; exit 1; }
	$(Q)test -f "$(CONSOLE_CRATE)/examples/app.rs" || { echo "console-app: no examples/app.rs in the vendored console-subscriber ($(CONSOLE_CRATE))" >&2; exit 1; }
	$(Q)mkdir -p $(CONSOLE_DIR)/.cargo
	$(Q)sed 's|@EXAMPLE@|$(CONSOLE_CRATE)/examples/app.rs|' $< > $(CONSOLE_DIR)/Cargo.toml
	$(Q)printf '%s\n' '[source.crates-io]' 'replace-with = "debian"' '[source.debian]' \
		'directory = "$(CACHE)/crates/sid-console"' '[net]' 'offline = true' '[build]' \
		'rustflags = ["--cfg", "tokio_unstable"]' > $(CONSOLE_DIR)/.cargo/config.toml
	$(Q)cd $(CONSOLE_DIR) && cargo generate-lockfile --offline --quiet
	$(Q)cd $(CONSOLE_DIR) && $(ROOT)/scripts/tokio-usdt-build --release --locked --quiet \
		--manifest-path $(CONSOLE_DIR)/Cargo.toml --target-dir $(BUILD)/cargo/console-app
	$(Q)install -D -m 755 $(BUILD)/cargo/console-app/release/app $@

ALL_TARGETS += $(CONSOLE_APP)
CARGO_TARGETS += $(CONSOLE_APP)
