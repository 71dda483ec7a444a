#!/bin/bash
# edit_limits.sh - per-client edit budgets against the real server: past
# --edit-rate edits a second (bursts of 5 s) or --edit-area km^2 of brushes
# a second, a client gets 429 with Retry-After and nothing is applied; a
# batch larger than a whole burst is 422; the budget refills with time.
# An edit its front received (X-Request-Start) more than --edit-deadline
# ago is 503 and not applied, in each of the stamp's forms.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

post() { # BODY [CURL ARGS]: prints the status; headers to $TMP/h, body to $TMP/body
	local body=$1
	shift
	"${CURL[@]}" -D "$TMP/h" -o "$TMP/body" -w '%{http_code}' -X POST "$@" \
		-H 'Content-Type: application/json' --data-binary "$body" "$BASE/v1/worlds/lim/edits"
}
seq_of() { "${CURL[@]}" "$BASE/v1/worlds/lim" | sed -n 's/.*"edit_seq":\([0-9]*\).*/\1/p'; }
batch() { # N RADIUS: a batch of N small raises
	local i s='{"edits":['
	for i in $(seq 1 "$1"); do
		s+="{\"op\":\"raise\",\"x\":$i,\"z\":0,\"radius\":$2,\"strength\":1}"
		[ "$i" -lt "$1" ] && s+=','
	done
	echo "$s]}"
}

# The refill (2 edits a second) must not let the next batch through
# however slowly this runs (an ASan build on a busy machine): that batch
# asks for 6 edits, 3 s of refill.
server_start --edit-rate 2 --edit-area 0   # bursts of 10 edits
check "10 edits fit the burst" eq "$(post "$(batch 10 5)")" 200
check "6 more are 429" eq "$(post "$(batch 6 5)")" 429
check "with Retry-After" grep -qi '^retry-after: ' "$TMP/h"
check "and a detail naming the flag" grep -q 'edit-rate' "$TMP/body"
check "a batch beyond a whole burst is 422" eq "$(post "$(batch 11 5)")" 422
check "nothing of them was applied" eq "$(seq_of)" 10
sleep 1.3
check "the budget refills with time" eq "$(post "$(batch 2 5)")" 200
server_stop >/dev/null

server_start --edit-rate 0 --edit-area 1 --data-dir "$TMP/area"   # bursts of 5 km^2
check "a 1 km brush (3.1 km^2) fits" eq "$(post "$(batch 1 1000)")" 200
check "a second one is 429" eq "$(post "$(batch 1 1000)")" 429
check "a 1.3 km brush (5.3 km^2) is larger than a burst: 422" eq "$(post "$(batch 1 1300)")" 422
check "small brushes still pass" eq "$(post "$(batch 3 20)")" 200
server_stop >/dev/null

server_start --edit-rate 0 --edit-area 0 --data-dir "$TMP/off"
check "an edit beyond the int32 chunk grid is 400" eq \
	"$(post '{"edits":[{"op":"raise","x":1000000000000,"z":0,"radius":5,"strength":1}]}')" 400
check "its detail says outside the world" grep -q 'outside the world' "$TMP/body"
check "limits of 0 are off" eq "$(post "$(batch 12 4096)")" 200
server_stop >/dev/null

# --edit-deadline: the stamp a front such as nginx adds ("t=${msec}")
server_start --edit-token tok --edit-deadline 2000 --data-dir "$TMP/late"
stamped() { post "$(batch 1 5)" -H 'Authorization: Bearer tok' -H "X-Request-Start: $1"; }
ms=$(date +%s%3N)
old=$((ms - 10000))
check "an edit stamped now (t=seconds.ms) is 200" eq "$(stamped "t=$(date +%s.%3N)")" 200
check "one stamped 10 s ago is 503" eq "$(stamped "t=$((old / 1000)).$(printf %03d $((old % 1000)))")" 503
check "with Retry-After" grep -qi '^retry-after: ' "$TMP/h"
check "and a detail saying it was not applied" grep -q 'edit-deadline.*not applied' "$TMP/body"
check "... in milliseconds (t=MS)" eq "$(stamped "t=$old")" 503
check "... in microseconds, without t=" eq "$(stamped "$((old * 1000))")" 503
check "... in whole seconds" eq "$(stamped "t=$((old / 1000))")" 503
check "none of the late ones was applied" eq "$(seq_of)" 1
check "a stamp ahead of this clock counts as no wait" eq "$(stamped "t=$((ms / 1000 + 3600))")" 200
check "a stamp of another form is not judged" eq "$(stamped 't=soon')" 200
check "the server logged the refusal once" eq "$(grep -c 'refused an edit that arrived' "$SERVER_LOG")" 1
server_stop >/dev/null
server_start --edit-deadline 0 --data-dir "$TMP/nolate"
check "the stamp is a proxy's sign: without a token set, 403" eq \
	"$(post "$(batch 1 5)" -H "X-Request-Start: t=$(date +%s.%3N)")" 403
server_stop >/dev/null
server_start --edit-token tok --edit-deadline 0 --data-dir "$TMP/nolate"
check "--edit-deadline 0 is off" eq "$(stamped "t=$((ms / 1000 - 3600))")" 200
server_stop >/dev/null
finish
