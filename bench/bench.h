/*
 * bench.h - timing and helpers shared by the bench programs (not part of
 * the product; see bench/run.sh).
 *
 * A figure is measured as: one warm-up call, then batches of calls, the
 * batch doubled until it lasts BENCH_BATCH_S; then BENCH_BATCHES batches,
 * reporting the median seconds per call. Figures that are compared with
 * each other are measured together, their batches interleaved, so a burst
 * of load on the (shared) machine hits them alike. Time is this thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID), so other processes do not count,
 * though they still disturb caches and clocks.
 *
 * The programs print tab-separated rows: the first row is the header; a
 * line starting with "note: " is a remark that run.sh prints under the
 * table.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BENCH_BATCH_S 0.04   /* seconds per batch, at least */
#define BENCH_BATCHES 7      /* batches per figure: the median is reported */
#define BENCH_CHUNKS 16      /* chunks in bench_chunk()'s list */

/* This thread's CPU time in seconds. */
double bench_now(void);

/* Median of v[0..n) (sorts v). */
double bench_median(double *v, size_t n);

/* One figure: calls of fn(arg). */
struct bench_fig {
	void (*fn)(void *arg);
	void *arg;
};

/* Median seconds per call of each of f[0..n) into sec[0..n), measured as
 * described above with the batches of the n figures interleaved. */
void bench_times(const struct bench_fig *f, size_t n, double *sec);

/* Median seconds per call of fn(arg) alone. */
double bench_time(void (*fn)(void *arg), void *arg);

/* Chunk k (0..BENCH_CHUNKS-1) of a fixed, scattered list of distinct chunk
 * coordinates within +-4096 chunks of the origin. */
void bench_chunk(unsigned k, int32_t *cx, int32_t *cz);

/* Keep a computed value alive so the compiler cannot drop its work. */
void bench_keep(double v);

/* The 1-minute load average (/proc/loadavg) now, -1 when it cannot be
 * read: printed beside a figure as the load it ran at. */
double bench_loadavg(void);

/* Print msg and the error text to stderr and exit(1). */
void bench_die(const char *msg, int code);

#ifdef __cplusplus
}
#endif

#endif
