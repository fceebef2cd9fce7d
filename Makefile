# attnd: one flat Makefile. Objects and binaries go to build/.
#
#   make            build the engine library, tests and tools
#   make test       run every Check suite (needs no PyTorch)
#   make bench      print the engine benchmark tables (bench/README.md)
#   make deps       install the Debian packages the build needs (as root)
#   make fixtures   regenerate tests/fixtures/ with PyTorch (python3-torch)
#   make check-deps grep for layering violations
#   make lint       check api/openapi.yaml with Redocly (npm; installs node_modules/)
#   make test-contract  the daemon against its OpenAPI contract (tests/contract/)
#   make test-web   the viewer (web/) in headless Chromium (tests/web/)
#   make container-test  build and run the Dockerfile with Podman (deploy/)
#   make load       wrk scenarios and an overload against a loopback attnd (deploy/)
#   SANITIZE=address,undefined   build everything with those sanitizers
#   WERROR=1                     turn warnings into errors (CI does)

CC      ?= cc
PYTHON  ?= /usr/bin/python3
BUILD   := build

WARN    := -Wall -Wextra -Wshadow -Wpointer-arith -Wstrict-prototypes \
           -Wmissing-prototypes -Wvla -Wformat=2 -Wcast-qual -Wundef
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -MMD -MP -pthread
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE)
endif

BLAS_LIBS   := -lopenblas
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt)
LDLIBS  := $(BLAS_LIBS) -lm -pthread

# Debian 12 packages the build, tests and tools need.
# (python3-torch only for `make fixtures` and the PyTorch column of `make bench`;
# chromium only for `make test-web`, driven by playwright-core from npm, and
# fonts-nanum so that its screenshot shows the Korean tokens, not boxes.)
DEB_PACKAGES := build-essential pkg-config libopenblas-dev check libjansson-dev \
                libmicrohttpd-dev python3 python3-yaml chromium fonts-nanum

