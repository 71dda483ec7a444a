#!/bin/bash
# run: once
# edit_players_nginx.sh - per-player budgets behind a real nginx (Debian's,
# on 127.0.0.1, the shipped docker/nginx.conf rendered by
# scripts/nginx-loopback.sh for one node): every request reaches the node
# from nginx's address, yet each player's --edit-rate budget is its own.
# With --edit-rate 2 (bursts of 10 edits): alice spends her burst and gets
# 429 naming her, while bob, then the edit token's admin, still get 200; a
# token whose rate claim is 1 has bursts of 5 (a batch of 6 is 422, a
# second batch 429 sooner, naming the token's rate); a rate claim above
# --edit-rate is capped to it. Tokenless edits through nginx stay refused.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
if [ ! -x "$NGINX" ]; then
	echo "FAIL: nginx not installed (scripts/deps.sh test installs nginx-light)"
	exit 1
fi
command -v openssl >/dev/null || { echo "FAIL: openssl not installed (scripts/deps.sh test)"; exit 1; }
trap 'nginx_down; cleanup' EXIT

openssl rand -hex 32 >"$TMP/secret"
server_start --token-secret-file "$TMP/secret" --edit-token adm1n-token --edit-rate 2 \
	--edit-area 0 --workers 1
front_conf() { scripts/nginx-loopback.sh "$FPORT" "$PORT"; }
nginx_up "$TMP/nginx" front_conf
F="http://127.0.0.1:$FPORT"

batch() { # N: a batch of N small raises
	local i s='{"edits":['
	for i in $(seq 1 "$1"); do
		s+="{\"op\":\"raise\",\"x\":$i,\"z\":0,\"radius\":5,\"strength\":1}"
		[ "$i" -lt "$1" ] && s+=','
	done
	echo "$s]}"
}
# post TOKEN N: N edits through nginx; prints the status, the body to $TMP/body
post() {
	"${CURL[@]}" -D "$TMP/h" -o "$TMP/body" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/json' ${1:+-H "Authorization: Bearer $1"} \
		--data-binary "$(batch "$2")" "$F/v1/worlds/players/edits"
}
says() { grep -qF -- "$1" "$TMP/body" || { echo "  body: $(cat "$TMP/body")"; return 1; }; }
mint() { "$SERVER_BIN" token --secret-file "$TMP/secret" --sub "$@"; }

# The refill (2 edits a second) cannot let the next batch through however
# slowly this runs: each 429 below asks for at least 3 s of refill.
alice=$(mint alice)
bob=$(mint bob)
check "through nginx: alice's 10 edits fit her burst" eq "$(post "$alice" 10)" 200
check "alice's next 6 are 429" eq "$(post "$alice" 6)" 429
check "... with Retry-After" grep -qi '^retry-after: ' "$TMP/h"
check "... naming alice and the flag" says "too many edits from alice, retry later (--edit-rate"
check "bob, through the same nginx, still gets his own burst" eq "$(post "$bob" 10)" 200
check "bob's next 6 are 429 too" eq "$(post "$bob" 6)" 429
check "the edit token (admin) has a budget of its own" eq "$(post adm1n-token 10)" 200
slow=$(mint slow --rate 1)
check "a token with rate 1 has bursts of 5: a batch of 6 is 422" eq "$(post "$slow" 6)" 422
check "... saying the token's rate lowered it" says "lowered by the token's rate"
check "its 5 edits fit" eq "$(post "$slow" 5)" 200
check "its next 4 are 429 (at --edit-rate alone they would fit)" eq "$(post "$slow" 4)" 429
check "... naming the token's rate" says "too many edits from slow, retry later (--edit-rate lowered by the token's rate"
fast=$(mint fast --rate 100)
check "a rate claim above --edit-rate is capped: 10 edits fit" eq "$(post "$fast" 10)" 200
check "... and the next 6 are 429" eq "$(post "$fast" 6)" 429
check "tokenless edits through nginx are 401" eq "$(post '' 1)" 401
check "the world has the accepted edits only" eq \
	"$("${CURL[@]}" "$F/v1/worlds/players" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p')" 45
finish
