/*
 * bench.c - timing and helpers shared by the bench programs (bench.h).
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "err.h"

static volatile double keep_sink;

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	if (n == 0)
		return 0.0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Seconds for `calls` calls of fn(arg). */
static double batch(void (*fn)(void *arg), void *arg, unsigned long calls)
{
	double t0 = bench_now();
	unsigned long i;

	for (i = 0; i < calls; i++)
		fn(arg);
	return bench_now() - t0;
}

/* Calls per batch of f: doubled until a batch lasts BENCH_BATCH_S. */
static unsigned long calibrate(const struct bench_fig *f)
{
	unsigned long calls = 1;

	f->fn(f->arg);                             /* warm-up */
	while (batch(f->fn, f->arg, calls) < BENCH_BATCH_S)
		calls *= 2;
	return calls;
}

void bench_times(const struct bench_fig *f, size_t n, double *sec)
{
	unsigned long *calls = malloc(n * sizeof(*calls));
	double *t = malloc(n * BENCH_BATCHES * sizeof(*t));
	size_t i;
	int b;

	if (!calls || !t)
		bench_die("out of memory", ERR_NOMEM);
	for (i = 0; i < n; i++)
		calls[i] = calibrate(&f[i]);
	for (b = 0; b < BENCH_BATCHES; b++)
		for (i = 0; i < n; i++)
			t[i * BENCH_BATCHES + b] =
				batch(f[i].fn, f[i].arg, calls[i]) / (double)calls[i];
	for (i = 0; i < n; i++)
		sec[i] = bench_median(t + i * BENCH_BATCHES, BENCH_BATCHES);
	free(calls);
	free(t);
}

double bench_time(void (*fn)(void *arg), void *arg)
{
	struct bench_fig f = { fn, arg };
	double sec;

	bench_times(&f, 1, &sec);
	return sec;
}

/* splitmix64: a fixed, well-mixed sequence for the chunk list. */
static uint64_t next(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

void bench_chunk(unsigned k, int32_t *cx, int32_t *cz)
{
	static int32_t list[BENCH_CHUNKS][2];
	static int ready;
	uint64_t s = 0x7e77a1u;
	unsigned i, j;

	if (!ready) {
		for (i = 0; i < BENCH_CHUNKS; i++) {
			int dup;

			do {
				list[i][0] = (int32_t)(next(&s) % 8192) - 4096;
				list[i][1] = (int32_t)(next(&s) % 8192) - 4096;
				dup = 0;
				for (j = 0; j < i; j++)
					dup |= list[j][0] == list[i][0] &&
					       list[j][1] == list[i][1];
			} while (dup);
		}
		ready = 1;
	}
	*cx = list[k % BENCH_CHUNKS][0];
	*cz = list[k % BENCH_CHUNKS][1];
}

void bench_keep(double v)
{
	keep_sink += v;
}

double bench_loadavg(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double load = -1.0;

	if (f) {
		if (fscanf(f, "%lf", &load) != 1)
			load = -1.0;
		fclose(f);
	}
	return load;
}

void bench_die(const char *msg, int code)
{
	fprintf(stderr, "bench: %s: %s\n", msg, code < 0 ? err_str(code) : "failed");
	exit(1);
}
