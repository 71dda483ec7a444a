#!/bin/bash
# openapi.sh - the OpenAPI 3.1 description (server/assets/openapi.json)
# against the real server: served as is at /v1/openapi.json, the same
# routes as `terrain-server routes`, and every operation's real answers
# (examples, errors, conditionals, the event stream, a token server's 401)
# valid against it. The checks are tests/openapi_check.py (standard library).
. "$(dirname "$0")/lib.sh"

"$SERVER_BIN" routes >"$TMP/routes"
check "terrain-server routes prints the table" test -s "$TMP/routes"
server_start --edit-rate 0
BASE1=$BASE
TOKEN=openapi-check-token
server_start --data-dir "$TMP/data2" --edit-token "$TOKEN"
check "the description holds for both servers" \
	python3 tests/openapi_check.py server/assets/openapi.json "$TMP/routes" "$BASE1" "$BASE" "$TOKEN"
finish
