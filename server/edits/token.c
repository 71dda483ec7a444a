/*
 * token.c - JSON Web Tokens: the verifying keys, verification and the
 * claims, and minting (see token.h). The command line of `terrain-server
 * token` is token_cmd.c's.
 *
 * libjwt 1.10 picks the algorithm from the token's own header, and older
 * versions of it (like many JWT libraries) could be made to check an
 * HMAC with a public key as its secret, or to take "alg": "none". So the
 * header is read here first and libjwt only sees a token whose alg the
 * configured key was made for; the claims, which libjwt 1.10 does not
 * validate, are read here too (cJSON, duplicate names refused).
 */
#include "token.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <jwt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/files.h"
#include "edit.h"
#include "err.h"
#include "jsonv.h"
#include "seed.h"

struct token_keys {
	uint8_t *secret;                 /* HMAC key, or NULL */
	size_t secret_len;
	char *pem;                       /* public key, or NULL */
	size_t pem_len;
	jwt_alg_t pem_alg[3];            /* what the public key verifies */
	size_t npem_alg;
	char algs[64];                   /* for people */
};

/* ---- keys -------------------------------------------------------------------- */

/* The algorithms a PEM key (public or private) is for: EC by its curve,
 * RSA of 2048 bits or more. 0 or ERR_INVAL with err. */
static int pem_algs(const char *pem, size_t len, int private_key, jwt_alg_t algs[3],
		    size_t *n, char *err, size_t errlen)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *k = !bio ? NULL : private_key ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) :
		      PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	char curve[64] = "";
	size_t cl;
	int rc = 0;

	BIO_free(bio);
	*n = 0;
	if (!k) {
		snprintf(err, errlen, "not a PEM %s key", private_key ? "private" : "public");
		return ERR_INVAL;
	}
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA) {
		if (EVP_PKEY_get_bits(k) < 2048) {
			snprintf(err, errlen, "an RSA key of %d bits: need 2048 or more",
				 EVP_PKEY_get_bits(k));
			rc = ERR_INVAL;
		} else {
			algs[(*n)++] = JWT_ALG_RS256;
			algs[(*n)++] = JWT_ALG_RS384;
			algs[(*n)++] = JWT_ALG_RS512;
		}
	} else if (EVP_PKEY_get_base_id(k) == EVP_PKEY_EC &&
		   EVP_PKEY_get_group_name(k, curve, sizeof(curve), &cl) == 1) {
		if (!strcmp(curve, "prime256v1"))
			algs[(*n)++] = JWT_ALG_ES256;
		else if (!strcmp(curve, "secp384r1"))
			algs[(*n)++] = JWT_ALG_ES384;
		else if (!strcmp(curve, "secp521r1"))
			algs[(*n)++] = JWT_ALG_ES512;
		else
			rc = ERR_INVAL;
		if (rc)
			snprintf(err, errlen, "an EC key on %s: need P-256, P-384 or P-521", curve);
	} else {
		snprintf(err, errlen, "a key of a kind libjwt 1.10 cannot verify: need EC "
			 "(ES256/384/512) or RSA (RS256/384/512)");
		rc = ERR_INVAL;
	}
	EVP_PKEY_free(k);
	return rc;
}

