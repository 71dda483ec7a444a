/*
 * progress.c - the progress line of the long commands (progress.h).
 */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli.h"

int progress_wanted(int quiet)
{
	return !quiet && isatty(STDERR_FILENO);
}

void progress_init(struct progress *p, const char *cmd, int on)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->on = on;
}

void progress_stage_fmt(struct progress *p, const char *what, double total, int decimals,
			int rate)
{
	if (p->drawn)
		progress_end(p);
	p->what = what;
	p->total = total;
	p->done = 0;
	p->decimals = decimals;
	p->rate = rate;
	p->t0 = uv_hrtime();
	p->last = 0;
	p->note[0] = '\0';
}

void progress_stage(struct progress *p, const char *what, double total)
{
	progress_stage_fmt(p, what, total, 0, 1);
}

void progress_time(double s, char *buf, size_t cap)
{
	if (s < 10)
		snprintf(buf, cap, "%.1f s", s);
	else if (s < 60)
		snprintf(buf, cap, "%.0f s", s);
	else
		snprintf(buf, cap, "%d min %02d s", (int)(s / 60), (int)s % 60);
}

/* Append to line (cap bytes, n used) what fmt makes; the new length. */
static size_t add(char *line, size_t cap, size_t n, const char *fmt, double a, double b)
{
	int k;

	if (n >= cap)
		return n;
	k = snprintf(line + n, cap - n, fmt, a, b);
	return k < 0 ? n : n + (size_t)k;
}

static void draw(struct progress *p, uint64_t now)
{
	double secs = (double)(now - p->t0) / 1e9;
	char line[320], t[32];
	int n0 = snprintf(line, sizeof(line), CLI_PROG ": %s: %s %.*f/%.*f", p->cmd, p->what,
			  p->decimals, p->done, p->decimals, p->total);
	size_t n = n0 < 0 ? 0 : (size_t)n0;

	if (p->total > 0)
		n = add(line, sizeof(line), n, " (%.0f%%)", 100 * p->done / p->total, 0);
	if (p->rate && secs > 0)
		n = add(line, sizeof(line), n, ", %.0f/s", p->done / secs, 0);
	if (p->note[0] && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, ", %s", p->note);
	if (p->done >= p->total) {
		progress_time(secs, t, sizeof(t));
		if (n < sizeof(line))
			snprintf(line + n, sizeof(line) - n, ", in %s", t);
	} else if (p->done > 0 && secs > 0) {
		progress_time((p->total - p->done) * secs / p->done, t, sizeof(t));
		if (n < sizeof(line))
			snprintf(line + n, sizeof(line) - n, ", %s left", t);
	}
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->drawn = 1;
	p->last = now;
}

void progress_set(struct progress *p, double done, const char *note)
{
	uint64_t now;

	if (!p->on || !p->what)
		return;
	p->done = done;
	if (note)
		snprintf(p->note, sizeof(p->note), "%s", note);
	now = uv_hrtime();
	if (done >= p->total || !p->last || now - p->last >= PROGRESS_EVERY_MS * UINT64_C(1000000))
		draw(p, now);
}

void progress_end(struct progress *p)
{
	if (!p->on || !p->what)
		return;
	if (!p->drawn || p->done < p->total)
		draw(p, uv_hrtime());  /* else the line shows the end already */
	fputs("\n", stderr);
	fflush(stderr);
	p->drawn = 0;
	p->what = NULL;
}
