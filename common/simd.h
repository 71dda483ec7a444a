/*
 * simd.h - CLONES: build a function for x86-64-v4 (AVX-512), for AVX2 and
 * for the baseline x86-64, picked when the program loads (gcc and clang
 * target_clones). The clones run the same IEEE operations in the same order
 * (no FMA contraction, see the Makefile), so they give the same bits; the
 * wider ones only do more lanes at once. bench/noise_bench checks the three
 * against each other bit for bit (bench/variant.h builds each on its own).
 * Empty on other machines and under AddressSanitizer.
 */
#ifndef SIMD_H
#define SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
	!defined(TERRAIN_NO_CLONES)
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#define SIMD_CLONES "x86-64-v4,avx2,default" /* for build info */
/* The same for integer code (the tile codec): its middle clone is
 * x86-64-v3, AVX2 with BMI1/2 and LZCNT (shifts and masks by a count in a
 * register, in one instruction each). */
#define CLONES_INT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CLONES
#define CLONES_INT
#define SIMD_CLONES "none"
#endif

/* Inline into each clone, so the clone's instruction set reaches it. */
#define CLONE_INLINE static inline __attribute__((always_inline))

#endif
