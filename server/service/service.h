/*
 * service.h - the server's modules wired together: the configuration (each
 * module's own struct, filled by its option table), the modules made in
 * order and joined (tiles hear the edits' changes, snapshots hold the
 * worlds and the bakes), the router over their routes and the service's
 * own (health, readiness, metrics, the API description, the viewer), the
 * start-up replay, the drain and the end. main.c reads the options and
 * runs the loop; the router (routes.h) dispatches. Loop thread only.
 */
#ifndef SERVICE_H
#define SERVICE_H

#include <stddef.h>
#include <stdio.h>

#include "api/request.h"
#include "editlog/journal.h"
#include "edits/edits.h"
#include "http/http.h"
#include "loop.h"
#include "tiles/tiles.h"
#include "worlds/catalog.h"
#include "worlds/snapshots.h"

struct catalog;
struct http_server;
struct option_group;
struct service;
struct uv_loop_s;

/* Every module's configuration; each is its module's (its header says
 * what the fields mean and its option table fills them). */
struct service_config {
	struct loop_config loop;
	struct http_limits http;
	struct req_config api;
	struct catalog_config presets;
	struct tiles_config tiles;
	struct snapshots_config snapshots;
	struct journal_config log;
	struct edits_config edits;
};

/* The option groups of struct service_config, in --help's order. */
#define SERVICE_OPTION_GROUPS 8

/* The defaults that are not options (backlog, drain limit, ...). */
void service_config_init(struct service_config *c);

/* Point g[0..SERVICE_OPTION_GROUPS) at each module's table and its part
 * of c. */
void service_options(struct service_config *c, struct option_group *g);

/* After the options: read the files they name (passwords, token keys)
 * and fill what they leave to the system (the node's name). 0, or ERR_*
 * with err saying why (a bad argument). */
int service_config_load(struct service_config *c, char *err, size_t errlen);

/* Free what service_config_load() read. */
void service_config_free(struct service_config *c);

/*
 * Make the modules over the presets of cat (which must outlive them),
 * queueing generation on loop's worker pool, and open the edit log.
 * Returns 0 or an ERR_* with the reason in err (errlen bytes), e.g. a log
 * that is locked or not an edit log.
 */
int service_create(struct uv_loop_s *loop, const struct catalog *cat,
		   const struct service_config *cfg, struct service **out, char *err,
		   size_t errlen);

/*
 * Rebuild every world from the edit log, before serving (edits_replay()):
 * on 0 msg says what was replayed and warn (or "") what the log repaired;
 * otherwise msg says why, for a corrupt log with the recovery command.
 */
int service_replay(struct service *s, char *msg, size_t msglen, char *warn, size_t warnlen);

/* Fill h with the callbacks that answer requests (routes.h). */
void service_handler(struct service *s, struct http_handler *h);

/* The server whose connection figures /metrics reports (may be NULL). */
void service_set_server(struct service *s, const struct http_server *hs);

/* The server starts draining: no more background work. arg is the
 * service (a loop_on_drain() callback). */
void service_stop(void *arg);

/* Close the edit log once every edit has been answered (after the drain). */
void service_close_log(struct service *s);

/* Free s once every request has been answered and every generation has
 * finished. NULL does nothing. */
void service_destroy(struct service *s);

/* The route table, for `terrain-server routes` (routes_print()). */
void service_print_routes(FILE *f);

#endif
