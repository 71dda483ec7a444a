# wasm.mk - the WebAssembly build of the core (included by the Makefile).
#
#   make wasm      $(BUILD)/terrain.wasm: common/ and its two libraries for
#                  wasm32-wasi with Debian's clang, wasm-ld, wasi-libc and
#                  compiler-rt (scripts/deps.sh wasm), exporting the public
#                  API of common/terrain.h (TERRAIN_API: every other symbol
#                  is hidden) and malloc/free; clients/js/terrain.js loads it
#                  from beside itself.
#
# The world's flags rule here as everywhere (WORLD_FLAGS: no fast-math, no
# FMA contraction); WebAssembly's float32/float64 arithmetic is IEEE 754
# with round-to-nearest, so the same operations in the same order give the
# same bits as x86-64 and arm64 (tests/library/wasm.sh checks the golden tiles).
# cJSON comes as Debian's source package (scripts/cjson-src.sh), xxhash as
# Debian's header with its implementation (clients/js/wasm/xxhash.c).

WASM_CC     ?= clang
WASM_TARGET ?= wasm32-wasi
WASM_OPT    ?= -O3
# simd128 only where it changes no result: tests/library/wasm.sh compares both.
WASM_SIMD   ?= -msimd128
WASM_DIR    := $(BUILD)/wasm
CJSON_SRC   ?= $(WASM_DIR)/cjson
WASM_CFLAGS := --target=$(WASM_TARGET) -std=c11 $(WARN) $(WASM_OPT) $(WASM_SIMD) \
	-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icommon -I$(WASM_DIR)/include \
	-fvisibility=hidden $(WORLD_FLAGS)
WASM_LDFLAGS := --target=$(WASM_TARGET) -mexec-model=reactor -Wl,--export-dynamic \
	-Wl,--export=malloc -Wl,--export=free -Wl,-z,stack-size=1048576 -Wl,--strip-debug
WASM_OBJ := $(COMMON_SRC:%.c=$(WASM_DIR)/%.o) $(WASM_DIR)/gen/builtin_presets.o \
	$(WASM_DIR)/cjson.o $(WASM_DIR)/xxhash.o

.PHONY: wasm
wasm: $(BUILD)/terrain.wasm clients/js/terrain.wasm

# beside the module, where loadWasm() looks by default (not in git)
clients/js/terrain.wasm: $(BUILD)/terrain.wasm
	$(Q)cp $< $@

$(BUILD)/terrain.wasm: $(WASM_OBJ)
	$(QLD)$(WASM_CC) $(WASM_LDFLAGS) $^ -o $@

# headers the wasm32 sysroot lacks: Debian's xxhash.h and cJSON's own
$(WASM_DIR)/include/xxhash.h:
	@mkdir -p $(@D)
	$(Q)ln -sf /usr/include/xxhash.h $@
$(WASM_DIR)/include/cjson/cJSON.h: $(CJSON_SRC)/cJSON.c
	@mkdir -p $(@D)
	$(Q)ln -sf $(abspath $(CJSON_SRC))/cJSON.h $@
$(CJSON_SRC)/cJSON.c:
	$(Q)scripts/cjson-src.sh $(CJSON_SRC)

WASM_HDRS := $(WASM_DIR)/include/xxhash.h $(WASM_DIR)/include/cjson/cJSON.h

$(WASM_DIR)/common/%.o: common/%.c $(WASM_HDRS)
	@mkdir -p $(@D)
	$(QCC)$(WASM_CC) $(WASM_CFLAGS) -MMD -MP -c $< -o $@
$(WASM_DIR)/gen/builtin_presets.o: $(BUILD)/gen/builtin_presets.c
	@mkdir -p $(@D)
	$(QCC)$(WASM_CC) $(WASM_CFLAGS) -Wno-missing-prototypes -c $< -o $@
$(WASM_DIR)/xxhash.o: clients/js/wasm/xxhash.c $(WASM_HDRS)
	@mkdir -p $(@D)
	$(QCC)$(WASM_CC) $(WASM_CFLAGS) -c $< -o $@
# third-party C: its own warnings, the world's flags all the same
$(WASM_DIR)/cjson.o: $(CJSON_SRC)/cJSON.c
	@mkdir -p $(@D)
	$(QCC)$(WASM_CC) --target=$(WASM_TARGET) -std=c89 $(WASM_OPT) $(WASM_SIMD) -w \
		-fvisibility=hidden $(WORLD_FLAGS) -c $< -o $@
