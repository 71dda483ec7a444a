/*
 * revert.h - reverts: log entries that take earlier edits out of a world.
 *
 * A revert is an entry of the edit log with its own sequence number. From
 * it on, every edit before it that its filter matches no longer counts:
 * the heights are those of the log without them. An undo is an entry that
 * cancels an earlier revert (the edits count again unless another revert
 * still takes them out). Whether an edit counts is a function of the log
 * alone, so every party that applies the log (the server, libterrain, the
 * WebAssembly build, the clients) gets the same heights and hashes.
 *
 * A filter matches edit seq of a batch by author at time_ms when every
 * field it has matches: author equal; since_ms <= time_ms <= until_ms;
 * the brush centre inside the area (closed rectangle, millimetres);
 * seq_from <= seq <= seq_to. And always floor <= seq < the revert's own
 * sequence number: floor is the oldest edit it may reach, written in by
 * the node that accepted it (the history window, docs/edits.md).
 *
 * Canonical bytes (REVERT_WIRE, little-endian): u8 op, u8 has, u8
 * author_len, author (64 bytes, zero-padded), i64 since_ms, i64 until_ms,
 * i64 x0_mm, z0_mm, x1_mm, z1_mm, u64 seq_from, u64 seq_to, u64 undo,
 * u64 floor, u64 history_ms, 8 zero bytes. Fields a filter lacks are 0.
 *
 * Where a revert or an undo reaches, on every party alike: from the
 * largest of its floor, the first edit the log took within history_ms
 * before the entry itself (by the log's times: revert_reach()), and the
 * first edit after the party's snapshot. A snapshot keeps the edits of
 * the last --history one by one (snapshots.h), so the three agree on every
 * node whose snapshot was cut with the same --history. Pure code.
 */
#ifndef REVERT_H
#define REVERT_H

#include <stddef.h>
#include <stdint.h>

struct edit;

#define REVERT_WIRE 163
#define REVERT_AUTHOR_MAX 64

enum revert_op { REVERT_REVERT = 0, REVERT_UNDO = 1 };

/* Filter fields present (struct revert.has). */
enum {
	REVERT_HAS_AUTHOR = 1,
	REVERT_HAS_SINCE = 2,
	REVERT_HAS_UNTIL = 4,
	REVERT_HAS_AREA = 8,
	REVERT_HAS_SEQ_FROM = 16,
	REVERT_HAS_SEQ_TO = 32,
	REVERT_HAS_ALL = 63
};

struct revert {
	uint8_t op;                  /* enum revert_op */
	uint8_t has;                 /* REVERT_HAS_*: at least one for a revert */
	uint8_t author_len;          /* 1..64 with REVERT_HAS_AUTHOR, else 0 */
	char author[REVERT_AUTHOR_MAX];
	int64_t since_ms, until_ms;  /* log time, ms since 1970 */
	int64_t x0_mm, z0_mm, x1_mm, z1_mm; /* x0 <= x1, z0 <= z1 */
	uint64_t seq_from, seq_to;
	uint64_t undo;               /* REVERT_UNDO: the revert it cancels */
	uint64_t floor;              /* the oldest edit it may reach (>= 1) */
	uint64_t history_ms;         /* and only edits the log took within this
					before it (0: no such bound) */
};

/*
 * Parse a POST body: a filter {"author": "...", "since_time": MS,
 * "until_time": MS, "area": [x0, z0, x1, z1], "seq_from": N, "seq_to": N}
 * (any combination, at least one), or {"undo": SEQ}. Strict JSON as
 * edit_parse_batch(). "floor" and "history_ms", which the log's JSON shows
 * and the node that takes a revert sets, are read too (a client rebuilding
 * a record from the log needs them; the server refuses them in a POST);
 * else they are 0. Returns 0, or
 * ERR_PARSE / ERR_RANGE with err naming the field.
 */
int revert_parse(const char *json, size_t len, struct revert *r, char *err, size_t errlen);

/* 1 when author is 1..64 of [A-Za-z0-9_.@-], else 0. */
int revert_author_ok(const char *s, size_t n);

/* Canonical bytes, and back (0 or ERR_CORRUPT for a value out of range). */
void revert_encode(const struct revert *r, uint8_t out[REVERT_WIRE]);
int revert_decode(const uint8_t *in, size_t len, struct revert *r);

/*
 * Whether filter r (a REVERT_REVERT at sequence number self) takes out
 * edit e, sequence number seq, of a batch by author (n bytes) at time_ms.
 */
int revert_matches(const struct revert *r, uint64_t self, uint64_t seq, const struct edit *e,
		   const char *author, size_t n, uint64_t time_ms);

/* Add r's fields to a cJSON object (void *: cJSON is not in this header):
 * "revert": {filter} or "undo": SEQ. 0 or ERR_NOMEM. */
int revert_to_json(const struct revert *r, void *obj);

#endif
