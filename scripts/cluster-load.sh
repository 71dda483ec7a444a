# cluster-load.sh - the load tool of the cluster tests, sourced (never run)
# by scripts/container-test.sh and scripts/swarm-test.sh: checks, keyed
# edits through the front, loaders, a node's log.
#
# The sourcing script sets, before it calls these:
#   tmp         a folder of its own (the loaders' files; $tmp/stop stops them)
#   F           the front's base URL (http://127.0.0.1:PORT)
#   EDIT_TOKEN  the edit token post sends (AUTH=... for one call overrides it)
#   run         a prefix of Idempotency-Keys unique to the run
#   LW          the world the loaders edit
#   LOADERS     how many loaders load_start starts
#   HOLD        s a stopped loader may still retry the edit it holds (60)
#   passed, failed  check's counters
# and defines:
#   node_get NODE PATH   the body of GET PATH on node NODE (curl on
#                        127.0.0.1:8080 inside its container), empty if none
#   nodes                the node containers' ids, one a line
# NODE is what the script's node_get takes (an id, or @ID in the container
# test).
# shellcheck shell=bash

check() {
	local msg=$1
	shift
	if "$@"; then
		echo "ok: $msg"
		passed=$((passed + 1))
	else
		echo "FAIL: $msg"
		failed=$((failed + 1))
	fi
}
secret() { od -An -N16 -tx1 /dev/urandom | tr -d ' \n'; }
# status counts of files: "503 x4, 504 x1"
statuses() { cat "$@" 2>/dev/null | sort | uniq -c | awk '{ c = $1; $1 = ""; printf "%s%s x%s", s, substr($0, 2), c; s = ", " }'; }
# the value of JSON field $1 (a number or a hex string) in stdin
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([0-9a-f]*\)\"\{0,1\}[,}].*/\1/p"; }

post() { # WORLD BODY [KEY] -> the answer's body, then its status on the last line
	local key=()
	[ -z "${3:-}" ] || key=(-H "Idempotency-Key: \"$3\"")
	curl -sS --max-time "${CURL_MAX:-30}" -w '\n%{http_code}\n' -X POST \
		-H "Authorization: Bearer ${AUTH-$EDIT_TOKEN}" -H 'Content-Type: application/json' \
		"${key[@]}" -d "$2" "$F/v1/worlds/$1/edits" 2>/dev/null || printf '\n000\n'
}
# WORLD BODY KEY CODES LIMIT: post BODY with Idempotency-Key KEY until it
# gets 200, retrying the same key on every other answer (503, 504, 409,
# the front's 502/503, 000 for none) after a short backoff; 400 and 422 end it
# (a bug: the key is good and the body the same). Gives up LIMIT s after
# the first attempt, or HOLD s after $tmp/stop appears. Appends each
# answer's status to the file CODES ("200 replay" for a replayed one);
# prints the last answer (body, status), then the attempts on a line.
keyed_post() {
	local n=0 end=$((SECONDS + $5)) held='' out code
	while :; do
		n=$((n + 1))
		out=$(post "$1" "$2" "$3")
		code=${out##*$'\n'}
		case $code,$out in
		200,*'"replay":true'*) echo "200 replay" ;;
		*) echo "$code" ;;
		esac >>"$4"
		case $code in 200 | 400 | 422) break ;; esac
		if [ -e "$tmp/stop" ] && [ -z "$held" ]; then
			held=1
			[ $((SECONDS + ${HOLD:-60})) -ge "$end" ] || end=$((SECONDS + ${HOLD:-60}))
		fi
		[ "$SECONDS" -lt "$end" ] || break
		sleep "0.$((n < 5 ? n * 2 : 9))"
	done
	printf '%s\n%s\n' "$out" "$n"
}

# ---- loaders -------------------------------------------------------------------------------
# loader L [TAG]: edits world LW through the front until $tmp/stop, one edit
# a batch at coordinates no other loader uses, each with its own
# Idempotency-Key, retried with it until 200 (keyed_post; at most HOLD s
# once told to stop). Files: TAGintended.L ("x z" of every edit meant),
# TAGcodes.L (every answer's status), TAGtries.L ("x z attempts
# last-status"); acked.L ("first_seq x z" of each acknowledged one, untagged:
# every round's).
loader() {
	local l=$1 tag=${2:-} b=0 x z res out code seq
	while [ ! -e "$tmp/stop" ]; do
		b=$((b + 1))
		x=$((l * 100000 + b)) z=$((-b))
		echo "$x $z" >>"$tmp/${tag}intended.$l"
		res=$(CURL_MAX=5 keyed_post "$LW" "{\"edits\":[{\"op\":\"raise\",\"x\":$x,\"z\":$z,\"radius\":4,\"strength\":0.25}]}" \
			"$run.$l.$b" "$tmp/${tag}codes.$l" 600)
		out=${res%$'\n'*}
		code=${out##*$'\n'}
		echo "$x $z ${res##*$'\n'} $code" >>"$tmp/${tag}tries.$l"
		if [ "$code" = 200 ]; then
			seq=$(printf '%s' "$out" | sed -n 's/.*"first_seq":\([0-9]*\).*/\1/p')
			echo "$seq $x $z" >>"$tmp/acked.$l"
		fi
	done
}
# load_start [ROUND]: LOADERS loaders in the background (pids in
# loader_pids); with ROUND, loaders L + 10 ROUND whose files are tagged
# "ROUND." (the container test's fault rounds), else loaders 1..LOADERS
load_start() {
	local l
	rm -f "$tmp/stop"
	loader_pids=()
	for l in $(seq "$LOADERS"); do
		if [ -n "${1:-}" ]; then loader "$((l + 10 * $1))" "$1." & else loader "$l" & fi
		loader_pids+=($!)
	done
}
load_stop() {
	touch "$tmp/stop"
	wait "${loader_pids[@]}" 2>/dev/null || true
	loader_pids=()
}
acked_now() { cat "$tmp"/acked.* 2>/dev/null | wc -l; }
# the edits of world LW in the log of node $1, as "seq x z"
log_of() {
	local since=0 next
	: >"$tmp/log"
	while :; do
		node_get "$1" "/v1/worlds/$LW/edits?since=$since&limit=1000" >"$tmp/page"
		echo >>"$tmp/page" # its last line, which sed would leave unended
		sed 's/},{/}\n{/g' "$tmp/page" |
			sed -n 's/.*"seq":\([0-9]*\),"op":"raise","x":\(-\{0,1\}[0-9]*\),"z":\(-\{0,1\}[0-9]*\),.*/\1 \2 \3/p' \
				>>"$tmp/log"
		next=$(grep -o '"next":[0-9]*' "$tmp/page" | cut -d: -f2 || true)
		[ -n "$next" ] || break
		since=$next
	done
	sort -u "$tmp/log"
}
