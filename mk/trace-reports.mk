# mk/trace-reports.mk — the reports people look at (tracer/report/html.c, perfetto.c, prom.c, outputs.c):
# report.html's page, style sheet and script are built into $(OBJ)/html_assets.h (inline, with
# a Content-Security-Policy naming their hashes) by scripts/embed-html.py; the Prometheus
# endpoint runs in a thread. Plus the fixture tests/t_report_*.sh trace (after trace-fixtures.mk:
# it uses FIXTURES, FIXTURE_SRC).
HTML_ASSETS := tracer/report/html/report.html tracer/report/html/report.css tracer/report/html/report.js

$(OBJ)/html_assets.h: scripts/embed-html.py $(HTML_ASSETS)
	$(call msg,EMBED,$@)
	$(Q)mkdir -p $(@D)
	$(Q)python3 scripts/embed-html.py $(HTML_ASSETS) $@

$(OBJ)/html.o: $(OBJ)/html_assets.h
TRACER_LIBS += -pthread

# report_tokio: fake_tokio's probes (fake_rt.c) playing a steady multi-worker workload for the
# timeline, heat map, trace and metrics, with spawn locations as hostile as a process can make
# them (--hostile) and many distinct sites (--sites N)
ALL_TARGETS += $(FIXTURES)/report_tokio
$(FIXTURES)/report_tokio: $(FIXTURE_SRC)/report_tokio.c $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h $(FIXTURE_SRC)/fixture_main.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $(FIXTURE_SRC)/report_tokio.c $(FIXTURE_SRC)/fake_rt.c

# doc_tokio: fake_tokio's probes playing the scenarios of tests/t_report_documented*.sh (planted
# poll times and scheduling delays, spawn_local, cancelled and panicked tasks, self-wake ratios,
# a contradicted lost waker; --findings N / --sites N for the report's limits)
ALL_TARGETS += $(FIXTURES)/doc_tokio
$(FIXTURES)/doc_tokio: $(FIXTURE_SRC)/doc_tokio.c $(FIXTURE_SRC)/fake_rt.c $(FIXTURE_SRC)/fake_rt.h $(FIXTURE_SRC)/fixture_main.h $(FIXTURE_SRC)/fake_workers.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FIXTURE_CFLAGS) -o $@ $(FIXTURE_SRC)/doc_tokio.c $(FIXTURE_SRC)/fake_rt.c
