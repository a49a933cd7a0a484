# libprof — one entry point: make, make run, make test, make asan, make bench, make install
#
#   make          build/libprof.so and build/prof
#   make run      install missing packages, build, profile the bundled example, print the table
#   make test     unit tests (cmocka) and end-to-end tests
#   make asan     the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer
#   make bench    overhead and throughput benchmarks (ratios measured side by side)
#   make fuzz     the shared-memory and capture fuzzers, FUZZ_RUNS executions each (clang;
#                 test/fuzz)
#   make install  PREFIX=/usr/local (library, command, header, Python module, man pages,
#                 bash completion, pkg-config file); make uninstall removes them

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
PYTHON  ?= python3

WARN     = -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
# what the build needs whatever CFLAGS the user gives
# Includes name their path from the repository root ("preload/common/ring.h").
BASE_CFLAGS = -std=gnu11 $(WARN) -fPIC -I. -Iinclude -I$(BUILD)/gen
# header dependencies, written next to each object
DEPFLAGS = -MMD -MP
XCFLAGS  = $(BASE_CFLAGS) $(SAN)
LDFLAGS += $(SAN)

# Sources are found by folder (docs/ARCHITECTURE.md, Layout): libprof.so is preload/*/;
# prof is collector/ and formats/ plus preload/common/, the contract both sides compile.
PRELOAD_SRC   := $(sort $(wildcard preload/*/*.c preload/*/*.S))
FORMATS_SRC   := $(sort $(wildcard formats/*/*.c))
COLLECTOR_SRC := $(sort $(wildcard collector/*.c collector/*/*.c))
COMMON_SRC    := $(sort $(wildcard preload/common/*.c))
CORE_SRC := $(FORMATS_SRC) $(filter-out collector/main.c,$(COLLECTOR_SRC)) $(COMMON_SRC)
UNIT_SRC := $(sort $(wildcard test/unit/test_*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
# libprof.so's objects are built apart: hidden visibility, initial-exec TLS, and under
# `make asan` only UBSan (ASan's runtime must own malloc, which libprof interposes).
libobj = $(patsubst %.S,$(BUILD)/obj/lib/%.o,$(patsubst %.c,$(BUILD)/obj/lib/%.o,$(1)))
PRELOAD_SAN ?= $(SAN)

LIB  := $(BUILD)/libprof.so
PROF := $(BUILD)/prof
CORE := $(BUILD)/libprofcore.a
UNIT_BINS := $(patsubst test/unit/%.c,$(BUILD)/test/%,$(UNIT_SRC))

.PHONY: all run test unit e2e asan bench install uninstall man deps clean
all: $(LIB) $(PROF)

# torch_callbacks.c runs inside C++ that may throw through it: its cleanups must run
$(BUILD)/obj/lib/preload/frameworks/torch_callbacks.o: UNWIND_FLAGS = -fexceptions

$(BUILD)/obj/lib/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $< (libprof.so)"
	@$(CC) $(CFLAGS) $(BASE_CFLAGS) $(UNWIND_FLAGS) $(DEPFLAGS) $(PRELOAD_SAN) \
	  -fvisibility=hidden -ftls-model=initial-exec -c $< -o $@

$(BUILD)/obj/lib/%.o: %.S
	@mkdir -p $(dir $@)
	@echo "  AS $<"
	@$(CC) -c $< -o $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(CFLAGS) $(XCFLAGS) $(DEPFLAGS) -c $< -o $@

$(LIB): $(call libobj,$(PRELOAD_SRC)) preload/libprof.map
	@echo "  LD $@"
	@$(CC) -shared -o $@ $(filter %.o,$^) $(PRELOAD_SAN) -ldl -lpthread \
	  -Wl,--version-script=preload/libprof.map

# prof export --format parquet's Python half, inside prof as a C string
$(BUILD)/gen/parquet_export_py.h: formats/export/parquet_export.py
	@mkdir -p $(dir $@)
	@sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $< > $@
$(BUILD)/obj/collector/export_parquet.o: $(BUILD)/gen/parquet_export_py.h

# prof html's page, inside prof as a C string
$(BUILD)/gen/report_html.h: formats/html/report.html
	@mkdir -p $(dir $@)
	@sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$$/\\n"/' $< > $@
$(BUILD)/obj/collector/cmd_html.o: $(BUILD)/gen/report_html.h

$(CORE): $(call obj,$(CORE_SRC))
	@rm -f $@
	@ar rcs $@ $^

$(PROF): $(call obj,collector/main.c) $(CORE)
	@echo "  LD $@"
	@$(CC) -o $@ $^ $(LDFLAGS) -lzstd -lm -lpthread -lstdc++

$(BUILD)/test/%: test/unit/%.c $(CORE)
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(XCFLAGS) $(DEPFLAGS) -o $@ $< $(CORE) $(LDFLAGS) -lcmocka -lzstd -lm -lpthread -lstdc++

deps:
	@scripts/install-deps.sh

run: deps all
	@$(MAKE) --no-print-directory -C examples BUILD=$(abspath $(BUILD))
	@cd $(BUILD) && rm -f example.* && \
	  PROFILER_AUTOSTART=1 PROFILER_STACK=alloc PROFILER_OUTPUT=example \
	  LD_PRELOAD=$(abspath $(LIB)) ./example_train
	@cd $(BUILD) && ./prof html example.prof -o example.html --force-overwrite
	@echo; cat $(BUILD)/example.txt
	@echo; echo "Open $(BUILD)/example.html in any browser (offline: steps, memory, timeline,"; \
	  echo "advice), or $(BUILD)/example.json in ui.perfetto.dev."

# The CPython frame reader is tested against real interpreters, outside cmocka.
unit: $(UNIT_BINS)
	@failed=""; for t in $(UNIT_BINS); do echo "== $$t"; $$t || failed="$$failed $$t"; done; \
	  echo "== test/unit/pyframes/run.sh"; \
	  BUILD=$(abspath $(BUILD)) test/unit/pyframes/run.sh || failed="$$failed pyframes"; \
	  if [ -n "$$failed" ]; then echo "unit tests failed:$$failed"; exit 1; fi

e2e: all
	@BUILD=$(abspath $(BUILD)) $(PYTHON) test/e2e/run.py

test: deps
	@$(MAKE) --no-print-directory all unit fuzz-smoke e2e

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  PRELOAD_SAN="-fsanitize=undefined -fno-sanitize-recover=undefined" \
	  CFLAGS="-O1 -g" all unit e2e

bench: all
	@$(MAKE) --no-print-directory -C bench BUILD=$(abspath $(BUILD))
	@BUILD=$(abspath $(BUILD)) $(PYTHON) bench/run.py

# The fuzzers (test/fuzz/README.md): the shared-memory drain and the capture readers,
# libFuzzer under ASan and UBSan, clang only. `make fuzz` runs FUZZ_RUNS executions of
# each; `make test` runs a short smoke run of each.
FUZZ_CC   ?= clang
FUZZ_RUNS ?= 10000000
FUZZ_CAP_SMOKE ?= 3000
FUZZ_SAN   = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_BIN  := $(BUILD)/fuzz/fuzz_shm
FUZZ_CAP_BIN := $(BUILD)/fuzz/fuzz_capture
fuzzobj = $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(1))
.PHONY: fuzz fuzz-smoke
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $< (fuzz)"
	@$(FUZZ_CC) -O1 -g $(BASE_CFLAGS) $(DEPFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -c $< -o $@
$(FUZZ_BIN): test/fuzz/fuzz_shm.c $(call fuzzobj,$(CORE_SRC))
	@echo "  LD $@"
	@$(FUZZ_CC) -O1 -g $(BASE_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ \
	  -lzstd -lm -lpthread -lstdc++
$(FUZZ_CAP_BIN): test/fuzz/fuzz_capture.c $(call fuzzobj,$(CORE_SRC))
	@echo "  LD $@"
	@$(FUZZ_CC) -O1 -g $(BASE_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ \
	  -lzstd -lm -lpthread -lstdc++
# turns a capture into a fuzz_capture seed (test/fuzz/capture_seeds/ were made with it)
$(BUILD)/fuzz/capture_to_seed: test/fuzz/capture_to_seed.c $(CORE)
	@mkdir -p $(dir $@)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(XCFLAGS) -o $@ $< $(CORE) $(LDFLAGS) -lzstd -lm -lpthread -lstdc++
fuzz: $(FUZZ_BIN) $(FUZZ_CAP_BIN)
	@BUILD=$(abspath $(BUILD)) test/fuzz/run.sh $(FUZZ_RUNS)
	@BUILD=$(abspath $(BUILD)) FUZZER=capture test/fuzz/run.sh $(FUZZ_RUNS)
fuzz-smoke: $(FUZZ_BIN) $(FUZZ_CAP_BIN)
	@BUILD=$(abspath $(BUILD)) test/fuzz/run.sh 20000
	@BUILD=$(abspath $(BUILD)) FUZZER=capture test/fuzz/run.sh $(FUZZ_CAP_SMOKE)

#   make perf-check  libprof's overhead on a bundled workload against PERF_BASE (default
#                    HEAD~1), both builds measured here; exit 1 when libprof got slower
PERF_BASE ?= HEAD~1
.PHONY: perf-check
perf-check: all
	@scripts/perf-check --self $(PERF_BASE)

#   make peer-test   CPython's regression tests (the longer set) natively, under the bare
#                    command and under PROFILER_TRACE='*': each module's result the same
#                    (docs/RELIABILITY.md holds the last run; make test runs a short set)
.PHONY: peer-test
peer-test: deps all
	@scripts/peer-test --set long --lib $(LIB) --markdown $(BUILD)/peer-test.md

# Where the Python module goes, never outside PREFIX: the directory under PREFIX the
# chosen Python imports from (Debian's python3 and PREFIX=/usr/local:
# /usr/local/lib/python3.X/dist-packages), else its site layout under PREFIX (PYTHONPATH
# must then name it: install says so).
PY_SITE = $(shell $(PYTHON) -c 'import sys, sysconfig; p = [d for d in sys.path if d.startswith("$(PREFIX)/") and d.endswith("-packages")]; print(p[0] if p else sysconfig.get_path("purelib", vars={"base": "$(PREFIX)", "platbase": "$(PREFIX)"}))' 2>/dev/null)
PY_SEES = $(shell $(PYTHON) -c 'import sys; print(int("$(PY_SITE)" in sys.path))' 2>/dev/null)
VERSION = $(shell sed -n 's/^#define PROF_VERSION "\(.*\)"/\1/p' collector/commands.h)
INSTALLED = bin/prof lib/libprof.so include/prof.h lib/libprof/python/libprof.py \
	    share/libprof/sql/straggler.sql share/bash-completion/completions/prof \
	    lib/pkgconfig/libprof.pc

man: all
	@scripts/man.sh $(BUILD)

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libprof.so
	install -m 0755 $(PROF) $(DESTDIR)$(PREFIX)/bin/prof
	install -m 0644 include/prof.h $(DESTDIR)$(PREFIX)/include/prof.h
	install -d $(DESTDIR)$(PREFIX)/lib/libprof/python
	install -m 0644 scripts/libprof.py $(DESTDIR)$(PREFIX)/lib/libprof/python/libprof.py
	install -d $(DESTDIR)$(PREFIX)/share/libprof/sql
	install -m 0644 scripts/sql/straggler.sql $(DESTDIR)$(PREFIX)/share/libprof/sql/straggler.sql
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0644 scripts/completion/prof.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/prof
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig
	sed 's|@PREFIX@|$(PREFIX)|; s|@VERSION@|$(VERSION)|' scripts/libprof.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/libprof.pc
	@if scripts/man.sh $(BUILD) >/dev/null; then \
	  install -d $(DESTDIR)$(PREFIX)/share/man/man1 && \
	  install -m 0644 $(BUILD)/man/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/ && \
	  echo "man pages: $(PREFIX)/share/man/man1"; fi
	@if [ -n "$(PY_SITE)" ]; then install -d $(DESTDIR)$(PY_SITE) && \
	  install -m 0644 scripts/libprof.py $(DESTDIR)$(PY_SITE)/libprof.py && \
	  if [ "$(PY_SEES)" = 1 ]; then echo "python module: $(PY_SITE)/libprof.py ($(PYTHON) imports it)"; \
	  else echo "python module: $(PY_SITE)/libprof.py ($(PYTHON) imports it with PYTHONPATH=$(PY_SITE))"; fi; fi

uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/,$(INSTALLED))
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/prof.1 $(DESTDIR)$(PREFIX)/share/man/man1/prof-*.1
	@if [ -n "$(PY_SITE)" ]; then rm -f $(DESTDIR)$(PY_SITE)/libprof.py; fi
	-rmdir $(DESTDIR)$(PREFIX)/lib/libprof/python $(DESTDIR)$(PREFIX)/lib/libprof \
	  $(DESTDIR)$(PREFIX)/share/libprof/sql $(DESTDIR)$(PREFIX)/share/libprof 2>/dev/null

clean:
	rm -rf build build-asan
	@$(MAKE) --no-print-directory -C examples clean BUILD=$(abspath $(BUILD)) 2>/dev/null || true

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