ENGINE_SRC := $(wildcard engine/*.c)
ENGINE_OBJ := $(ENGINE_SRC:%.c=$(BUILD)/%.o)
ENGINE_LIB := $(BUILD)/libattn_engine.a

API_SRC    := $(wildcard api/*.c)
API_OBJ    := $(API_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/openapi_json.o
API_LIB    := $(BUILD)/libattn_api.a

SERVER_SRC := $(wildcard server/*.c)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o)
WEB_FILES  := $(wildcard web/*.html web/*.js web/*.css)
WEB_OBJ    := $(BUILD)/gen/web_assets.o
ATTND      := $(BUILD)/attnd

TEST_SRC   := $(wildcard tests/check_*.c)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_UTIL_SRC := $(filter-out tests/check_%.c,$(wildcard tests/*.c))
TEST_UTIL_OBJ := $(TEST_UTIL_SRC:%.c=$(BUILD)/%.o)

# Node tools for the OpenAPI contract (lint and contract test).
NODE_DEPS  := node_modules/.package-lock.json

BENCH_SRC  := $(wildcard bench/*.c)
BENCH_BIN  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all test bench deps fixtures check-deps clean run format

PORT ?= 8080

all: $(ENGINE_LIB) $(API_LIB) $(ATTND) $(TEST_BIN) $(BENCH_BIN)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(ENGINE_LIB): $(ENGINE_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

# api/ sees the engine's headers; server/ sees api's and the engine's.
$(BUILD)/api/%.o: api/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iengine -c $< -o $@

# The OpenAPI document is written in YAML and served as JSON, embedded.
$(BUILD)/gen/openapi_json.c: api/openapi.yaml tools/embed_openapi.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_openapi.py $< $@

$(BUILD)/gen/openapi_json.o: $(BUILD)/gen/openapi_json.c
	$(CC) $(CFLAGS) -Wno-missing-variable-declarations -c $< -o $@

$(API_LIB): $(API_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/server/%.o: server/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iapi -Iengine -c $< -o $@

# The viewer's files, embedded like the OpenAPI document; server side only.
$(BUILD)/gen/web_assets.c: $(WEB_FILES) tools/embed_web.py
	@mkdir -p $(dir $@)
	$(PYTHON) tools/embed_web.py $@ $(WEB_FILES)

$(WEB_OBJ): $(BUILD)/gen/web_assets.c
	$(CC) $(CFLAGS) -Iserver -c $< -o $@

$(ATTND): $(SERVER_OBJ) $(WEB_OBJ) $(API_LIB) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ -lmicrohttpd -ljansson $(LDLIBS)

# Test binaries link Check and jansson (to read fixtures); the engine does not.
$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CHECK_CFLAGS) -Iengine -Iapi -Itests -c $< -o $@

$(BUILD)/tests/check_%: $(BUILD)/tests/check_%.o $(TEST_UTIL_OBJ) $(API_LIB) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ $(CHECK_LIBS) -ljansson $(LDLIBS)

$(BUILD)/bench/%.o: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iengine -Iapi -c $< -o $@

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(API_LIB) $(ENGINE_LIB)
	$(CC) $(LDFLAGS) $^ -o $@ -lmicrohttpd -ljansson $(LDLIBS)

# Each suite runs in its own process; CK_FORK stays on so a crash is a failure,
# not the end of the run. The closing line sums every suite.
test: $(TEST_BIN) $(ATTND) $(NODE_DEPS)
	@pass=0; fail=0; \
	for t in $(TEST_BIN) "node tests/contract/contract.mjs" "node tests/web/viewer.test.mjs" \
		"$(PYTHON) tests/deploy/check_manifests.py"; do \
		echo "== $$t"; \
		if $$t; then pass=$$((pass+1)); else fail=$$((fail+1)); fi; \
	done; \
	echo "suites: $$pass passed, $$fail failed"; \
	test $$fail -eq 0

bench: $(BUILD)/bench/bench_engine
	$(BUILD)/bench/bench_engine
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
		$(PYTHON) bench/torch_mha.py; \
	else echo "bench: python3-torch not installed, PyTorch comparison skipped"; fi
	$(MAKE) --no-print-directory $(ATTND) $(BUILD)/bench/bare_server
	bench/http_bench.sh

# The quickstart: install what is missing, build, serve the built-in models.
run: deps
	$(MAKE) all
	$(ATTND) --port $(PORT)

# Node tools for the OpenAPI contract, pinned in package.json and
# package-lock.json (no build step); `npm ci` installs them when missing.

.PHONY: lint test-contract test-web

$(NODE_DEPS): package.json package-lock.json
	npm ci --no-audit --no-fund

lint: $(NODE_DEPS)
	npx --no-install redocly lint api/openapi.yaml

# Sends every example of the spec to the real daemon on an ephemeral port and
# validates each answer against the spec; also compares the route tables.
test-contract: $(ATTND) $(NODE_DEPS)
	node tests/contract/contract.mjs

# The viewer in Debian's chromium, headless (playwright-core drives it; no
# browser is downloaded): the page, its heatmaps, causal masks, API errors,
# CORS from a second origin; a screenshot goes to build/web-viewer.png.
test-web: $(ATTND) $(NODE_DEPS)
	node tests/web/viewer.test.mjs

# The container image and its deployment (deploy/): the Dockerfile built with
# `podman build --isolation=chroot` and run, no Docker engine needed; then the
# wrk scenarios of bench/wrk/ and an overload at -c 512 against build/attnd.
.PHONY: container-test load

container-test:
	deploy/container-test.sh

load: $(ATTND)
	deploy/load.sh

fixtures:
	$(PYTHON) tests/fixtures/make_fixtures.py tests/fixtures
	$(PYTHON) tests/fixtures/make_safetensors.py tests/fixtures/safetensors

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi
	@command -v node >/dev/null 2>&1 || { SUDO=""; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
		$$SUDO apt-get install -y -qq nodejs npm; }

# engine/ is a pure library; api/ alone speaks JSON; server/ alone speaks HTTP.
check-deps:
	@! grep -nE '#include *<(microhttpd|jansson)\.h>|\b(getenv|exit|printf|fprintf|puts|fopen) *\(' engine/*.[ch]
	@! grep -n '#include *<microhttpd.h>' api/*.[ch] 2>/dev/null
	@! grep -n '#include *<jansson.h>' server/*.[ch] 2>/dev/null
	@echo "check-deps: layering ok"

format:
	clang-format -i engine/*.[ch] tests/*.[ch] bench/*.c

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
