/*
 * buildinfo.h - what this binary is: its release version (common/terrain.h)
 * and commit (git at build time; tools/version.sh), the compiler that built it, the machine
 * and SIMD clones it targets, and the format versions it speaks. Read by
 * /metrics (terrain_build_info) and `terrain-server version`.
 */
#ifndef BUILDINFO_H
#define BUILDINFO_H

struct buildinfo {
	const char *version;    /* the release, TERRAIN_VERSION_MAJOR.MINOR.PATCH
				   of common/terrain.h: "1.2.0" */
	const char *commit;     /* 12 hex digits of HEAD, "-dirty" after them
				   for a changed work tree; TERRAIN_COMMIT at
				   build time outside git, else "unknown" */
	const char *compiler;   /* "gcc 12.2.0", "clang 14.0.6" */
	const char *arch;       /* "x86_64", "aarch64" */
	const char *simd;       /* the noise kernels' clones (simd.h), or "none" */
	int algorithm_version;  /* PRESET_ALGO_VERSION */
	const char *tile_formats; /* tile format versions served: "1,2" */
};

/* The build's figures (static, never NULL). */
const struct buildinfo *buildinfo_get(void);

#endif
