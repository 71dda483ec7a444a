/*
 * edits_read.h - GET /v1/worlds/{seed}/edits: the log of a world, read in
 * order after a sequence number, or looked up by author, time range and
 * point (docs/edits.md, "Read the log"). Part of the edits module
 * (edits.h); loop thread only.
 */
#ifndef EDITS_READ_H
#define EDITS_READ_H

#include <stdint.h>

struct req;
struct world;

/* Answer q from w (NULL: a world without edits) whose last sequence
 * number and hash are seq and hash. 0 (answered) or an HTTP status / ERR_*
 * with q->detail. */
int edits_read(struct req *q, const struct world *w, uint64_t seq, uint64_t hash);

#endif
