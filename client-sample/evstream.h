/*
 * evstream.h - an incremental parser of text/event-stream (Server-Sent
 * Events), as the HTML standard defines it.
 *
 * Bytes go in as they come off the wire, in pieces of any size; every
 * complete event comes out through a callback. Lines end with CRLF, LF or
 * CR (a CRLF split between two pieces counts once). A line starting with
 * ':' is a comment (the server's ": keep-alive"); "event:", "data:" and
 * "id:" set the event's type, append a data line and set the last event
 * ID; "retry:" sets the reconnection delay; other fields are ignored. A
 * blank line dispatches the event when it has data, with the data lines
 * joined by '\n' (no trailing newline). A leading UTF-8 BOM is skipped.
 *
 * The last event ID survives evstream_reset(): it is what a client sends
 * back as Last-Event-ID when it reconnects. Pure code: no I/O.
 */
#ifndef EVSTREAM_H
#define EVSTREAM_H

#include <stddef.h>
#include <stdint.h>

#define EVSTREAM_MAX_LINE  (1u << 20) /* longest line accepted (1 MiB) */
#define EVSTREAM_MAX_DATA  (4u << 20) /* largest event data (4 MiB) */
#define EVSTREAM_ID_MAX    128        /* longest event ID kept */
#define EVSTREAM_TYPE_MAX  64         /* longest event type kept */

struct evstream {
	char *line;             /* the line being read */
	size_t len, cap;
	char *data;             /* data lines of the pending event, '\n' after each */
	size_t dlen, dcap;
	char type[EVSTREAM_TYPE_MAX + 1];
	char last_id[EVSTREAM_ID_MAX + 1];
	long retry_ms;          /* last "retry:" value, -1 none */
	uint64_t comments;      /* comment lines seen */
	uint64_t events;        /* events dispatched */
	unsigned cr : 1;        /* the last byte was CR: skip one LF */
	unsigned started : 1;   /* past the optional BOM */
};

/* One event: type ("message" when the stream named none), the last event
 * ID ("" when none was set), and data (len bytes, NUL-terminated too).
 * Valid during the call. Returning non-zero stops evstream_feed(). */
typedef int (*evstream_cb)(void *arg, const char *type, const char *id,
			   const char *data, size_t len);

/* A parser with nothing pending; pair with evstream_free(). */
void evstream_init(struct evstream *p);

/* A new connection: drop the partial line and event, keep the last ID. */
void evstream_reset(struct evstream *p);

void evstream_free(struct evstream *p);

/*
 * Parse n bytes of stream, calling cb for every event they complete.
 * Returns 0; what cb returned when it stopped the feed (the rest of buf is
 * then not parsed); ERR_TOOBIG for a line or event over the limits, or
 * ERR_NOMEM (the parser must be reset before it is fed again).
 */
int evstream_feed(struct evstream *p, const char *buf, size_t n,
		  evstream_cb cb, void *arg);

#endif