int token_keys_create(const uint8_t *secret, size_t secret_len, const char *pem,
		      size_t pem_len, struct token_keys **out, char *err, size_t errlen)
{
	struct token_keys *k;
	size_t i, n = 0;
	int rc = 0;

	if (!out || (!secret && !pem)) {
		snprintf(err, errlen, "no token key");
		return ERR_INVAL;
	}
	if (secret && secret_len < TOKEN_SECRET_MIN) {
		snprintf(err, errlen, "--token-secret-file: a secret of %zu bytes: HS256 needs at "
			 "least %d (RFC 7518 3.2; e.g. openssl rand -hex 32)", secret_len,
			 TOKEN_SECRET_MIN);
		return ERR_INVAL;
	}
	if (!(k = calloc(1, sizeof(*k))))
		return ERR_NOMEM;
	if (pem && (rc = pem_algs(pem, pem_len, 0, k->pem_alg, &k->npem_alg, err, errlen)) != 0) {
		char why[200];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "--token-public-key-file: %s", why);
	} else if ((secret && !(k->secret = malloc(secret_len))) ||
		   (pem && !(k->pem = malloc(pem_len + 1)))) {
		snprintf(err, errlen, "out of memory");
		rc = ERR_NOMEM;
	}
	if (rc) {
		token_keys_destroy(k);
		return rc;
	}
	if (secret) {
		memcpy(k->secret, secret, secret_len);
		k->secret_len = secret_len;
		n += (size_t)snprintf(k->algs, sizeof(k->algs), "HS256, HS384, HS512");
	}
	if (pem) {
		memcpy(k->pem, pem, pem_len);
		k->pem[pem_len] = '\0';
		k->pem_len = pem_len;
		for (i = 0; i < k->npem_alg && n < sizeof(k->algs); i++)
			n += (size_t)snprintf(k->algs + n, sizeof(k->algs) - n, "%s%s",
					      n ? ", " : "", jwt_alg_str(k->pem_alg[i]));
	}
	*out = k;
	return 0;
}

void token_keys_destroy(struct token_keys *k)
{
	if (!k)
		return;
	if (k->secret)
		memset(k->secret, 0, k->secret_len);
	free(k->secret);
	free(k->pem);
	free(k);
}

const char *token_keys_algs(const struct token_keys *k)
{
	return k->algs;
}

/* The key for alg, or NULL when k takes no such token. */
static const void *key_for(const struct token_keys *k, jwt_alg_t alg, size_t *len)
{
	size_t i;

	if (alg == JWT_ALG_HS256 || alg == JWT_ALG_HS384 || alg == JWT_ALG_HS512) {
		*len = k->secret_len;
		return k->secret;
	}
	for (i = 0; i < k->npem_alg; i++)
		if (k->pem_alg[i] == alg) {
			*len = k->pem_len;
			return k->pem;
		}
	return NULL;
}

/* ---- the token's parts --------------------------------------------------------- */

static int b64url_value(char c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 :
	       c >= '0' && c <= '9' ? c - '0' + 52 : c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* base64url without padding (RFC 7515 2), n chars of s into out (room for
 * n * 3 / 4 + 1 bytes, NUL-terminated); its length, or -1. */
static long b64url_decode(const char *s, size_t n, char *out)
{
	uint32_t acc = 0;
	size_t i, bits = 0, len = 0;

	if (n % 4 == 1)
		return -1;
	for (i = 0; i < n; i++) {
		int v = b64url_value(s[i]);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (char)((acc >> bits) & 0xff);
		}
	}
	if (acc & ((1u << bits) - 1)) /* bits past the last byte must be zero */
		return -1;
	out[len] = '\0';
	return (long)len;
}

/* A JSON object with no name twice, from n bytes: a new cJSON, or NULL. */
static cJSON *json_object(const char *s, size_t n)
{
	const char *why;
	size_t at;
	cJSON *o, *a, *b;

	if (memchr(s, '\0', n) || jsonv_check(s, n, &at, &why) ||
	    !(o = cJSON_ParseWithLength(s, n)))
		return NULL;
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	for (a = o->child; a; a = a->next)
		for (b = a->next; b; b = b->next)
			if (!strcmp(a->string, b->string)) {
				cJSON_Delete(o);
				return NULL;
			}
	return o;
}

/* ---- claims ---------------------------------------------------------------------- */

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return ERR_INVAL; } while (0)

static int sub_valid(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= TOKEN_SUB_MAX &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789_.@-") == n;
}

/* A NumericDate claim: 0 when absent (*v = 0), 1 when present, -1 bad. */
static int numeric_date(const cJSON *o, const char *name, double *v)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, name);

	*v = 0;
	if (!c)
		return 0;
	if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble < 0)
		return -1;
	*v = c->valuedouble;
	return 1;
}

