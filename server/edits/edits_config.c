/*
 * edits_config.c - the edits module's options (edits.h: struct
 * edits_config) and the key files they name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/files.h"
#include "base/options.h"
#include "edits.h"
#include "err.h"
#include "token.h"
#include "util.h"

#define ROW(...) OPTION(struct edits_config, __VA_ARGS__)

static const struct option options[] = {
	ROW("edit-token", "TERRAIN_EDIT_TOKEN", "TOKEN", "", OPTION_STR, token, 0, 0,
	    "edits need Authorization: Bearer TOKEN (author admin); unset: loopback "
	    "clients only, or players' tokens"),
	ROW("edit-token-file", "TERRAIN_EDIT_TOKEN_FILE", "FILE", "", OPTION_STR, token_file, 0, 0,
	    "the edit token, the file's first line (a Docker or Swarm secret: "
	    "/run/secrets/NAME); keeps it out of the environment"),
	ROW("token-secret-file", "TERRAIN_TOKEN_SECRET_FILE", "FILE", "", OPTION_STR,
	    token_secret_file, 0, 0, "players' tokens (JWT, HS256): the key, the file's first "
	    "line as bytes (32 or more; docs/edits.md)"),
	ROW("token-public-key-file", "TERRAIN_TOKEN_PUBLIC_KEY_FILE", "FILE", "", OPTION_STR,
	    token_public_key_file, 0, 0, "players' tokens signed ES256/384/512 or RS256/384/512: "
	    "the PEM public key (nodes then cannot mint)"),
	ROW("edit-rate", "TERRAIN_EDIT_RATE", "N", "1000", OPTION_UINT, rate, 0, 1 << 30,
	    "edits a second one author (a token's sub, admin; tokenless: an address) may "
	    "post, in bursts of 5 s; past it 429 with Retry-After (0: no limit)"),
	ROW("edit-area", "TERRAIN_EDIT_AREA", "KM2", "200", OPTION_UINT, area_km2, 0, 1 << 30,
	    "square kilometres of brushes a second one author may post, in bursts of "
	    "5 s (a 4096 m brush is 53 km2); past it 429 (0: no limit)"),
	ROW("edit-deadline", "TERRAIN_EDIT_DEADLINE", "MS", "5000", OPTION_UINT, deadline_ms, 0,
	    1u << 31, "refuse (503, not applied) an edit that reaches this node more than "
	    "MS after its front received it (the front's X-Request-Start: t=SECONDS): its "
	    "client has likely given up; edits without the header are not judged (0: off)"),
	ROW("idempotency-window", "TERRAIN_IDEMPOTENCY_WINDOW", "SECONDS", "86400", OPTION_UINT,
	    key_window_s, 0, 1u << 31, "how long a batch's Idempotency-Key is remembered (by "
	    "the edit log's clock): a retry with the key within it gets the first answer "
	    "and applies nothing; a shared log keeps its keys in Redis as long"),
	ROW("history", "TERRAIN_HISTORY", "SECONDS", "604800", OPTION_UINT, history_s, 0, 1u << 31,
	    "how far back a revert reaches, by the edit log's clock (POST .../reverts; "
	    "older edits are kept only folded into the snapshot)"),
	ROW("idempotency-keys", "TERRAIN_IDEMPOTENCY_KEYS", "N", "1000000", OPTION_UINT, key_max,
	    0, 1u << 30, "the most Idempotency-Keys remembered (about 72 bytes each, 144 at "
	    "most); past it the oldest are forgotten before their window ends"),
	ROW("cors-origins", "TERRAIN_CORS_ORIGINS", "LIST", "", OPTION_STR, cors_origins, 0, 0,
	    "web origins (https://game.example,...) whose pages may POST edits, besides "
	    "the server's own; other pages get 403"),
	ROW("allowed-hosts", "TERRAIN_ALLOWED_HOSTS", "LIST", "", OPTION_STR, allowed_hosts, 0, 0,
	    "Host names besides loopback ones that edits may name when no token is set"),
};
size_t edits_options(const struct option **out)
{
	*out = options;
	return ARRAY_LEN(options);
}

int edits_config_load(struct edits_config *c, char *err, size_t errlen)
{
	struct token_keys *k = NULL;
	char *secret = NULL;
	size_t len;
	int rc;

	if (c->token_file && c->token_file[0]) {
		if (c->token && c->token[0]) {
			snprintf(err, errlen, "both --edit-token (or TERRAIN_EDIT_TOKEN) and "
				 "--edit-token-file are set: give the token once");
			return ERR_INVAL;
		}
		if ((rc = token_read_secret("edit-token-file", c->token_file, &c->token_read,
					    &len, err, errlen)) != 0)
			return rc;
		c->token = c->token_read;
	}
	if (c->token_secret_file && c->token_secret_file[0]) {
		if ((rc = token_read_secret("token-secret-file", c->token_secret_file, &secret,
					    &c->token_secret_len, err, errlen)) != 0)
			return rc;
		c->token_secret = (uint8_t *)secret;
	}
	if (c->token_public_key_file && c->token_public_key_file[0] &&
	    files_read(c->token_public_key_file, 65536, &c->token_public_key,
		       &c->token_public_key_len) != 0) {
		snprintf(err, errlen, "--token-public-key-file %s: %s", c->token_public_key_file,
			 strerror(errno));
		return ERR_INVAL;
	}
	if (!c->token_secret && !c->token_public_key)
		return 0;
	/* keys that cannot verify tokens are a bad argument, as a bad value is */
	if ((rc = token_keys_create(c->token_secret, c->token_secret_len, c->token_public_key,
				    c->token_public_key_len, &k, err, errlen)) != 0)
		return rc;
	token_keys_destroy(k);
	return 0;
}

void edits_config_free(struct edits_config *c)
{
	if (c->token_read) {
		memset(c->token_read, 0, strlen(c->token_read));
		if (c->token == c->token_read)
			c->token = NULL;
	}
	free(c->token_read);
	c->token_read = NULL;
	if (c->token_secret)
		memset(c->token_secret, 0, c->token_secret_len);
	free(c->token_secret);
	free(c->token_public_key);
	c->token_secret = NULL;
	c->token_public_key = NULL;
}
