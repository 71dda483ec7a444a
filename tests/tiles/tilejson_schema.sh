#!/bin/bash
# tilejson_schema.sh - the server's TileJSON documents (both styles, text
# seeds, another preset, an origin, behind a proxy's Forwarded header)
# against the official TileJSON 3.0.0 JSON schema (mapbox/tilejson-spec,
# vendored in tests/tiles/tilejson/ with its licence), validated by Debian's
# python3-jsonschema, and against the specification's text where the
# schema cannot reach (absolute endpoints, bounds, centre, zooms); each
# template gives a PNG tile. Then discovery: the world info of a world URL
# links its TileJSON documents and the OpenAPI document, and following the
# links (resolved against the world URL) gives them. The checks are
# tests/lib/tilejson_check.py. SKIP without a python3 that has jsonschema.
. "$(dirname "$0")/../lib/lib.sh"

PY=
for p in /usr/bin/python3 python3; do
	command -v "$p" >/dev/null && "$p" -c 'import jsonschema' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "SKIP: no python3 with jsonschema (apt-get install python3-jsonschema)"; exit 0; }

server_start
check "the TileJSON documents hold to the TileJSON 3.0.0 schema and text; world info links them" \
	"$PY" "$(dirname "$0")/../lib/tilejson_check.py" "$(dirname "$0")/tilejson/3.0.0/schema.json" "$BASE"
finish
