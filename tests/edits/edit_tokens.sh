#!/bin/bash
# edit_tokens.sh - players' tokens (JWT, docs/edits.md "Players and tokens")
# against the real server: tokens minted by `terrain-server token` and by
# python3-jwt (PyJWT: standard JWT both ways) with a shared secret (HS256)
# and with key pairs (ES256, RS256: the server holds only the public key);
# refused with 401 and their cause: expired (past the 60 s skew), not yet
# valid, another secret, a changed payload, alg none (made by hand), an
# alg of another family (an HS256 token signed with the public key as its
# secret), malformed, a bad sub, no exp; 403 for a world not among the
# token's worlds and a brush outside its area, nothing applied; the edit
# token still acts as admin beside tokens; an Idempotency-Key is each
# author's own; with nothing configured, tokenless loopback clients still
# edit; the edit token read from --edit-token-file (its first line; also
# TERRAIN_EDIT_TOKEN_FILE), an empty or missing one, or one beside
# --edit-token, stopping the start; a short secret or a file that is no key
# stops the start.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

PY=/usr/bin/python3
if ! "$PY" -c 'import jwt, cryptography' 2>/dev/null || ! command -v openssl >/dev/null; then
	echo "FAIL: python3-jwt (with python3-cryptography) and openssl are needed (scripts/deps.sh test)"
	exit 1
