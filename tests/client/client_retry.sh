#!/bin/bash
# client_retry.sh - terrain-client edit retries a batch exactly as issue 35
# asks, against a scripted fake edit endpoint on 127.0.0.1
# (tests/lib/fake_edits.py, which logs each POST's Idempotency-Key): every
# attempt of one run carries the same well-formed key and two runs carry
# different ones; 503, 504, a dropped connection, a timeout, 409 and 429
# are retried and the success says how many attempts it took (and
# "replay: true" for a stored answer); Retry-After and the backoff are
# waited (lower bounds only, so load cannot fail them); the client stops
# at --attempts and says so, with the key and "outcome is unknown" when an
# attempt may have been applied; 422, 400 and 401 are not retried;
# --idempotency-key is sent as given; a server that is down is retried and
# reported as not applied. The JavaScript module's postEdits has the same
# tests in tests/client/js/edits.test.mjs, run here too when Node.js 18+ is there.
. "$(dirname "$0")/../lib/lib.sh"
unset TERRAIN_EDIT_TOKEN

CLIENT=$BUILD/terrain-client
HERE=$(cd "$(dirname "$0")" && pwd)
T="timeout -k 5 $(scaled 120)"
command -v python3 >/dev/null || { echo "SKIP: the fake server needs python3"; exit 0; }
[ -x "$CLIENT" ] || { echo "FAIL: build $CLIENT first"; exit 1; }

# fake SCRIPT: start tests/lib/fake_edits.py with SCRIPT, logging to $TMP/keys;
# sets FAKE (its URL)
fake() {
	rm -f "$TMP/keys" "$TMP/fake.out"
	: >"$TMP/keys"
	python3 "$HERE/../lib/fake_edits.py" "$1" "$TMP/keys" >"$TMP/fake.out" 2>"$TMP/fake.err" &
	SERVERS+=("$!")
	FAKE_PID=$!
	wait_until 60 grep -q listening "$TMP/fake.out" ||
		{ echo "FAIL: the fake server did not start"; cat "$TMP/fake.err"; exit 1; }
	FAKE="http://$(sed -n 's/^listening on //p' "$TMP/fake.out")"
}
fake_stop() { kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; }
# edit OUT ERR ARGS...: one raise through the fake, exit status returned
edit() {
	local o=$1 e=$2
	shift 2
	$T "$CLIENT" edit --server "$FAKE" --seed 42 --op raise --x 1 --z 2 \
		--radius 5 --strength 1 "$@" >"$o" 2>"$e"
}
keys() { awk '{ print $2 }' "$TMP/keys"; }
nkeys() { wc -l <"$TMP/keys" | tr -d ' '; }
# gap N: seconds between request N and N+1 of the log
gap() { awk -v n="$1" 'NR == n { a = $1 } NR == n + 1 { printf "%.3f", $1 - a }' "$TMP/keys"; }
ne() { [ "$1" != "$2" ] || { echo "  got '$1' twice"; return 1; }; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }' || { echo "  got $1, want >= $2"; return 1; }; }

# ---- 503, 504, a dropped connection, then applied: 4 attempts, one key ----
fake 503,504,drop,200
check "503, 504, drop, 200: exit 0" edit "$TMP/out" "$TMP/err"
cat "$TMP/out" "$TMP/err"
check "the answer is printed" has "$TMP/out" '^first_seq: 7$'
check "it says it took 4 attempts" has "$TMP/out" '^attempts: 4$'
check "no replay line for a first answer" not has "$TMP/out" '^replay:'
check "4 requests reached the server" eq "$(nkeys)" 4
check "every attempt carries the same key" eq "$(keys | sort -u | wc -l | tr -d ' ')" 1
check "the key is a quoted 32-digit lowercase hex string" has <(keys | head -1) '^"[0-9a-f]{32}"$'
check "the body is the same on every attempt" eq "$(cut -d' ' -f3- "$TMP/keys" | sort -u | wc -l | tr -d ' ')" 1
check "each retry is reported on stderr" eq "$(grep -c 'retrying in [0-9]* ms' "$TMP/err")" 3
check "the retry names the unknown answer" has "$TMP/err" 'HTTP 504: outcome_unknown'
first=$(keys | head -1)
fake_stop

# ---- a second run: another key ----
fake 200
check "a second run: exit 0 in 1 attempt" edit "$TMP/out" "$TMP/err"
check "a second run: attempts: 1" has "$TMP/out" '^attempts: 1$'
check "a second run sends a fresh key" ne "$(keys)" "$first"
check "a second run's key is well-formed too" has <(keys) '^"[0-9a-f]{32}"$'
fake_stop