static int read_worlds(const cJSON *o, struct token_claims *t, char *why, size_t whylen)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "worlds"), *e;

	t->all_worlds = !w;
	if (!w)
		return 0;
	if (!cJSON_IsArray(w))
		FAIL("worlds: must be an array of seeds (numbers or strings)");
	cJSON_ArrayForEach(e, w) {
		uint64_t seed;

		if (t->nworlds == TOKEN_WORLDS_MAX)
			FAIL("worlds: more than %d entries", TOKEN_WORLDS_MAX);
		if (cJSON_IsNumber(e)) {
			double d = e->valuedouble;

			if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
				FAIL("worlds[%zu]: a number seed must be a whole number up to "
				     "2^53 (give larger seeds as strings)", t->nworlds);
			seed = (uint64_t)d;
		} else if (!cJSON_IsString(e) ||
			   seed_parse(e->valuestring, strlen(e->valuestring), &seed)) {
			FAIL("worlds[%zu]: not a seed (decimal, or [A-Za-z0-9_-]{1,64})",
			     t->nworlds);
		}
		t->worlds[t->nworlds++] = seed;
	}
	return 0;
}

/* Metres as millimetres, rounded to the nearest; 0 or -1 out of range. */
static int metres_mm(double m, int64_t *mm)
{
	double v = m * 1000.0;

	if (!isfinite(v) || v > (double)EDIT_MAX_COORD_MM || v < -(double)EDIT_MAX_COORD_MM)
		return -1;
	*mm = (int64_t)(v < 0 ? v - 0.5 : v + 0.5);
	return 0;
}

static int read_areas(const cJSON *o, struct token_claims *t, char *why, size_t whylen)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "area"), *r;

	if (!a)
		return 0;
	if (!cJSON_IsArray(a) || !cJSON_GetArraySize(a))
		FAIL("area: must be a non-empty array of [x0,z0,x1,z1] rectangles (metres)");
	cJSON_ArrayForEach(r, a) {
		int64_t *v = t->areas[t->nareas];
		const cJSON *c;
		int i = 0;

		if (t->nareas == TOKEN_AREAS_MAX)
			FAIL("area: more than %d rectangles", TOKEN_AREAS_MAX);
		if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 4)
			FAIL("area[%zu]: must be [x0,z0,x1,z1] (metres)", t->nareas);
		cJSON_ArrayForEach(c, r)
			if (!cJSON_IsNumber(c) || metres_mm(c->valuedouble, &v[i++]))
				FAIL("area[%zu]: coordinates must be numbers within the world "
				     "(metres)", t->nareas);
		if (v[0] > v[2] || v[1] > v[3])
			FAIL("area[%zu]: need x0 <= x1 and z0 <= z1", t->nareas);
		t->nareas++;
	}
	return 0;
}

static int read_role_rate(const cJSON *o, struct token_claims *t, char *why, size_t whylen)
{
	static const char *const roles[] = { "player", "moderator", "admin" };
	const cJSON *role = cJSON_GetObjectItemCaseSensitive(o, "role");
	const cJSON *rate = cJSON_GetObjectItemCaseSensitive(o, "rate");
	size_t i;

	t->role = TOKEN_PLAYER;
	if (role) {
		for (i = 0; cJSON_IsString(role) && i < 3; i++)
			if (!strcmp(role->valuestring, roles[i]))
				break;
		if (!cJSON_IsString(role) || i == 3)
			FAIL("role: must be player, moderator or admin");
		t->role = (enum token_role)i;
	}
	if (rate) {
		if (!cJSON_IsNumber(rate) || !(rate->valuedouble > 0) ||
		    !isfinite(rate->valuedouble))
			FAIL("rate: must be a positive number of edits a second");
		t->rate = rate->valuedouble;
	}
	return 0;
}

