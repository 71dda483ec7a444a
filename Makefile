# Terrain chunk server. `make help` lists the targets.
#
#   make                 build build/terrain-server, build/terrain-client, build/libcommon.a
#   make test            install deps, then gcc + clang + ASan/UBSan suites and the gcc/clang tile check
#   make run             install deps, build, serve on 127.0.0.1:8080
#   make bench           benchmarks against the anchors measured in the same run
#   make BUILD=dir CC=clang   the same sources with another compiler into another folder
#   make noopt | asan    re-invoke make with -O0 or with sanitizers (into build-noopt, build-asan)
#   make fuzz            libFuzzer targets: the tile decoder, the server over TCP (clang)
#   make check-headers   compile every header on its own
#   V=1                  print full commands

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
PKGS    := libuv libzstd libcjson libpng libtiff-4 cmocka
LLHTTP_INC := /usr/share/include/llhttp
LLHTTP_SRC := /usr/share/llhttp

ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# Determinism: no fast-math, no FMA contraction (see docs/design.md).
# -fno-trapping-math only says no code reads floating-point exception flags
# (clang's default): gcc may then compute both sides of a float select, so
# clamps and blends vectorise. Values are unchanged.
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS_ALL := -std=c11 $(WARN) $(OPT) -g -ffp-contract=off -fno-fast-math -fno-math-errno -fno-trapping-math \
	-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icommon -I$(BUILD)/gen \
	$(SANFLAGS) $(CFLAGS)
LDFLAGS_ALL := -Wl,--as-needed $(SANFLAGS) $(LDFLAGS)
LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -luv -lzstd -lcjson -lpng16 -ltiff -lcmocka) -lgeotiff -lxxhash -lpthread -lm

ifneq ($(V),1)
Q  := @
QCC = @echo "  CC    $@";
QLD = @echo "  LD    $@";
endif

COMMON_SRC := $(wildcard common/*.c)
SERVER_SRC := $(filter-out server/main.c,$(wildcard server/*.c))
CLIENT_SRC := $(filter-out client-sample/main.c,$(wildcard client-sample/*.c))
TEST_SRC   := $(wildcard tests/test_*.c)
PRESETS    := $(sort $(wildcard presets/*.json))
ASSETS     := $(sort $(wildcard server/assets/*))

COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/builtin_presets.o
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o) $(if $(ASSETS),$(BUILD)/gen/assets.o)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(BUILD)/%.o)
LLHTTP_OBJ := $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o $(BUILD)/llhttp/llhttp.o
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all deps test check run bench fuzz clean noopt asan check-headers help
all: $(BUILD)/libcommon.a $(BUILD)/terrain-server $(BUILD)/terrain-client

help:
	@sed -n '2,13p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@scripts/deps.sh build

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) $(HOT) -I$(LLHTTP_INC) -MMD -MP -c $< -o $@

# The generation kernels are written as loops for the vectoriser; gcc -O2
# only vectorises trivial loops, so the default build takes them to -O3.
# Results are identical at every level (tests/cross-compiler.sh checks -O0).
$(BUILD)/common/noise.o $(BUILD)/common/fbm.o $(BUILD)/common/pipeline.o: \
	HOT = $(if $(filter -O2,$(OPT)),-O3)

# llhttp is third-party C from Debian's node-llhttp: its own flags, no -Werror.
$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(@D)
	$(QCC)$(CC) -O2 -g -w -I$(LLHTTP_INC) $(SANFLAGS) $(CFLAGS) -c $< -o $@

# The server's main() under another name, for the in-process fuzz target.
$(BUILD)/fuzz/server_main.o: server/main.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes -Dmain=terrain_server_main -I$(LLHTTP_INC) -c $< -o $@

$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(@D)
	$(QCC)$(CC) -std=c11 $(WARN) -O1 $< -o $@

$(BUILD)/gen/builtin_presets.c: $(PRESETS) $(BUILD)/tools/embed
	@mkdir -p $(@D)
	$(Q)$(BUILD)/tools/embed builtin_presets $(PRESETS) > $@

$(BUILD)/gen/assets.c: $(ASSETS) $(BUILD)/tools/embed
	@mkdir -p $(@D)
	$(Q)$(BUILD)/tools/embed assets $(ASSETS) > $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(QCC)$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes -c $< -o $@

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/libserver.a: $(SERVER_OBJ) $(LLHTTP_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/libclient.a: $(CLIENT_OBJ) $(LLHTTP_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/terrain-server: $(BUILD)/server/main.o $(BUILD)/libserver.a $(BUILD)/libcommon.a
	$(QLD)$(CC) $(LDFLAGS_ALL) $^ $(LIBS) -o $@

$(BUILD)/terrain-client: $(BUILD)/client-sample/main.o $(BUILD)/libclient.a $(BUILD)/libcommon.a
	$(QLD)$(CC) $(LDFLAGS_ALL) $^ $(LIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/libserver.a $(BUILD)/libclient.a $(BUILD)/libcommon.a
	$(QLD)$(CC) $(LDFLAGS_ALL) $^ $(LIBS) -o $@

tests: all $(TEST_BIN)
.PHONY: tests
# keep test objects between runs (they are intermediates of the pattern rule)
.SECONDARY:

# Runs every cmocka binary and every tests/*.sh against $(BUILD).
check: tests
	@BUILD=$(BUILD) tests/run.sh $(TEST_BIN)

test:
	@scripts/deps.sh test
	$(MAKE) BUILD=build check
	$(MAKE) BUILD=build-clang CC=clang check
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1 check
	tests/cross-compiler.sh build build-clang

run: deps all
	$(BUILD)/terrain-server serve

bench:
	@scripts/deps.sh bench
	$(MAKE) BUILD=build-bench OPT="-O3" all
	bench/run.sh build-bench

noopt:
	$(MAKE) BUILD=build-noopt OPT=-O0

asan:
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1

FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
fuzz:
	@scripts/deps.sh test
	$(MAKE) BUILD=build-fuzz CC=clang OPT=-O1 \
		CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" \
		build-fuzz/libcommon.a build-fuzz/libserver.a build-fuzz/fuzz/server_main.o
	clang -std=c11 -O1 -g $(FUZZ_SAN) -Icommon tests/fuzz_tile.c \
		build-fuzz/libcommon.a -lxxhash -lzstd -lcjson -lm -o build-fuzz/fuzz_tile
	clang -std=c11 $(WARN) -O1 -g $(FUZZ_SAN) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
		-I$(LLHTTP_INC) tests/fuzz_http.c build-fuzz/fuzz/server_main.o build-fuzz/libserver.a \
		build-fuzz/libcommon.a $(LIBS) -o build-fuzz/fuzz_http
	@mkdir -p build-fuzz/corpus build-fuzz/corpus-http
	@echo "run: build-fuzz/fuzz_tile -max_total_time=60 build-fuzz/corpus"
	@echo "     build-fuzz/fuzz_http -dict=tests/fuzz_http.dict -max_total_time=600 build-fuzz/corpus-http tests/fuzz_http"

check-headers:
	@for h in common/*.h server/*.h client-sample/*.h; do \
		[ -f "$$h" ] || continue; \
		echo "#include \"$$h\"" | $(CC) $(CFLAGS_ALL) -I. -I$(LLHTTP_INC) -x c -fsyntax-only - || exit 1; \
	done; echo "headers: ok"

clean:
	rm -rf build build-clang build-asan build-noopt build-bench build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
