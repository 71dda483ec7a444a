/*
 * editlog.h - a client's copy of one world's edit log (docs/edits.md).
 *
 * The edits 1..n in order, the world hash after each of them (the chain
 * edit_hash_start() / edit_hash_next() of common/edit.h, so any prefix of
 * the log can be compared with what the server says), and an index from
 * chunk to its edit version (the sequence number of the last edit touching
 * it), which is what the header of a served tile must carry.
 *
 * The log grows from pages of GET /v1/worlds/{seed}/edits?since=n: each
 * edit object, less its "seq", "author", "time" and "reverted", goes
 * through edit_parse_batch(), the parser the server used, so the integers
 * (and the hash) are the server's by construction. An entry with an author
 * (a version-3 record) chains the world hash with batch_link() (batch.h)
 * over its seq, time, author and canonical bytes, one without with
 * edit_hash_next(). Revert and undo entries ({"revert": {filter, "floor"}}
 * or {"undo": S, "floor": F}) are rebuilt with revert_parse() and
 * revert_encode() for the hash, and applied as the server does
 * (server/worlds/world_revert.c): the chunks of the edits that start or stop
 * counting get the revert's seq as their version. Caveat: the JSON shows
 * no time for a version-2 record, so a time filter sees 0 for those.
 * Pure code: the caller fetches the pages.
 */
#ifndef EDITLOG_H
#define EDITLOG_H

#include <stddef.h>
#include <stdint.h>

struct edit;
struct revert;

/* Besides the edit: who and when (version-3 records), and reverts. */
struct editlog_entry {
	uint8_t kind;         /* 0: an edit, 1: a revert or an undo */
	uint8_t author_len;   /* 0: an old record (versions 1, 2): no author */
	uint8_t undone;       /* a revert that an undo cancelled */
	char author[64];
	uint64_t time_ms;     /* the log's time (0 when not said) */
	uint32_t out;         /* an edit: the reverts that take it out */
	struct revert *r;     /* kind 1: the revert or undo, floor set */
	uint64_t *chg;        /* kind 1: the edits that started or stopped */
	size_t nchg;          /*   counting with it (their chunks changed) */
};

struct editlog_map {      /* (cx, cz) -> value, open addressing */
	uint64_t *keys;
	uint64_t *vals;       /* 0: empty slot */
	size_t cap, used;
};

struct editlog {
	uint64_t h0;          /* world hash before any edit */
	int chunk_log2;       /* chunk side 2^chunk_log2 m */
	struct edit *e;       /* e[k] is edit k + 1 (zero for a revert) */
	struct editlog_entry *x; /* x[k]: author, time, kind of entry k + 1 */
	uint64_t *h;          /* h[k]: world hash after edit k + 1 */
	size_t n, cap;
	struct editlog_map version;
};

/* What a page of GET .../edits said besides its edits. */
struct editlog_page {
	uint64_t since;       /* as asked */
	uint64_t seq;         /* the server's last sequence number */
	uint64_t world_hash;  /* the server's world hash at seq */
	uint64_t next;        /* with has_next: ask again from here */
	int has_next;
	size_t count;         /* edits in this page */
};

/* An empty log of world (fingerprint, seed) with 2^chunk_log2 m chunks. */
void editlog_init(struct editlog *l, uint64_t fingerprint, uint64_t seed,
		  int chunk_log2);

void editlog_free(struct editlog *l);

/* The world hash after edit seq (0 <= seq <= l->n; h0 for 0). */
uint64_t editlog_hash(const struct editlog *l, uint64_t seq);

/* The edit version of chunk (cx, cz): its last edit's seq, 0 if none. */
uint64_t editlog_version(const struct editlog *l, int32_t cx, int32_t cz);

/*
 * Append n edits (old records: no author) as l->n + 1, ... Returns 0, ERR_TOOBIG when an edit
 * touches more than 4096 chunks (the server refuses those), ERR_NOMEM.
 * Nothing is appended on failure.
 */
int editlog_append(struct editlog *l, const struct edit *e, size_t n);

/*
 * Parse a page (JSON, len bytes) of GET .../edits?since=l->n and append
 * its edits. Checks the shape, that "since" is l->n, that the edits carry
 * the sequence numbers l->n + 1, ... in order, that "next" (when present)
 * is the last of them and that without "next" the page ends at "seq".
 * Returns 0 and *pg; else ERR_PARSE or ERR_RANGE with a message in err
 * (errlen bytes, e.g. "edits[3].radius: must be in (0, 4096]") and the log
 * unchanged; or ERR_NOMEM.
 */
int editlog_add_page(struct editlog *l, const char *json, size_t len,
		     struct editlog_page *pg, char *err, size_t errlen);

/*
 * The chunks touched by edits first..last (1 <= first <= last <= l->n),
 * each once, in the order they were first touched, as pairs cx, cz in a
 * new array *xz (free() it) of 2 * *n values. Returns 0, ERR_INVAL for a
 * bad range, ERR_NOMEM.
 */
int editlog_batch_chunks(const struct editlog *l, uint64_t first,
			 uint64_t last, int32_t **xz, size_t *n);

#endif
