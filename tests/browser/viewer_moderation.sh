#!/bin/bash
# run: once
# viewer_moderation.sh - moderation in the map viewer (GET /) in headless
# Chromium against the real server with players' tokens
# (--token-secret-file, tokens minted by `terrain-server token`): two
# players edit through the page's brush, a click on the map lists both as
# the authors of the point (newest first, with time and op), a player's
# token and a bad one get the server's 403 and 401 details in the
# moderator panel, the moderator reverts one player's edits in view (the
# answer's count and chunks; the other player's edits and the player's
# edit outside the view stay), the page refreshes the chunk, and its
# heights equal, sample for sample, those of a second server whose log
# holds only the other player's edit; the undo brings back the heights of
# before the revert exactly. The test itself is
# tests/browser/moderation.test.mjs.
#
# Needs Debian's chromium, Node.js 20+ and playwright-core (tests/browser/
# package.json, installed by npm ci when missing; tests/browser/deps.sh).
# When one of them cannot be had, prints "SKIP: <reason>" and exits 0.
set -u
BUILD=${BUILD:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
BROWSER_DIR=$HERE
. "$BROWSER_DIR/deps.sh"

trap stop_all EXIT
skip() {
	echo "SKIP: $*"
	[ "$FAILED" = 0 ] || { echo "$FAILED failed"; exit 1; }
	exit 0
}

[ -x "$SERVER_BIN" ] || { echo "FAIL: build $SERVER_BIN first"; exit 1; }

# ---- Chromium, Node.js, playwright-core (not the pages' libraries) -----------
[ -x /usr/bin/chromium ] || skip "no /usr/bin/chromium (apt-get install chromium)"
command -v node >/dev/null && command -v npm >/dev/null || skip "Node.js and npm are not installed"
node_ok 20 || skip "playwright-core needs Node.js 20 or later, this is $(node --version)"
npm_dir "$BROWSER_DIR"

# ---- the secret, the tokens, two servers --------------------------------------------
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TMP/secret"
echo >>"$TMP/secret"
mint() { "$SERVER_BIN" token --secret-file "$TMP/secret" --ttl 3600 "$@"; }
ALICE=$(mint --sub alice) && BOB=$(mint --sub bob) && MIA=$(mint --sub mia --role moderator) ||
	{ echo "FAIL: terrain-server token"; exit 1; }

# the reference: a server whose log will hold only bob's edit
server_start --data-dir "$TMP/ref" --token-secret-file "$TMP/secret"
REF=$BASE
REF_PID=$SERVER_PID
# the server under test (started last: its clean stop is checked)
server_start --data-dir "$TMP/data" --token-secret-file "$TMP/secret"

BASE=$BASE REF=$REF WORK=$TMP ALICE=$ALICE BOB=$BOB MIA=$MIA SCREENSHOT=$BUILD/viewer-moderation.png \
	timeout "$(scaled 300)" node "$BROWSER_DIR/moderation.test.mjs"
rc=$?
[ $rc = 124 ] && echo "FAIL: the browser test timed out"
[ $rc = 0 ] || FAILED=$((FAILED + 1))
kill_ours TERM "$REF_PID"
check "the server stops cleanly (SIGTERM, exit 0; sanitizers quiet)" server_stop
finish
