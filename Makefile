# Terrain chunk server. `make help` lists the targets.
#
#   make                 build build/terrain-server, build/terrain-client, build/lib/libterrain.{so,a}
#   make install         PREFIX=/usr/local DESTDIR= BINDIR= ...: install-lib + install-server (docs/operations.md)
#   make install-lib     the library alone (header, libs, terrain.pc, CMake files; docs/library.md)
#   make install-server  terrain-server, terrain-client, their man pages, the systemd unit and its options file
#   make uninstall       removes both (uninstall-lib, uninstall-server: each alone)
#   make man             dist/man/*.1 again from the programs' --help (tools/man.sh)
#   make test            install deps, then gcc + clang + ASan/UBSan suites and the gcc/clang tile check
#   make run             install deps, build, serve on 127.0.0.1:8080
#   make bench           benchmarks against the anchors measured in the same run
#   make bench-programs  the bench programs and load generators into $(BUILD)/bench/ (bench/*.sh run them)
#   make web             the libraries of the pages in clients/web, from npm, beside them (offline after)
#   make CC=aarch64-linux-gnu-gcc BUILD=build-arm64   cross build (tools use HOSTCC)
#   make test-arm64      arm64 cross build, its tiles under qemu-user against native
#   make fresh-check     make run + make test in a debootstrapped Debian 12 chroot
#   make container-test  the cluster in containers (needs a Docker daemon; .ci/run runs it after make test)
#   make swarm-test      docker/stack.yaml on a one-machine Docker Swarm (likewise, after container-test)
#   make BUILD=dir CC=clang   the same sources with another compiler into another folder
#   make noopt | asan    re-invoke make with -O0 or with sanitizers (into build-noopt, build-asan)
#   make fuzz            libFuzzer targets: the tile decoder, the server over TCP and in memory, edit JSON (clang)
#   make fuzz-long       every fuzz target for FUZZ_TIME s, corpus kept in fuzz-corpus/
#   make check-headers   compile every header on its own
#   make wasm            build/terrain.wasm: the core for WebAssembly (clients/js/terrain.js)
#   V=1                  print full commands

BUILD   ?= build
CC      ?= cc
OPT     ?= -O2
SAN     ?=
PKGS    := libuv libzstd zlib libcjson libpng libtiff-4 cmocka hiredis libjwt libcrypto
HOSTCC  ?= cc
# Where Debian's node-llhttp puts llhttp's C; overridable (tests/platform/first_run.sh).
LLHTTP_INC ?= /usr/share/include/llhttp
LLHTTP_SRC ?= /usr/share/llhttp
# The command that installs the packages of a target (its one argument):
# `make run`, `make test` and `make bench` run it, then a new make process
# builds, which reads the file system as the packages left it.
DEPS    ?= scripts/deps.sh
# Arguments of `make run`'s server (e.g. RUN_ARGS="--port 0").
RUN_ARGS ?=

# Cross builds: libraries of the target's multiarch folder.
TARGET_ARCH_TRIPLET := $(shell $(CC) -print-multiarch 2>/dev/null)
HOST_ARCH_TRIPLET   := $(shell $(HOSTCC) -print-multiarch 2>/dev/null)
ifneq ($(filter-out $(HOST_ARCH_TRIPLET),$(TARGET_ARCH_TRIPLET)),)
PKG_CONFIG ?= PKG_CONFIG_LIBDIR=/usr/lib/$(TARGET_ARCH_TRIPLET)/pkgconfig:/usr/share/pkgconfig pkg-config
endif
PKG_CONFIG ?= pkg-config

ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# Determinism: no fast-math, no FMA contraction (see docs/design.md). These
# flags define the world, so they come last on every compile line, after
# CFLAGS, and a CFLAGS that would change floating-point results is refused
# (WORLD_FLAGS_UNSAFE=1 lets it through and puts CFLAGS after them: for
# tests/platform/world_flags.sh, whose binary the start-up self-check must refuse).
# -fno-trapping-math only says no code reads floating-point exception flags
# (clang's default): gcc may then compute both sides of a float select, so
# clamps and blends vectorise. Values are unchanged.
WORLD_FLAGS := -ffp-contract=off -fno-fast-math -fno-math-errno -fno-trapping-math
WORLD_BREAKERS := -ffast-math -Ofast -ffp-contract=fast% -ffp-contract=on -ffp-model=fast% \
	-funsafe-math-optimizations -fassociative-math -freciprocal-math -ffinite-math-only \
	-fno-signed-zeros -fapprox-func -fsingle-precision-constant -fcx-limited-range \
	-fexcess-precision=fast -mfpmath=387% -mrecip%
WORLD_BROKEN := $(filter $(WORLD_BREAKERS),$(CFLAGS) $(OPT))
ifneq ($(WORLD_BROKEN),)
ifneq ($(WORLD_FLAGS_UNSAFE),1)
$(error CFLAGS/OPT contain $(WORLD_BROKEN), which change the generated world (floating-point \
results; see docs/design.md). Remove them; WORLD_FLAGS_UNSAFE=1 builds it anyway, and the \
server will then refuse to start)
endif
endif
ifeq ($(WORLD_FLAGS_UNSAFE),1)
WORLD_LAST := $(WORLD_FLAGS) $(CFLAGS)
else
WORLD_LAST := $(CFLAGS) $(WORLD_FLAGS)
endif
# The build's packages, checked before anything compiles: on a machine
# without them plain `make` would stop at the first missing header
# (cjson/cJSON.h: No such file or directory). It names them and the command
# that installs them instead. Goals that install their packages first (run,
# test, bench, fuzz, ...) are checked in the make they start afterwards.
# PKG_DEBS: pkg-config name:Debian package.
PKG_DEBS := libuv:libuv1-dev libzstd:libzstd-dev zlib:zlib1g-dev libcjson:libcjson-dev \
	libpng:libpng-dev libtiff-4:libtiff-dev cmocka:libcmocka-dev hiredis:libhiredis-dev \
	libxxhash:libxxhash-dev libjwt:libjwt-dev libcrypto:libssl-dev libcurl:libcurl4-gnutls-dev