static int check_claims(const cJSON *o, double now, struct token_claims *t, char *why,
			size_t whylen)
{
	const cJSON *sub = cJSON_GetObjectItemCaseSensitive(o, "sub");
	int has_exp = numeric_date(o, "exp", &t->exp);
	int rc;

	if (has_exp < 0)
		FAIL("exp: must be a NumericDate (seconds since 1970)");
	if (!has_exp)
		FAIL("exp: required (tokens must expire)");
	if (numeric_date(o, "nbf", &t->nbf) < 0 || numeric_date(o, "iat", &t->iat) < 0)
		FAIL("nbf, iat: must be NumericDates (seconds since 1970)");
	if (now > t->exp + TOKEN_SKEW_S)
		FAIL("token expired");
	if (now + TOKEN_SKEW_S < t->nbf)
		FAIL("token not yet valid");
	if (now + TOKEN_SKEW_S < t->iat)
		FAIL("token not yet valid (iat in the future)");
	if (!cJSON_IsString(sub) || !sub_valid(sub->valuestring))
		FAIL("sub: required, 1..%d of [A-Za-z0-9_.@-]", TOKEN_SUB_MAX);
	snprintf(t->sub, sizeof(t->sub), "%s", sub->valuestring);
	if ((rc = read_worlds(o, t, why, whylen)) != 0 ||
	    (rc = read_areas(o, t, why, whylen)) != 0)
		return rc;
	return read_role_rate(o, t, why, whylen);
}

int token_check_claims(const char *json, size_t len, double now, struct token_claims *out,
		       char *why, size_t whylen)
{
	cJSON *o = json_object(json, len);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!o)
		FAIL("malformed: the payload is not a JSON object");
	rc = check_claims(o, now, out, why, whylen);
	cJSON_Delete(o);
	return rc;
}

/* ---- verification ------------------------------------------------------------------ */

/* The header's alg, checked against k: 0, or ERR_INVAL with why. */
static int check_header(const struct token_keys *k, const char *b64, size_t n,
			jwt_alg_t *alg, char *why, size_t whylen)
{
	char buf[TOKEN_MAX_LEN];
	const cJSON *a;
	cJSON *h;
	long len = b64url_decode(b64, n, buf);
	size_t klen;

	if (len < 0 || !(h = json_object(buf, (size_t)len)))
		FAIL("malformed: the header is not base64url of a JSON object");
	a = cJSON_GetObjectItemCaseSensitive(h, "alg");
	if (!cJSON_IsString(a)) {
		cJSON_Delete(h);
		FAIL("malformed: the header has no alg");
	}
	if (!strcasecmp(a->valuestring, "none")) {
		cJSON_Delete(h);
		FAIL("alg none is not accepted");
	}
	*alg = jwt_str_alg(a->valuestring);
	if (*alg == JWT_ALG_INVAL || *alg == JWT_ALG_NONE || !key_for(k, *alg, &klen) ||
	    cJSON_GetObjectItemCaseSensitive(h, "crit")) {
		snprintf(why, whylen, "alg %.20s is not accepted (this server verifies %s)",
			 a->valuestring, k->algs);
		cJSON_Delete(h);
		return ERR_INVAL;
	}
	cJSON_Delete(h);
	return 0;
}

int token_verify(const struct token_keys *k, const char *jwt, size_t len, double now,
		 struct token_claims *out, char *why, size_t whylen)
{
	char copy[TOKEN_MAX_LEN + 1], payload[TOKEN_MAX_LEN];
	const char *dot1, *dot2;
	const void *key;
	jwt_alg_t alg;
	jwt_t *j = NULL;
	size_t klen = 0, i;
	long plen;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!k || !jwt || len == 0 || len > TOKEN_MAX_LEN)
		FAIL("malformed: not a compact JWT of 1..%d bytes", TOKEN_MAX_LEN);
	for (i = 0; i < len; i++)
		if (jwt[i] != '.' && b64url_value(jwt[i]) < 0)
			FAIL("malformed: not a compact JWT (header.payload.signature, base64url)");
	dot1 = memchr(jwt, '.', len);
	dot2 = dot1 ? memchr(dot1 + 1, '.', len - (size_t)(dot1 + 1 - jwt)) : NULL;
	if (!dot1 || !dot2 || memchr(dot2 + 1, '.', len - (size_t)(dot2 + 1 - jwt)) ||
	    dot1 == jwt || dot2 == dot1 + 1)
		FAIL("malformed: not a compact JWT (header.payload.signature)");
	if ((rc = check_header(k, jwt, (size_t)(dot1 - jwt), &alg, why, whylen)) != 0)
		return rc;
	plen = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), payload);
	if (plen < 0)
		FAIL("malformed: the payload is not base64url");
	if (dot2 + 1 == jwt + len)
		FAIL("bad signature");
	key = key_for(k, alg, &klen);
	memcpy(copy, jwt, len);
	copy[len] = '\0';
	rc = jwt_decode(&j, copy, key, (int)klen);
	if (rc || !j || jwt_get_alg(j) != alg) {
		jwt_free(j);
		FAIL("bad signature");
	}
	jwt_free(j);
	return token_check_claims(payload, (size_t)plen, now, out, why, whylen);
}