fi
ok='{"edits":[{"op":"raise","x":10,"z":10,"radius":5,"strength":1}]}'
# post TOKEN [BODY [WORLD [CURL ARGS...]]]: prints the status; the body goes to $TMP/body
post() {
	local tok=$1 body=${2:-$ok} world=${3:-42}
	shift 3 2>/dev/null || shift $#
	"${CURL[@]}" -D "$TMP/h" -o "$TMP/body" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' ${tok:+-H "Authorization: Bearer $tok"} "$@" \
		--data-binary "$body" "$BASE/v1/worlds/$world/edits"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/${1:-42}" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
says() { grep -qF -- "$1" "$TMP/body" || { echo "  body: $(cat "$TMP/body")"; return 1; }; }
mint() { "$SERVER_BIN" token "$@"; }
# pymint KEYFILE ALG CLAIMS_JSON: a token made by PyJWT (exp etc. as given)
pymint() {
	"$PY" -c 'import jwt, json, sys
print(jwt.encode(json.loads(sys.argv[3]), open(sys.argv[1], "rb").read().split(b"\n")[0]
      if sys.argv[2].startswith("HS") else open(sys.argv[1]).read(), algorithm=sys.argv[2]))' "$@"
}
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
now=$(date +%s)

openssl rand -hex 32 >"$TMP/secret"
openssl rand -hex 32 >"$TMP/other"
openssl ecparam -name prime256v1 -genkey -noout -out "$TMP/ec.pem" 2>/dev/null
openssl ec -in "$TMP/ec.pem" -pubout -out "$TMP/ec.pub" 2>/dev/null
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/rsa.pem" 2>/dev/null
openssl pkey -in "$TMP/rsa.pem" -pubout -out "$TMP/rsa.pub"

# ---- the command ----------------------------------------------------------------
alice=$(mint --secret-file "$TMP/secret" --sub alice)
check "terrain-server token prints a compact JWT" grep -qE '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' <<<"$alice"
check "PyJWT verifies it (HS256), with its claims" grep -q "'sub': 'alice'" <(
	"$PY" -c 'import jwt, sys
print(jwt.decode(sys.argv[1], open(sys.argv[2], "rb").read().strip(), algorithms=["HS256"]))' \
		"$alice" "$TMP/secret")
check "token without --sub exits 2" not mint --secret-file "$TMP/secret" 2>/dev/null
check "token with a bad --role exits 2" eq "$(mint --secret-file "$TMP/secret" --sub a --role king >/dev/null 2>&1; echo $?)" 2
check "token with a bad --area exits 2" eq "$(mint --secret-file "$TMP/secret" --sub a --area 1,2,3 >/dev/null 2>&1; echo $?)" 2

# ---- HS256 beside the edit token ---------------------------------------------------
server_start --token-secret-file "$TMP/secret" --edit-token adm1n-token
check "a valid HS256 token edits" eq "$(post "$alice")" 200
check "a PyJWT HS256 token edits" eq \
	"$(post "$(pymint "$TMP/secret" HS256 "{\"sub\":\"py\",\"exp\":$((now + 600))}")")" 200
check "the edit token still edits (admin)" eq "$(post adm1n-token)" 200
check "a wrong plain bearer is 401" eq "$(post not-the-token)" 401
check "... wrong bearer token" says "authorization: wrong bearer token"
check "no Authorization is 401" eq "$(post '')" 401
check "... with WWW-Authenticate: Bearer" grep -qi '^www-authenticate: bearer' "$TMP/h"
check "an expired token is 401" eq \
	"$(post "$(mint --secret-file "$TMP/secret" --sub alice --now $((now - 7200)) --ttl 3600)")" 401
check "... token expired" says "authorization: token expired"
check "expired 30 s ago is within the 60 s skew" eq \
	"$(post "$(mint --secret-file "$TMP/secret" --sub alice --now $((now - 3630)) --ttl 3600)")" 200
check "a token not valid before 10 min is 401" eq \
	"$(post "$(mint --secret-file "$TMP/secret" --sub alice --not-before 600)")" 401
check "... token not yet valid" says "authorization: token not yet valid"
check "a token of another secret is 401" eq "$(post "$(mint --secret-file "$TMP/other" --sub alice)")" 401
check "... bad signature" says "authorization: bad signature"
IFS=. read -r h p s <<<"$alice"
forged=$(printf '{"sub":"admin","exp":%d}' $((now + 600)) | b64url)
check "a changed payload under alice's signature is 401" eq "$(post "$h.$forged.$s")" 401
check "... bad signature" says "authorization: bad signature"
none=$(printf '{"alg":"none","typ":"JWT"}' | b64url)
check "alg none (by hand) is 401" eq "$(post "$none.$forged.")" 401
check "... alg none is not accepted" says "authorization: alg none is not accepted"
NONE=$(printf '{"alg":"NONE"}' | b64url)
check "alg NONE too" eq "$(post "$NONE.$forged.$s")" 401
check "an ES256 token at an HS256 server is 401" eq \
	"$(post "$(mint --private-key-file "$TMP/ec.pem" --sub eve)")" 401
check "... alg ES256 is not accepted" says "alg ES256 is not accepted (this server verifies HS256"
check "a malformed token is 401" eq "$(post 'abc.def')" 401
check "... malformed" says "authorization: malformed"
check "a header that is no JSON is 401 malformed" eq "$(post "bm90anNvbg.$forged.$s")" 401
check "... malformed" says "authorization: malformed"
check "a bad sub is 401" eq \
	"$(post "$(pymint "$TMP/secret" HS256 "{\"sub\":\"two words\",\"exp\":$((now + 600))}")")" 401
check "... sub:" says "authorization: sub: required, 1..64 of [A-Za-z0-9_.@-]"
check "no exp is 401" eq "$(post "$(pymint "$TMP/secret" HS256 '{"sub":"forever"}')")" 401
check "... exp: required" says "authorization: exp: required"
check "a bad role claim is 401" eq \
	"$(post "$(pymint "$TMP/secret" HS256 "{\"sub\":\"k\",\"exp\":$((now + 600)),\"role\":\"king\"}")")" 401
check "... role:" says "authorization: role: must be player, moderator or admin"
check "a moderator's token edits" eq \
	"$(post "$(mint --secret-file "$TMP/secret" --sub mod --role moderator)")" 200
check "four edits applied, none of the refused" eq "$(seq_of)" 5

# ---- worlds and area -------------------------------------------------------------------
w42=$(mint --secret-file "$TMP/secret" --sub bob --world 42 --world my-world)
check "a token for worlds 42 and my-world edits 42" eq "$(post "$w42")" 200
check "... and my-world (a text seed)" eq "$(post "$w42" "$ok" my-world)" 200
check "... not world 43: 403" eq "$(post "$w42" "$ok" 43)" 403
check "... naming the world" says "authorization: world 43 is not among the token's worlds"
check "nothing applied to 43" eq "$(seq_of 43)" 0
box=$(mint --secret-file "$TMP/secret" --sub carol --area -100,-100,100,100 --area 1000,0,1100,100)
check "a brush inside the token's area edits" eq "$(post "$box" \
	'{"edits":[{"op":"raise","x":0,"z":0,"radius":100,"strength":1}]}')" 200
check "one inside the second rectangle too" eq "$(post "$box" \
	'{"edits":[{"op":"raise","x":1050,"z":50,"radius":50,"strength":1}]}')" 200
check "a brush that sticks out is 403" eq "$(post "$box" \
	'{"edits":[{"op":"raise","x":0,"z":0,"radius":5,"strength":1},{"op":"raise","x":95,"z":0,"radius":10,"strength":1}]}')" 403
check "... naming the brush" says "authorization: edits[1] (x 95.000, z 0.000, radius 10.000 m) is not inside the token's area"
check "nothing of that batch applied" eq "$(seq_of)" 8

# ---- the Idempotency-Key is each author's --------------------------------------------------
dave=$(mint --secret-file "$TMP/secret" --sub dave)
erin=$(mint --secret-file "$TMP/secret" --sub erin)
check "dave's keyed batch" eq "$(post "$dave" "$ok" 42 -H 'Idempotency-Key: "k1"')" 200
check "erin's batch with the same key is her own" eq "$(post "$erin" "$ok" 42 -H 'Idempotency-Key: "k1"')" 200
check "... not a replay" not grep -qi '^idempotent-replayed' "$TMP/h"
check "dave's retry is a replay" eq "$(post "$dave" "$ok" 42 -H 'Idempotency-Key: "k1"')" 200
check "... Idempotent-Replayed" grep -qi '^idempotent-replayed: true' "$TMP/h"
server_stop >/dev/null

# ---- key pairs -----------------------------------------------------------------------------
server_start --token-public-key-file "$TMP/ec.pub" --data-dir "$TMP/ec"
check "ES256: a token of terrain-server token edits" eq \
	"$(post "$(mint --private-key-file "$TMP/ec.pem" --sub eve)")" 200
check "ES256: a PyJWT token edits" eq \
	"$(post "$(pymint "$TMP/ec.pem" ES256 "{\"sub\":\"py\",\"exp\":$((now + 600))}")")" 200
check "PyJWT verifies terrain-server's ES256 token" "$PY" -c 'import jwt, sys
jwt.decode(sys.argv[1], open(sys.argv[2]).read(), algorithms=["ES256"])' \
	"$(mint --private-key-file "$TMP/ec.pem" --sub eve)" "$TMP/ec.pub"
check "HS256 signed with the public key as its secret is 401" eq \
	"$(post "$("$PY" -c 'import hmac, hashlib, base64, json, sys
b = lambda d: base64.urlsafe_b64encode(d).rstrip(b"=").decode()
m = b(b"{\"alg\":\"HS256\",\"typ\":\"JWT\"}") + "." + b(json.dumps({"sub": "x", "exp": int(sys.argv[2])}).encode())
print(m + "." + b(hmac.new(open(sys.argv[1], "rb").read(), m.encode(), hashlib.sha256).digest()))' \
		"$TMP/ec.pub" $((now + 600)))")" 401
check "... alg HS256 is not accepted" says "authorization: alg HS256 is not accepted (this server verifies ES256)"
check "an RS256 token at an ES256 server is 401" eq \
	"$(post "$(mint --private-key-file "$TMP/rsa.pem" --sub ray)")" 401
server_stop >/dev/null
server_start --token-public-key-file "$TMP/rsa.pub" --data-dir "$TMP/rsa"
check "RS256: a token of terrain-server token edits" eq \
	"$(post "$(mint --private-key-file "$TMP/rsa.pem" --sub ray)")" 200
check "RS256: a PyJWT token edits" eq \
	"$(post "$(pymint "$TMP/rsa.pem" RS256 "{\"sub\":\"py\",\"exp\":$((now + 600))}")")" 200
check "a token the server cannot mint: no secret, so HS256 is 401" eq "$(post "$alice")" 401
server_stop >/dev/null

# ---- nothing configured: tokenless loopback, as before ------------------------------------------
server_start --data-dir "$TMP/open"
check "tokenless loopback edits when nothing is configured" eq "$(post '')" 200
check "a bearer is not needed there" eq "$(post "$alice")" 200
server_stop >/dev/null

# ---- the edit token from a file (a Docker or Swarm secret) -------------------------------------
printf 'f1le-token\nsecond line ignored\n' >"$TMP/edit-token"
server_start --edit-token-file "$TMP/edit-token" --data-dir "$TMP/tokfile"
check "--edit-token-file: its first line is the edit token" eq "$(post f1le-token)" 200
check "... the whole file is not" eq "$(post 'f1le-token second line ignored')" 401
check "... nor no token at all" eq "$(post '')" 401
server_stop >/dev/null
export TERRAIN_EDIT_TOKEN_FILE="$TMP/edit-token"
server_start --data-dir "$TMP/tokfile"
unset TERRAIN_EDIT_TOKEN_FILE
check "TERRAIN_EDIT_TOKEN_FILE names the file as well" eq "$(post f1le-token)" 200
server_stop >/dev/null
: >"$TMP/empty"
check "an edit token file with an empty first line stops the start (2)" eq \
	"$("$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" --edit-token-file "$TMP/empty" 2>"$TMP/err"; echo $?)" 2
check "... saying why" grep -q 'edit-token-file .*: the first line is empty' "$TMP/err"
check "a missing edit token file stops the start (2)" eq \
	"$("$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" --edit-token-file "$TMP/none" 2>"$TMP/err"; echo $?)" 2
check "... saying why" grep -q "edit-token-file $TMP/none: No such file" "$TMP/err"
check "--edit-token and --edit-token-file together stop the start (2)" eq \
	"$(TERRAIN_EDIT_TOKEN=x "$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" --edit-token-file "$TMP/edit-token" 2>"$TMP/err"; echo $?)" 2
check "... saying why" grep -q 'both --edit-token (or TERRAIN_EDIT_TOKEN) and --edit-token-file are set' "$TMP/err"

# ---- bad configuration -------------------------------------------------------------------------
printf 'short\n' >"$TMP/short"
check "a secret under 32 bytes stops the start (2)" eq \
	"$("$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" --token-secret-file "$TMP/short" 2>"$TMP/err"; echo $?)" 2
check "... saying why" grep -q 'at least 32' "$TMP/err"
check "a public key file that is no key stops the start (2)" eq \
	"$(TERRAIN_TOKEN_PUBLIC_KEY_FILE="$TMP/secret" "$SERVER_BIN" serve --port 0 --data-dir "$TMP/bad" 2>"$TMP/err"; echo $?)" 2
check "... saying why" grep -q 'token-public-key-file: not a PEM public key' "$TMP/err"
"$SERVER_BIN" --help >"$TMP/help"
check "--help lists --token-secret-file" grep -q -- '--token-secret-file FILE' "$TMP/help"
check "--help lists --edit-token-file" grep -q -- '--edit-token-file FILE' "$TMP/help"
check "--help lists --token-public-key-file" grep -q -- '--token-public-key-file FILE' "$TMP/help"
finish