INSTALLS_FIRST := help clean deps run test bench fuzz fuzz-long noopt asan fresh-check \
	container-test swarm-test test-arm64 test-builds test-build-gcc test-build-clang test-build-asan
ifneq ($(filter-out $(INSTALLS_FIRST),$(or $(MAKECMDGOALS),all)),)
pkg_name = $(word $2,$(subst :, ,$1))
ifeq ($(shell $(PKG_CONFIG) --version >/dev/null 2>&1 && echo y),)
PKG_MISSING := pkg-config
else ifeq ($(shell $(PKG_CONFIG) --exists $(foreach p,$(PKG_DEBS),$(call pkg_name,$p,1)) && echo y),)
PKG_MISSING := $(foreach p,$(PKG_DEBS),$(if $(shell $(PKG_CONFIG) --exists $(call pkg_name,$p,1) \
	&& echo y),,$(call pkg_name,$p,2)))
endif
PKG_MISSING += $(if $(shell $(CC) --version >/dev/null 2>&1 && echo y),,gcc) \
	$(if $(and $(wildcard $(LLHTTP_INC)/llhttp.h),$(wildcard $(LLHTTP_SRC)/api.c)),,node-llhttp) \
	$(if $(wildcard /usr/include/geotiff/geotiff.h /usr/include/$(TARGET_ARCH_TRIPLET)/geotiff/geotiff.h),,libgeotiff-dev)
ifneq ($(strip $(PKG_MISSING)),)
$(error missing packages: $(strip $(PKG_MISSING)). Install them with `sudo scripts/deps.sh build` \
(or `sudo apt-get install $(strip $(PKG_MISSING))`); `make run` and `make test` install \
them by themselves when run as root)
endif
endif

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS_ALL := -std=c11 $(WARN) $(OPT) -g \
	-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Icommon -Iserver -I$(BUILD)/gen \
	$(SANFLAGS) $(WORLD_LAST)
LDFLAGS_ALL := -Wl,--as-needed $(SANFLAGS) $(LDFLAGS)
LIBS    := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null || echo -luv -lzstd -lz -lcjson -lpng16 -ltiff -lcmocka -lhiredis -ljwt -lcrypto) -lgeotiff -lxxhash -lpthread -lm

ifneq ($(V),1)
Q  := @
QCC = @echo "  CC    $@";
QLD = @echo "  LD    $@";
endif