# ---- the bound: 504 every time, --attempts 3 ----
fake 504
check "504 forever, --attempts 3: exit 1" not edit "$TMP/out" "$TMP/err" --attempts 3
cat "$TMP/err"
check "it stopped at 3 requests" eq "$(nkeys)" 3
check "it says it gave up after 3 attempts, with the last answer" has "$TMP/err" \
	'gave up after 3 attempts; the last: HTTP 504: outcome_unknown'
check "it says the outcome is unknown" has "$TMP/err" 'the outcome is unknown'
key=$(keys | head -1 | tr -d '"')
check "it prints the key to retry with" has "$TMP/err" "--idempotency-key $key"
check "nothing on stdout" eq "$(cat "$TMP/out")" ""
fake_stop

# ---- 503 only: not applied, said so ----
fake 503
check "503 forever, --attempts 2: exit 1" not edit "$TMP/out" "$TMP/err" --attempts 2
cat "$TMP/err"
check "503 forever: 2 requests" eq "$(nkeys)" 2
check "503 forever: not applied" has "$TMP/err" 'gave up after 2 attempts; the last: HTTP 503.*the edit was not applied$'
check "503 forever: no unknown outcome" not has "$TMP/err" 'unknown'
fake_stop

# ---- answers that are not retried ----
for s in 422 400 401; do
	fake $s,200
	check "$s: exit 1" not edit "$TMP/out" "$TMP/err"
	check "$s: one request only" eq "$(nkeys)" 1
	check "$s: its answer named" has "$TMP/err" "HTTP $s: "
	fake_stop
done
check "401: the token hint" has "$TMP/err" 'give the token with --token'
# a 422 after an unknown outcome: stops, and still says the first may count
fake 504,422
check "504 then 422: exit 1" not edit "$TMP/out" "$TMP/err"
cat "$TMP/err"
check "504 then 422: 2 requests" eq "$(nkeys)" 2
check "504 then 422: not retried, outcome unknown" has "$TMP/err" 'HTTP 422: .*\(not retried\); the outcome is unknown'
fake_stop

# ---- a timeout, 409 and 429, then a replayed answer; a given key ----
fake hang,409,429,200r
check "hang, 409, 429, replay: exit 0" edit "$TMP/out" "$TMP/err" --timeout-ms 300 \
	--idempotency-key 'my-key_1.A~'
cat "$TMP/out" "$TMP/err"
check "the timeout was retried: 4 attempts" has "$TMP/out" '^attempts: 4$'
check "the replay is said" has "$TMP/out" '^replay: true$'
check "the given key on every attempt" eq "$(keys | sort -u)" '"my-key_1.A~"'
check "the timeout is named" has "$TMP/err" 'no answer \(timeout'
fake_stop
check "a key with a quote: exit 2" eq "$(edit /dev/null /dev/null --idempotency-key 'a"b'; echo $?)" 2
check "an empty key: exit 2" eq "$(edit /dev/null /dev/null --idempotency-key ''; echo $?)" 2
check "a key of 256 characters: exit 2" eq \
	"$(edit /dev/null /dev/null --idempotency-key "$(printf 'k%.0s' $(seq 256))"; echo $?)" 2
check "--attempts 0: exit 2" eq "$(edit /dev/null /dev/null --attempts 0; echo $?)" 2

# ---- waits: Retry-After, else the backoff (lower bounds) ----
fake 503/1,502,502,200
check "Retry-After 1, 502, 502, 200: exit 0" edit "$TMP/out" "$TMP/err"
check "Retry-After: 1 was waited (>= 1 s)" ge "$(gap 1)" 0.95
check "the first backoff is at least 50 ms" ge "$(gap 2)" 0.05
check "the second backoff is at least 100 ms" ge "$(gap 3)" 0.1
fake_stop

# ---- a server that is down: retried, then not applied ----
down=$(sed -n 's/^listening on 127\.0\.0\.1://p' "$TMP/fake.out")
check "server down: exit 1" not $T "$CLIENT" edit --server "http://127.0.0.1:$down" \
	--seed 42 --op raise --x 1 --z 2 --radius 5 --strength 1 --attempts 2 \
	>/dev/null 2>"$TMP/err"
cat "$TMP/err"
check "server down: a clear message" has "$TMP/err" \
	'gave up after 2 attempts; the last: cannot reach the server .*connection refused.*the edit was not applied'

# ---- the JavaScript module's postEdits (tests/client/js/edits.test.mjs) ----
if node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)' 2>/dev/null; then
	timeout "$(scaled 240)" node --test --test-reporter=spec "$HERE/js/edits.test.mjs" 2>&1 |
		tee "$TMP/node.log"
	check "node --test tests/client/js/edits.test.mjs passes" eq "${PIPESTATUS[0]}" 0
else
	echo "SKIP: postEdits needs Node.js 18 or later"
fi
finish
