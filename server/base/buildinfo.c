/*
 * buildinfo.c - the build's figures (see buildinfo.h). version.h is made
 * by the Makefile from tools/version.sh on every make and rewritten only
 * when it changes, so this file alone recompiles after a commit.
 */
#include "buildinfo.h"

#include "preset.h"
#include "simd.h"
#include "tile.h"
#include "version.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#if defined(__clang__)
#define COMPILER "clang " STR(__clang_major__) "." STR(__clang_minor__) "." \
	STR(__clang_patchlevel__)
#elif defined(__GNUC__)
#define COMPILER "gcc " STR(__GNUC__) "." STR(__GNUC_MINOR__) "." STR(__GNUC_PATCHLEVEL__)
#else
#define COMPILER "unknown"
#endif

#if defined(__x86_64__)
#define ARCH "x86_64"
#elif defined(__aarch64__)
#define ARCH "aarch64"
#else
#define ARCH "unknown"
#endif

static const struct buildinfo info = {
	BUILD_VERSION, BUILD_COMMIT, COMPILER, ARCH, SIMD_CLONES, PRESET_ALGO_VERSION,
	STR(TILE_VERSION) "," STR(TILE_VERSION_LAYERS),
};

const struct buildinfo *buildinfo_get(void)
{
	return &info;
}
