/*
 * progress.h - a progress line for the long commands (fetch, export,
 * swarm) on a terminal:
 *
 *   terrain-client: fetch: tiles 120/441 (27%), 310/s, 1.0 s left
 *
 * redrawn in place on stderr (carriage return, erase to the end of the
 * line) at most every PROGRESS_EVERY_MS, and ended with a newline when a
 * stage ends, so each stage leaves one line with its total and time. Off,
 * printing nothing, when stderr is not a terminal or the command has
 * --quiet: logs and pipes get only the commands' summaries on stdout.
 * The caller owns the struct; nothing is allocated.
 *
 *   struct progress pr;
 *   progress_init(&pr, "export", progress_wanted(o.quiet));
 *   progress_stage(&pr, "tiles", n);
 *   ... progress_set(&pr, done, NULL); ...
 *   progress_end(&pr);
 */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#define PROGRESS_EVERY_MS 100

struct progress {
	const char *cmd;      /* "fetch" */
	const char *what;     /* the stage: "tiles", "writing map.png (rows)" */
	double done, total;
	int decimals;         /* of done and total (0: counts) */
	int rate;             /* print done per second */
	int on, drawn;        /* printing at all; a line is open */
	uint64_t t0, last;    /* ns (uv_hrtime): the stage's start, last drawn */
	char note[96];        /* the last note given */
};

/* Whether to show progress: stderr is a terminal and not quiet. */
int progress_wanted(int quiet);

/* Start p for command cmd ("fetch"); on 0: every call does nothing. */
void progress_init(struct progress *p, const char *cmd, int on);

/* End the current stage's line (if any) and start stage what (a string
 * that outlives the stage) of total units, counted in whole units with
 * a rate. */
void progress_stage(struct progress *p, const char *what, double total);

/* The same for a stage counted with decimals and no rate (swarm's
 * seconds of walking). */
void progress_stage_fmt(struct progress *p, const char *what, double total, int decimals,
			int rate);

/* done units of the stage are done; note (or NULL) is added to the line.
 * Redraws when PROGRESS_EVERY_MS passed since the last time, or at the end. */
void progress_set(struct progress *p, double done, const char *note);

/* Draw the stage's last state and end its line with a newline. */
void progress_end(struct progress *p);

/* "1.2 s", "47 s", "3 min 05 s" of seconds into buf (cap bytes). */
void progress_time(double seconds, char *buf, size_t cap);

#endif