/* ---- minting ------------------------------------------------------------------------- */

static cJSON *mint_claims(const struct token_mint *m)
{
	cJSON *o = cJSON_CreateObject(), *a;
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "sub", m->sub);
	cJSON_AddNumberToObject(o, "iat", floor(m->now));
	cJSON_AddNumberToObject(o, "exp", floor(m->now + m->ttl));
	if (m->not_before)
		cJSON_AddNumberToObject(o, "nbf", floor(m->now + m->not_before));
	if (m->role)
		cJSON_AddStringToObject(o, "role", m->role);
	if (m->worlds && (a = cJSON_AddArrayToObject(o, "worlds")))
		for (i = 0; i < m->nworlds; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(m->worlds[i]));
	if (m->nareas && (a = cJSON_AddArrayToObject(o, "area")))
		for (i = 0; i < m->nareas; i++)
			cJSON_AddItemToArray(a, cJSON_CreateDoubleArray(m->areas[i], 4));
	if (m->rate > 0)
		cJSON_AddNumberToObject(o, "rate", m->rate);
	return o;
}

int token_mint(const struct token_mint *m, char **out, char *err, size_t errlen)
{
	jwt_alg_t algs[3], alg = JWT_ALG_HS256;
	const void *key = m->secret;
	size_t klen = m->secret_len, n;
	char *json = NULL, *tok;
	jwt_t *j = NULL;
	cJSON *o;
	int rc = ERR_NOMEM;

	if (!m->sub || !sub_valid(m->sub)) {
		snprintf(err, errlen, "--sub: 1..%d of [A-Za-z0-9_.@-]", TOKEN_SUB_MAX);
		return ERR_INVAL;
	}
	if (m->private_pem) {
		if ((rc = pem_algs(m->private_pem, m->private_pem_len, 1, algs, &n, err,
				   errlen)) != 0)
			return rc;
		alg = algs[0];
		key = m->private_pem;
		klen = m->private_pem_len;
	} else if (!m->secret || m->secret_len < TOKEN_SECRET_MIN) {
		snprintf(err, errlen, "the secret needs at least %d bytes", TOKEN_SECRET_MIN);
		return ERR_INVAL;
	}
	snprintf(err, errlen, "out of memory");
	if (!(o = mint_claims(m)) || !(json = cJSON_PrintUnformatted(o)) || jwt_new(&j))
		goto done;
	if (jwt_add_grants_json(j, json) || jwt_set_alg(j, alg, key, (int)klen)) {
		snprintf(err, errlen, "libjwt refused the claims or the key");
		rc = ERR_INVAL;
		goto done;
	}
	if (!(tok = jwt_encode_str(j))) {
		snprintf(err, errlen, "libjwt: signing failed");
		rc = ERR_INVAL;
		goto done;
	}
	*out = tok; /* libjwt's default allocator is malloc */
	rc = 0;
done:
	jwt_free(j);
	cJSON_free(json);
	cJSON_Delete(o);
	return rc;
}

int token_read_secret(const char *flag, const char *file, char **out, size_t *len, char *err,
		      size_t errlen)
{
	char *buf;
	size_t n, i;

	if (files_read(file, 65536, &buf, &n) != 0) {
		snprintf(err, errlen, "--%s %s: %s", flag, file, strerror(errno));
		return ERR_IO;
	}
	for (i = 0; i < n && buf[i] != '\r' && buf[i] != '\n'; i++)
		;
	buf[n = i] = '\0';
	if (!n) {
		snprintf(err, errlen, "--%s %s: the first line is empty", flag, file);
		free(buf);
		return ERR_INVAL;
	}
	*out = buf;
	*len = n;
	return 0;
}