COMMON_SRC := $(wildcard common/*.c)
SERVER_SRC := $(filter-out server/service/main.c,$(wildcard server/*/*.c))
CLIENT_SRC := $(filter-out client-sample/main.c,$(wildcard client-sample/*.c))
TEST_SRC   := $(wildcard tests/unit/test_*.c)
PRESETS    := $(sort $(wildcard presets/*.json))
# the viewer's files, and the JavaScript client module it imports (/assets/terrain.js)
ASSETS     := $(sort $(wildcard server/assets/*)) clients/js/terrain.js

COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/builtin_presets.o
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o) $(if $(ASSETS),$(BUILD)/gen/assets.o)
CLIENT_OBJ := $(CLIENT_SRC:%.c=$(BUILD)/%.o)
LLHTTP_OBJ := $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o $(BUILD)/llhttp/llhttp.o
TEST_BIN   := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TESTLIB_SRC := $(filter-out tests/lib/kill_on.c,$(wildcard tests/lib/*.c))
# programs the test scripts run (tests/README.md)
TEST_PROGS := $(BUILD)/tests/kill_on $(BUILD)/bench/cluster_load

.PHONY: all deps test check run bench fuzz fuzz-long clean noopt asan check-headers help test-arm64 fresh-check \
	container-test swarm-test web FORCE
all: $(BUILD)/libcommon.a $(BUILD)/terrain-server $(BUILD)/terrain-client lib

help:
	@sed -n '2,/^$$/{/^#/p}' Makefile | sed 's/^# \{0,1\}//'

deps:
	@$(DEPS) build

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) $(HOT) -I$(LLHTTP_INC) -MMD -MP -c $< -o $@

# The generation kernels are written as loops for the vectoriser; gcc -O2
# only vectorises trivial loops, so the default build takes them to -O3.
# Results are identical at every level (tests/platform/cross-compiler.sh checks -O0).
$(BUILD)/common/noise.o $(BUILD)/common/fbm.o $(BUILD)/common/pipeline.o \
	$(BUILD)/common/pipeline_eval.o $(BUILD)/common/tilecode.o \
	$(BUILD)/common/tilecode_enc.o $(BUILD)/common/tilecode_dec.o: \
	HOT = $(if $(filter -O2,$(OPT)),-O3)

# llhttp is third-party C from Debian's node-llhttp: its own flags, no -Werror.
$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(@D)
	$(QCC)$(CC) -O2 -g -w -I$(LLHTTP_INC) $(SANFLAGS) $(WORLD_LAST) -c $< -o $@

# The server's main() under another name, for the in-process fuzz target.
$(BUILD)/fuzz/server_main.o: server/service/main.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes -Dmain=terrain_server_main -I$(LLHTTP_INC) -c $< -o $@

# Run on the build machine while building, so compiled for it (HOSTCC).
$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(@D)
	$(QCC)$(HOSTCC) -std=c11 $(WARN) -O1 $< -o $@

$(BUILD)/gen/builtin_presets.c: $(PRESETS) $(BUILD)/tools/embed
	@mkdir -p $(@D)
	$(Q)$(BUILD)/tools/embed -s .json builtin_presets $(PRESETS) > $@

$(BUILD)/gen/assets.c: $(ASSETS) $(BUILD)/tools/embed
	@mkdir -p $(@D)
	$(Q)$(BUILD)/tools/embed assets $(ASSETS) > $@

# The version and commit (server/base/buildinfo.c, client-sample/main.c):
# remade by every make, rewritten only when they change, so a new commit
# recompiles those two files.
$(BUILD)/gen/version.h: FORCE
	@mkdir -p $(@D)
	$(Q)tools/version.sh > $@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@; }
$(BUILD)/server/base/buildinfo.o $(BUILD)/client-sample/main.o: $(BUILD)/gen/version.h
FORCE:

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(QCC)$(CC) $(CFLAGS_ALL) -Wno-missing-prototypes -c $< -o $@

$(BUILD)/libcommon.a: $(COMMON_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/libserver.a: $(SERVER_OBJ) $(LLHTTP_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/libclient.a: $(CLIENT_OBJ) $(LLHTTP_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- libterrain: the core as a library (common/terrain.h, docs/library.md) ----
# The core's objects are built position-independent with hidden visibility,
# so one set of objects makes libcommon.a (what the server, the client and
# the tests link, internal symbols and all), libterrain.so (soname
# libterrain.so.$(LIB_MAJOR), exporting only terrain_*: common/terrain.map)
# and libterrain.a (the same objects linked into one and sealed to
# terrain_* by objcopy, so that a program's own symbols never clash with
# the core's). `make install PREFIX=... DESTDIR=...` copies the header,
# both libraries, terrain.pc and CMake's terrainConfig.cmake with its
# version file (paths relative to it), then runs ldconfig when it installed
# as root, without DESTDIR, into a folder of ldconfig's (tests/library/library.sh
# checks all of it).
LIB_MAJOR   := $(shell sed -n 's/^\#define TERRAIN_VERSION_MAJOR //p' common/terrain.h)
LIB_VERSION := $(LIB_MAJOR).$(shell sed -n 's/^\#define TERRAIN_VERSION_MINOR //p' common/terrain.h).$(shell sed -n 's/^\#define TERRAIN_VERSION_PATCH //p' common/terrain.h)
LIB_SO      := $(BUILD)/lib/libterrain.so.$(LIB_VERSION)
LIB_A       := $(BUILD)/lib/libterrain.a
LIB_LIBS    := -lxxhash -lcjson -lm
OBJCOPY     ?= $(if $(filter %-gcc,$(CC)),$(patsubst %-gcc,%-objcopy,$(CC)),objcopy)
PREFIX      ?= /usr/local
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
CMAKEDIR    ?= $(LIBDIR)/cmake/terrain
.PHONY: lib install-lib uninstall-lib

$(COMMON_OBJ): CFLAGS_ALL += -fPIC -fvisibility=hidden

LIB_PC_UNINSTALLED := $(BUILD)/lib/pkgconfig/terrain-uninstalled.pc
lib: $(LIB_SO) $(LIB_A) $(LIB_PC_UNINSTALLED)

# pkg-config prefers NAME-uninstalled.pc where it finds one, so that
# PKG_CONFIG_PATH=$(BUILD)/lib/pkgconfig builds against this tree (the Go
# binding's `#cgo pkg-config: terrain`, docs/library.md)
$(LIB_PC_UNINSTALLED): common/terrain.pc.in common/terrain.h
	@mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(CURDIR)|; s|@LIBDIR@|$(abspath $(BUILD)/lib)|; s|@INCLUDEDIR@|$(CURDIR)/common|' \
		-e 's|@VERSION@|$(LIB_VERSION)|' $< > $@

# clang's sanitizers leave their runtime to the executable: no -z defs there
$(LIB_SO): $(COMMON_OBJ) common/terrain.map
	@mkdir -p $(@D)
	$(QLD)$(CC) -shared -Wl,-soname,libterrain.so.$(LIB_MAJOR) \
		-Wl,--version-script=common/terrain.map $(if $(SAN),,-Wl,-z,defs) \
		$(LDFLAGS_ALL) $(COMMON_OBJ) $(LIB_LIBS) -o $@
	$(Q)ln -sf $(@F) $(@D)/libterrain.so.$(LIB_MAJOR) && ln -sf $(@F) $(@D)/libterrain.so

$(LIB_A): $(COMMON_OBJ)
	@mkdir -p $(@D)
	$(Q)$(CC) -r -nostdlib $(SANFLAGS) $(COMMON_OBJ) -o $(@D)/terrain-all.o
	$(Q)$(OBJCOPY) --localize-hidden $(@D)/terrain-all.o
	$(Q)rm -f $@ && ar rcs $@ $(@D)/terrain-all.o

install-lib: lib
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 644 common/terrain.h $(DESTDIR)$(INCLUDEDIR)/terrain.h
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libterrain.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/libterrain.so.$(LIB_MAJOR)
	ln -sf libterrain.so.$(LIB_MAJOR) $(DESTDIR)$(LIBDIR)/libterrain.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/libterrain.a
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(LIB_VERSION)|' common/terrain.pc.in \
		> $(DESTDIR)$(LIBDIR)/pkgconfig/terrain.pc
	install -d $(DESTDIR)$(CMAKEDIR)
	for f in terrainConfig terrainConfigVersion; do \
		sed -e 's|@VERSION@|$(LIB_VERSION)|g; s|@MAJOR@|$(LIB_MAJOR)|g' \
		    -e "s|@LIBREL@|$$(realpath -m --relative-to=$(CMAKEDIR) $(LIBDIR))|" \
		    -e "s|@INCREL@|$$(realpath -m --relative-to=$(CMAKEDIR) $(INCLUDEDIR))|" \
		    common/$$f.cmake.in > $(DESTDIR)$(CMAKEDIR)/$$f.cmake || exit 1; \
	done
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null && \
	    ldconfig -N -v 2>/dev/null | grep -q "^$$(realpath -m $(LIBDIR)):"; then \
		echo "ldconfig ($(LIBDIR) is one of its folders)"; ldconfig; fi

uninstall-lib:
	rm -f $(DESTDIR)$(INCLUDEDIR)/terrain.h $(DESTDIR)$(LIBDIR)/libterrain.so* \
		$(DESTDIR)$(LIBDIR)/libterrain.a $(DESTDIR)$(LIBDIR)/pkgconfig/terrain.pc \
		$(DESTDIR)$(CMAKEDIR)/terrainConfig.cmake $(DESTDIR)$(CMAKEDIR)/terrainConfigVersion.cmake
# ---- end of libterrain ----

# ---- the operator's install: the library, the programs, the service ----
# `make install` = install-lib (above) + install-server: terrain-server and
# terrain-client into BINDIR, their man pages (dist/man, kept true to
# --help by tests/platform/install.sh) into MANDIR/man1, the systemd unit
# (dist/terrain-server.service.in, its folders filled in) into
# SYSTEMDUNITDIR and its options file into SYSCONFDIR/terrain, the
# latter only when missing (an operator's edits are kept). `make
# uninstall` removes all of it, the options file only while unchanged.
# As root without DESTDIR on a machine that runs systemd, it reloads
# systemd's units. docs/operations.md, "The operator's install".
BINDIR         ?= $(PREFIX)/bin
MANDIR         ?= $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR     ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
ENV_FILE       := $(SYSCONFDIR)/terrain/terrain-server.env
.PHONY: install uninstall install-server uninstall-server man
install: install-lib install-server
uninstall: uninstall-lib uninstall-server

install-server: $(BUILD)/terrain-server $(BUILD)/terrain-client
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(SYSTEMDUNITDIR) \
		$(DESTDIR)$(SYSCONFDIR)/terrain
	install -m 755 $(BUILD)/terrain-server $(BUILD)/terrain-client $(DESTDIR)$(BINDIR)/
	install -m 644 dist/man/terrain-server.1 dist/man/terrain-client.1 $(DESTDIR)$(MANDIR)/man1/
	sed -e 's|@BINDIR@|$(BINDIR)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g' dist/terrain-server.service.in \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/terrain-server.service
	chmod 644 $(DESTDIR)$(SYSTEMDUNITDIR)/terrain-server.service
	@if [ -e $(DESTDIR)$(ENV_FILE) ]; then echo "kept $(DESTDIR)$(ENV_FILE)"; \
	else echo "install -m 640 dist/terrain-server.env $(DESTDIR)$(ENV_FILE)"; \
		install -m 640 dist/terrain-server.env $(DESTDIR)$(ENV_FILE); fi
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && [ -d /run/systemd/system ]; then \
		echo "systemctl daemon-reload"; systemctl daemon-reload; \
		echo "start it: systemctl enable --now terrain-server"; fi

uninstall-server:
	rm -f $(DESTDIR)$(BINDIR)/terrain-server $(DESTDIR)$(BINDIR)/terrain-client \
		$(DESTDIR)$(MANDIR)/man1/terrain-server.1 $(DESTDIR)$(MANDIR)/man1/terrain-client.1 \
		$(DESTDIR)$(SYSTEMDUNITDIR)/terrain-server.service
	@if [ -e $(DESTDIR)$(ENV_FILE) ] && ! cmp -s dist/terrain-server.env $(DESTDIR)$(ENV_FILE); then \
		echo "kept $(DESTDIR)$(ENV_FILE): changed since it was installed"; \
	else rm -f $(DESTDIR)$(ENV_FILE); rmdir $(DESTDIR)$(SYSCONFDIR)/terrain 2>/dev/null || true; fi

# dist/man/*.1 again from the programs' --help and --version (tools/man.sh
# rewrites the part each page marks), after a change to an option or a
# command: tests/platform/install.sh fails until then.
man: $(BUILD)/terrain-server $(BUILD)/terrain-client
	for p in terrain-server terrain-client; do \
		tools/man.sh dist/man/$$p.1 $(BUILD)/$$p >$(BUILD)/$$p.1.tmp && \
		mv $(BUILD)/$$p.1.tmp dist/man/$$p.1 || exit 1; \
	done
# ---- end of the operator's install ----

$(BUILD)/terrain-server: $(BUILD)/server/service/main.o $(BUILD)/libserver.a $(BUILD)/libcommon.a
	$(QLD)$(CC) $(LDFLAGS_ALL) $^ $(LIBS) -o $@

# the client's HTTP is libcurl's (client-sample/hclient.h); --version names the build
CLIENT_LIBS := $(shell $(PKG_CONFIG) --libs libcurl 2>/dev/null || echo -lcurl)
$(BUILD)/client-sample/main.o: $(BUILD)/gen/version.h
$(BUILD)/terrain-client: $(BUILD)/client-sample/main.o $(BUILD)/libclient.a $(BUILD)/libcommon.a
	$(QLD)$(CC) $(LDFLAGS_ALL) $^ $(CLIENT_LIBS) $(LIBS) -o $@

# The cmocka suites: tests/unit/test_NAME.c to $(BUILD)/tests/test_NAME,
# each linked with the suites' helpers (tests/lib/*.c but kill_on.c: the
# server harness, the preset fixture), of which it takes what it calls.
$(BUILD)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) -Itests/lib -I$(LLHTTP_INC) -MMD -MP -c $< -o $@

$(BUILD)/tests/libharness.a: $(TESTLIB_SRC:%.c=$(BUILD)/%.o)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(BUILD)/tests/libharness.a $(BUILD)/libserver.a \
		$(BUILD)/libclient.a $(BUILD)/libcommon.a
	$(QLD)$(CC) $(LDFLAGS_ALL) $^ $(CLIENT_LIBS) $(LIBS) -o $@

# Helper programs of the scripts: kill -9 on an inotify event
# (tests/edits/edit_compact.sh) and the edit load of the cluster tests
# (tests/cluster/*.sh, tests/edits/edit_compact.sh; bench/ may use it too).
$(BUILD)/tests/kill_on: tests/lib/kill_on.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) $< -o $@

# Each x86-64 clone of the noise kernels once more on its own, without
# target_clones and with its names suffixed (bench/variant.h), so that
# tests/unit/test_clones.c compares their bits with the library's dispatch.
ifneq ($(filter x86_64%,$(shell $(CC) -dumpmachine)),)
CLONE_OBJ := $(foreach v,base v3 v4,$(BUILD)/clones/noise_$(v).o $(BUILD)/clones/fbm_$(v).o \
	$(foreach f,tilecode tilecode_enc tilecode_dec,$(BUILD)/clones/$(f)_$(v).o))
clone_isa = $(if $(filter v3,$1),-mavx2 -mfma,$(if $(filter v4,$1),-march=x86-64-v4))
$(BUILD)/clones/noise_%.o: common/noise.c common/noise.h common/simd.h bench/variant.h
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) $(HOT) -DTERRAIN_NO_CLONES $(call clone_isa,$*) \
		-include bench/variant.h -DVARIANT=$* -c $< -o $@
$(BUILD)/clones/fbm_%.o: common/fbm.c common/fbm.h common/noise.h common/simd.h bench/variant.h
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) $(HOT) -DTERRAIN_NO_CLONES $(call clone_isa,$*) \
		-include bench/variant.h -DVARIANT=$* -c $< -o $@
# the codec's three files, renamed alike (static patterns: tilecode_%.o
# would also match tilecode_enc_v3.o)
define tilecode_clone
$$(foreach v,base v3 v4,$$(BUILD)/clones/$(1)_$$(v).o): $$(BUILD)/clones/$(1)_%.o: common/$(1).c \
		common/tilecode.h common/tilecode_int.h common/le.h common/simd.h bench/variant.h
	@mkdir -p $$(@D)
	$$(QCC)$$(CC) $$(CFLAGS_ALL) $$(HOT) -DTERRAIN_NO_CLONES $$(call clone_isa,$$*) \
		-include bench/variant.h -DVARIANT=$$* -c $$< -o $$@
endef
$(foreach f,tilecode tilecode_enc tilecode_dec,$(eval $(call tilecode_clone,$(f))))
$(BUILD)/clones/%.o: HOT = $(if $(filter -O2,$(OPT)),-O3)
$(BUILD)/tests/test_clones: $(CLONE_OBJ)
$(BUILD)/tests/test_clones.o: CFLAGS_ALL += -DHAVE_CLONES
endif

# ---- bench programs: bench/run.sh and bench/*.sh run them, never compile ----
# $(BUILD)/bench/NAME from bench/NAME.c (or .cpp, with $(CXX)): the world's
# flags and the link libraries of everything else, so a bench measures the
# code the server runs. `make bench-programs` builds every one;
# `make BUILD=dir dir/bench/edit_load` one alone (bench/lib.sh: bench_make).
# The anchors that need sources from outside are built only when they are
# there: noise_bench needs stb (libstb-dev), and takes libnoise when
# libnoise-dev and $(CXX) are there, FastNoise2 when FASTNOISE2 names its
# source folder and FastNoiseLite when FASTNOISELITE names its C header
# (below). A more specific rule for one
# program (e.g. $(BUILD)/bench/cluster_load: bench/cluster_load.c) wins over
# the pattern rules.
CXX     ?= g++
CXXFLAGS_ALL := -std=c++17 -Wall -Wextra $(OPT) -g -Icommon -Ibench $(SANFLAGS) $(WORLD_LAST)
HAVE_STB      := $(wildcard /usr/include/stb/stb_perlin.h)
HAVE_LIBNOISE := $(and $(shell command -v $(CXX) 2>/dev/null),$(wildcard /usr/include/libnoise/noise.h))
BENCH_SRC   := $(filter-out bench/bench.c $(if $(HAVE_STB),,bench/noise_bench.c),$(wildcard bench/*.c))
BENCH_PROGS := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%) $(BUILD)/bench/wasm_native_scalar
BENCH_LIB   := $(BUILD)/bench/libbench.a
.PHONY: bench-programs
bench-programs: $(BENCH_PROGS)

$(BENCH_LIB): $(BUILD)/bench/bench.o
	$(Q)rm -f $@ && ar rcs $@ $^

# BENCH_EXTRA: a program's own objects and flags (target-specific, below)
$(BUILD)/bench/%: bench/%.c $(BENCH_LIB) $(BUILD)/libserver.a $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(QLD)$(CC) $(CFLAGS_ALL) -I$(LLHTTP_INC) -MMD -MP -MF $@.d -MT $@ $< $(BENCH_EXTRA) \
		$(BENCH_LIB) $(BUILD)/libserver.a $(BUILD)/libcommon.a $(LDFLAGS_ALL) $(LIBS) -o $@

$(BUILD)/bench/%: bench/%.cpp $(BENCH_LIB) $(BUILD)/libcommon.a
	@mkdir -p $(@D)
	$(QLD)$(CXX) $(CXXFLAGS_ALL) -MMD -MP -MF $@.d -MT $@ $< $(BENCH_EXTRA) \
		$(BENCH_LIB) $(BUILD)/libcommon.a $(LDFLAGS_ALL) $(LIBS) -o $@

# noise_bench times each x86-64 clone of the noise kernels by name (the
# objects test_clones compares, above) beside the library's dispatch.
ifneq ($(CLONE_OBJ),)
BENCH_VARIANT_OBJ := $(filter $(BUILD)/clones/noise_% $(BUILD)/clones/fbm_%,$(CLONE_OBJ))
endif
# size_bench's LERC anchor: liblerc (liblerc-dev), when it is there.
HAVE_LERC := $(wildcard /usr/include/Lerc_c_api.h)
$(BUILD)/bench/size_bench: BENCH_EXTRA = $(if $(HAVE_LERC),-DHAVE_LERC -lLerc)

# libnoise (libnoise-dev) through its C face, bench/libnoise.cpp.
NOISE_LIBNOISE := $(if $(HAVE_LIBNOISE),$(BUILD)/bench/libnoise.o)
$(BUILD)/bench/noise_bench: $(BENCH_VARIANT_OBJ) $(NOISE_LIBNOISE) $(BUILD)/bench/fastnoise2.flags \
	$(BUILD)/bench/fastnoiselite.flags
$(BUILD)/bench/noise_bench: BENCH_EXTRA = $(if $(BENCH_VARIANT_OBJ),-DHAVE_VARIANTS $(BENCH_VARIANT_OBJ)) \
	$(if $(NOISE_LIBNOISE),-DHAVE_LIBNOISE $(NOISE_LIBNOISE) -lnoise -lstdc++) \
	$$(cat $(BUILD)/bench/fastnoise2.flags) $$(cat $(BUILD)/bench/fastnoiselite.flags)
$(BUILD)/bench/libnoise.o: bench/libnoise.cpp bench/libnoise.h
	@mkdir -p $(@D)
	$(QCC)$(CXX) $(CXXFLAGS_ALL) -MMD -MP -c $< -o $@

# FastNoise2, noise_bench's other anchor: FASTNOISE2=DIR its source folder
# outside this repository, FASTSIMD=DIR its FastSIMD at the commit its
# src/CMakeLists.txt names (default FASTNOISE2/../FastSIMD). Its own CMake
# builds them into $(BUILD)/bench/fastnoise2, never downloading; the file
# fastnoise2.flags holds what noise_bench then links (nothing when the
# anchor is skipped: make says why, and so does fastnoise2.skip, which
# bench/run.sh prints). FASTNOISE2_DIR and FASTSIMD_DIR, the names
# bench/run.sh read, still work. FastNoise2 picks its SIMD level at run time
# (bench/fastnoise2.cpp), so one build runs on any x86-64 CPU.
FASTNOISE2 ?= $(FASTNOISE2_DIR)
FASTSIMD   ?= $(or $(FASTSIMD_DIR),$(FASTNOISE2)/../FastSIMD)
FN2_DIR    := $(BUILD)/bench/fastnoise2
$(BUILD)/bench/fastnoise2.flags: bench/fastnoise2.cpp bench/fastnoise2.h FORCE
	@mkdir -p $(@D)
	$(Q)flags= why=; \
	if [ -z "$(FASTNOISE2)" ]; then why="FASTNOISE2 is not set (its source folder: bench/run.sh)"; \
	elif [ ! -f "$(FASTNOISE2)/CMakeLists.txt" ] || [ ! -f "$(FASTSIMD)/CMakeLists.txt" ] || \
		! command -v cmake >/dev/null; then \
		why="need cmake, $(FASTNOISE2) and FastSIMD in $(FASTSIMD) (FASTSIMD)"; \
	else \
		commit=$$(git -C "$(FASTNOISE2)" rev-parse --short=12 HEAD 2>/dev/null || \
			cat "$(FASTNOISE2)/.commit" 2>/dev/null || echo unknown); \
		echo "  CMAKE FastNoise2 ($$commit) from $(FASTNOISE2) into $(FN2_DIR)"; \
		if ! { cmake -S "$(FASTNOISE2)" -B $(FN2_DIR) -DCMAKE_BUILD_TYPE=Release \
			-DBUILD_SHARED_LIBS=OFF -DFASTNOISE2_TOOLS=OFF -DFASTNOISE2_TESTS=OFF \
			-DCPM_FastSIMD_SOURCE="$$(cd "$(FASTSIMD)" && pwd)" && \
			cmake --build $(FN2_DIR) -j "$$(nproc)"; } >$(FN2_DIR)_build.log 2>&1; then \
			why="its build failed (see $(FN2_DIR)_build.log)"; \
		elif lib=$$(find $(FN2_DIR) -name libFastNoise.a | head -n 1); [ -z "$$lib" ] || \
			! $(CXX) $(CXXFLAGS_ALL) -I"$(FASTNOISE2)/include" -I"$(FASTSIMD)/include" \
			-c bench/fastnoise2.cpp -o $(BUILD)/bench/fastnoise2.o 2>>$(FN2_DIR)_build.log; then \
			why="no libFastNoise.a or the shim failed (see $(FN2_DIR)_build.log)"; \
		else \
			flags="-DHAVE_FASTNOISE2 -DFASTNOISE2_COMMIT=\"$$commit\" $(BUILD)/bench/fastnoise2.o $$lib -lstdc++"; \
		fi; \
	fi; \
	if [ -n "$$why" ]; then echo "  SKIP  the FastNoise2 anchor: $$why"; echo "$$why" >$(@:.flags=.skip); \
	else rm -f $(@:.flags=.skip); fi; \
	echo "$$flags" >$@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@; }

# FastNoiseLite, noise_bench's third anchor: FASTNOISELITE=FILE its C header
# (C/FastNoiseLite.h of github.com/Auburn/FastNoiseLite) outside this
# repository. It is copied into $(BUILD)/bench/fnl and compiled there as its
# own translation unit (FNL_IMPL) with this build's OPT and world flags but
# not -Werror, as llhttp is: third-party code; -fwrapv, as its integer
# hashes assume (int multiplies that wrap). fastnoiselite.flags holds
# what noise_bench then links, with the header's VERSION line and the
# object's checksum (so a new object relinks it); nothing when the anchor
# is skipped, and then fastnoiselite.skip says why.
FNL_DIR := $(BUILD)/bench/fnl
$(BUILD)/bench/fastnoiselite.flags: FORCE
	@mkdir -p $(FNL_DIR)
	$(Q)flags= why=; \
	if [ -z "$(FASTNOISELITE)" ]; then why="FASTNOISELITE is not set (its C header: bench/run.sh)"; \
	elif [ ! -f "$(FASTNOISELITE)" ]; then why="no file $(FASTNOISELITE) (FASTNOISELITE)"; \
	else \
		cmp -s "$(FASTNOISELITE)" $(FNL_DIR)/FastNoiseLite.h || cp -f "$(FASTNOISELITE)" $(FNL_DIR)/FastNoiseLite.h; \
		printf '#define FNL_IMPL\n#include "FastNoiseLite.h"\n' >$(FNL_DIR)/fnl.c.tmp; \
		cmp -s $(FNL_DIR)/fnl.c.tmp $(FNL_DIR)/fnl.c && rm -f $(FNL_DIR)/fnl.c.tmp || mv -f $(FNL_DIR)/fnl.c.tmp $(FNL_DIR)/fnl.c; \
		version=$$(sed -n 's|^// *VERSION: *\([^ ]*\).*|\1|p' $(FNL_DIR)/FastNoiseLite.h | head -n 1); \
		cmd="$(CC) -std=c11 $(OPT) -g -fwrapv $(SANFLAGS) $(WORLD_LAST) -c $(FNL_DIR)/fnl.c -o $(FNL_DIR)/fnl.o"; \
		if [ $(FNL_DIR)/fnl.o -nt $(FNL_DIR)/FastNoiseLite.h ] && \
			[ "$$(cat $(FNL_DIR)/fnl.cmd 2>/dev/null)" = "$$cmd" ]; then :; \
		elif echo "  CC    FastNoiseLite $${version:-?} from $(FASTNOISELITE)" && \
			$$cmd 2>$(FNL_DIR)/build.log; then echo "$$cmd" >$(FNL_DIR)/fnl.cmd; \
		else why="it did not compile (see $(FNL_DIR)/build.log)"; fi; \
		[ -n "$$why" ] || flags="-DHAVE_FASTNOISELITE -DFASTNOISELITE_VERSION=\"$${version:-unknown}\" \
-DFASTNOISELITE_SUM=$$(cksum <$(FNL_DIR)/fnl.o | cut -d' ' -f1) -I$(FNL_DIR) $(FNL_DIR)/fnl.o"; \
	fi; \
	if [ -n "$$why" ]; then echo "  SKIP  the FastNoiseLite anchor: $$why"; echo "$$why" >$(@:.flags=.skip); \
	else rm -f $(@:.flags=.skip); fi; \
	echo "$$flags" >$@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@; }

# The server's pieces the programs run in process come from libserver.a
# (erosion_bench: tiles/regions.o; cold_bench and maps_bench: tiles/tilegen.o
# and pngenc.o; mklog: the edit log's store). wasm_native twice: with
# libcommon.a (SIMD clones, as loaded) and with common/ once more without
# target_clones (-DTERRAIN_NO_CLONES: the baseline code, "native scalar").
BENCH_SCALAR_OBJ := $(COMMON_SRC:common/%.c=$(BUILD)/scalar/%.o) $(BUILD)/scalar/builtin_presets.o
$(BUILD)/scalar/%.o: common/%.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) -DTERRAIN_NO_CLONES -MMD -MP -c $< -o $@
$(BUILD)/scalar/builtin_presets.o: $(BUILD)/gen/builtin_presets.c
	@mkdir -p $(@D)
	$(QCC)$(CC) $(CFLAGS_ALL) -DTERRAIN_NO_CLONES -Wno-missing-prototypes -c $< -o $@
$(BUILD)/bench/wasm_native_scalar: bench/wasm_native.c $(BENCH_LIB) $(BENCH_SCALAR_OBJ)
	$(QLD)$(CC) $(CFLAGS_ALL) $< $(BENCH_SCALAR_OBJ) $(BENCH_LIB) $(LDFLAGS_ALL) $(LIBS) -o $@
# ---- end of bench programs ----

tests: all $(TEST_BIN) $(TEST_PROGS)
.PHONY: tests
# keep test objects between runs (they are intermediates of the pattern rule)
.SECONDARY:

# Runs every cmocka binary and every tests/SUBJECT/*.sh against $(BUILD).
check: tests
	@BUILD=$(BUILD) RUN_ONCE=$(RUN_ONCE) SCRIPTS=$(SCRIPTS) tests/run.sh $(TEST_BIN)

# make test: the gcc build, then one pool of TEST_JOBS (tests/run.sh) that
# makes the clang and ASan builds beside the gcc suites and runs each
# build's suites once it is made: gcc everything, clang its test binaries
# (and the gcc/clang tile comparison), ASan/UBSan everything but the
# "# run: once" scripts. Suites wait on servers and sockets much of the
# time, so the pool runs one more than the cores.
CORES := $(shell nproc 2>/dev/null || echo 2)
TEST_JOBS ?= $(shell echo $$(( $(CORES) + 1 )))
test:
	@$(DEPS) test
	@$(MAKE) --no-print-directory -j$(CORES) test-build-gcc
	JOBS=$(TEST_JOBS) tests/run.sh --pass build \
		--pass build-clang:binaries:CC=clang \
		--prepare '$(MAKE) --no-print-directory -j$(CORES) BUILD=build-clang CC=clang tests' \
		--pass build-asan:repeat:SAN=1 \
		--prepare '$(MAKE) --no-print-directory -j$(CORES) BUILD=build-asan SAN=1 OPT=-O1 tests' \
		--cross build,build-clang

test-builds: test-build-gcc test-build-clang test-build-asan
test-build-gcc:
	+@$(MAKE) --no-print-directory BUILD=build tests
test-build-clang:
	+@$(MAKE) --no-print-directory BUILD=build-clang CC=clang tests
test-build-asan:
	+@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 OPT=-O1 tests
.PHONY: test-builds test-build-gcc test-build-clang test-build-asan

# deps, then a new make: one that read the file system before the packages
# were installed would miss llhttp's sources (tests/platform/first_run.sh).
run:
	@$(DEPS) build
	@$(MAKE) --no-print-directory all
	$(BUILD)/terrain-server serve $(RUN_ARGS)

# The bench's packages first (scripts/deps.sh bench); without some of them
# (not root, or not in this Debian) the run goes on and the anchors they
# bring are skipped, each with a line. bench/run.sh builds the bench
# programs itself (make -k bench-programs), so one that cannot be built
# skips its section instead of stopping the run.
bench:
	@$(DEPS) bench || echo "make bench: scripts/deps.sh bench failed (above): the anchors" \
		"whose packages are missing are skipped"
	$(MAKE) BUILD=build-bench OPT="-O3" all
	bench/run.sh build-bench

# three.js, MapLibre GL JS and Leaflet at the versions of clients/web's
# lockfile, into clients/web/node_modules, where the pages import them from:
# then the pages need no CDN (docs/maps.md).
web:
	cd clients/web && npm ci --no-audit --no-fund

noopt:
	$(MAKE) BUILD=build-noopt OPT=-O0

asan:
	$(MAKE) BUILD=build-asan SAN=1 OPT=-O1

FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# the fuzz targets' own compile line: the house's warnings, the world's flags
FUZZ_CFLAGS := -std=c11 $(WARN) -O1 -g $(FUZZ_SAN) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
	-Icommon -Iserver -I$(LLHTTP_INC) $(WORLD_FLAGS)
fuzz:
	@$(DEPS) test
	$(MAKE) BUILD=build-fuzz CC=clang OPT=-O1 \
		CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all" \
		build-fuzz/libcommon.a build-fuzz/libserver.a build-fuzz/fuzz/server_main.o
	$(MAKE) BUILD=build-fuzz/gen CC=clang OPT=-O2 \
		CFLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-coverage=trace-cmp -fno-sanitize-recover=all" \
		build-fuzz/gen/libcommon.a
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_tile.c \
		build-fuzz/libcommon.a -lxxhash -lzstd -lcjson -lm -o build-fuzz/fuzz_tile
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_http.c build-fuzz/fuzz/server_main.o build-fuzz/libserver.a \
		build-fuzz/libcommon.a $(LIBS) -o build-fuzz/fuzz_http
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_http_mem.c build-fuzz/libserver.a \
		build-fuzz/gen/libcommon.a $(LIBS) -o build-fuzz/fuzz_http_mem
	clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_edit.c \
		build-fuzz/libcommon.a -lxxhash -lzstd -lcjson -lm -o build-fuzz/fuzz_edit
	@mkdir -p build-fuzz/corpus build-fuzz/corpus-http build-fuzz/corpus-http-mem
	@echo "run: build-fuzz/fuzz_tile -max_total_time=60 build-fuzz/corpus"
	@echo "     build-fuzz/fuzz_http -dict=tests/fuzz/fuzz_http.dict -max_total_time=600 build-fuzz/corpus-http tests/fuzz/fuzz_http"
	@echo "     build-fuzz/fuzz_http_mem -dict=tests/fuzz/fuzz_http_mem.dict -max_total_time=600 build-fuzz/corpus-http-mem tests/fuzz/fuzz_http_mem"
	@echo "     build-fuzz/fuzz_edit -dict=tests/fuzz/fuzz_edit.dict -max_total_time=60 tests/fuzz/fuzz_edit"
	@echo "or:  make fuzz-long FUZZ_TIME=3600 (every target, its corpus kept in fuzz-corpus/)"

# Every fuzz target for FUZZ_TIME seconds each, all at once under nice
# (FUZZ_NICE), each with its corpus in fuzz-corpus/NAME: outside the build
# folders, kept by make clean and by git (.gitignore), so each run starts
# where the last stopped; FUZZ_RUNS=N also stops each after N executions;
# FUZZ_JOBS=N runs N processes of each (FUZZ_ONLY=NAME picks targets).
# Counts go to fuzz-corpus/runs.log.
FUZZ_TIME ?= 3600
FUZZ_RUNS ?=
FUZZ_NICE ?= 19
FUZZ_JOBS ?= 1
fuzz-long: fuzz
	FUZZ_TIME=$(FUZZ_TIME) FUZZ_NICE=$(FUZZ_NICE) FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_JOBS=$(FUZZ_JOBS) \
		scripts/fuzz-long.sh build-fuzz fuzz-corpus

# arm64: cross build into build-arm64, tiles under qemu-user against $(BUILD).
test-arm64:
	@$(DEPS) arm64
	$(MAKE) --no-print-directory BUILD=$(BUILD) all
	$(MAKE) --no-print-directory BUILD=build-arm64 CC=aarch64-linux-gnu-gcc all
	$(MAKE) --no-print-directory BUILD=build-arm64 CC=aarch64-linux-gnu-gcc build-arm64/tests/test_selfcheck
	bash tests/platform/arm64.sh $(BUILD) build-arm64

# make run and make test from a clean `git archive` of HEAD in a Debian 12
# chroot (debootstrap; needs root and the Debian mirror). FRESH_ARGS: e.g. --test.
fresh-check:
	@$(DEPS) fresh-check
	bash tests/platform/fresh-debian.sh $(FRESH_ARGS)

# docker/compose.cluster.yaml built from a debootstrapped base, started,
# loaded, put through Redis and node faults and checked, then torn down
# (scripts/container-test.sh: exit 77 without a Docker engine, 1 for a failed
# check; make reports either as its own exit 2, so .ci/run calls the script).
container-test:
	scripts/container-test.sh

# docker/stack.yaml on a swarm of this one engine (docker swarm init on
# 127.0.0.1, deploy, scaling under an edit load, stack rm, swarm leave);
# the same exits as container-test (scripts/swarm-test.sh).
swarm-test:
	scripts/swarm-test.sh

check-headers:
	@for h in common/*.h server/*/*.h client-sample/*.h; do \
		[ -f "$$h" ] || continue; \
		echo "#include \"$$h\"" | $(CC) $(CFLAGS_ALL) -I. -I$(LLHTTP_INC) -Iserver -x c -fsyntax-only - || exit 1; \
	done; echo "headers: ok"

clean:
	rm -rf build build-clang build-asan build-noopt build-bench build-fuzz build-arm64 clients/js/terrain.wasm

# make wasm: the core for WebAssembly (clients/js/wasm/wasm.mk)
include clients/js/wasm/wasm.mk

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
# The unit suites were tests/test_NAME.c before tests/unit/ (issue 37): the
# dependency files of an older build folder still name them. Nothing makes
# them; their objects are made again from tests/unit/.
$(TEST_SRC:tests/unit/%=tests/%): ;
