#!/bin/bash
# last_modified.sh - Last-Modified and If-Modified-Since against the real
# server: the viewer's files carry their source files' modification times,
# /v1/presets the newest of its preset files (built-in and --presets DIR);
# If-Modified-Since answers 304 at or after that date, 200 before it or
# when the date is not valid, in all three HTTP-date forms; If-None-Match
# takes precedence over it both ways (RFC 9110 13.2.2); tiles carry no
# Last-Modified and ignore If-Modified-Since (docs/operations.md says why).
. "$(dirname "$0")/../lib/lib.sh"

mkdir -p "$TMP/presets"
cp presets/alpine.json "$TMP/presets/cliffs.json"
touch -d "@$(($(date +%s) - 30))" "$TMP/presets/cliffs.json"
server_start --presets "$TMP/presets"

# header URL NAME [CURL ARGS...]: the value of response header NAME
header() {
	local url=$1 name=$2
	shift 2
	curl -sS -o /dev/null -D - "$@" "$url" | tr -d '\r' |
		sed -n "s/^$name: //Ip" | head -1
}
status() { curl -sS -o /dev/null -w '%{http_code}' "$@"; }
# epoch DATE: seconds since the epoch of an HTTP-date (Python's parser)
epoch() { python3 -c 'import email.utils, sys; print(int(email.utils.parsedate_to_datetime(sys.argv[1]).timestamp()))' "$1"; }
# http_date FORM SECONDS: SECONDS as an IMF-fixdate, RFC 850 or asctime date
http_date() {
	python3 -c 'import sys, time
form, t = sys.argv[1], time.gmtime(int(sys.argv[2]))
fmt = {"imf": "%a, %d %b %Y %H:%M:%S GMT", "rfc850": "%A, %d-%b-%y %H:%M:%S GMT",
       "asctime": "%a %b %e %H:%M:%S %Y"}[form]
print(time.strftime(fmt, t))' "$1" "$2"
}
newest() { stat -c %Y "$@" | sort -n | tail -1; }

# the dates themselves
app_lm=$(header "$BASE/assets/app.js" Last-Modified)
pre_lm=$(header "$BASE/v1/presets" Last-Modified)
date_now=$(header "$BASE/assets/app.js" Date)
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	check "an asset's Last-Modified is its source file's mtime" \
		eq "$(epoch "$app_lm")" "$(stat -c %Y server/assets/app.js)"
	check "/v1/presets's Last-Modified is the newest preset file's mtime" \
		eq "$(epoch "$pre_lm")" "$(newest presets/*.json "$TMP/presets/cliffs.json")"
fi
check "Last-Modified is no later than Date" \
	python3 -c "import sys; sys.exit(not ($(epoch "$app_lm") <= $(epoch "$date_now")))"
check "the viewer page has one too" test -n "$(header "$BASE/" Last-Modified)"

# If-Modified-Since, each resource
for path in /assets/app.js /v1/presets /; do
	lm=$(epoch "$(header "$BASE$path" Last-Modified)")
	etag=$(header "$BASE$path" ETag)
	check "$path: If-Modified-Since = Last-Modified gives 304" \
		eq "$(status -H "If-Modified-Since: $(http_date imf "$lm")" "$BASE$path")" 304
	check "$path: a later date gives 304" \
		eq "$(status -H "If-Modified-Since: $(http_date imf $((lm + 3600)))" "$BASE$path")" 304
	check "$path: a second earlier gives 200" \
		eq "$(status -H "If-Modified-Since: $(http_date imf $((lm - 1)))" "$BASE$path")" 200
	check "$path: RFC 850 and asctime dates are read too" \
		eq "$(status -H "If-Modified-Since: $(http_date rfc850 "$lm")" "$BASE$path") $(status -H "If-Modified-Since: $(http_date asctime "$lm")" "$BASE$path")" "304 304"
	check "$path: a date that is not one is ignored (200)" \
		eq "$(status -H "If-Modified-Since: yesterday" "$BASE$path")" 200
	check "$path: If-None-Match that does not match wins over a matching date (200)" \
		eq "$(status -H 'If-None-Match: "0000000000000000"' -H "If-Modified-Since: $(http_date imf "$lm")" "$BASE$path")" 200
	check "$path: If-None-Match that matches wins over an old date (304)" \
		eq "$(status -H "If-None-Match: $etag" -H "If-Modified-Since: $(http_date imf $((lm - 86400)))" "$BASE$path")" 304
	check "$path: HEAD with the date gives 304" \
		eq "$(status -I -H "If-Modified-Since: $(http_date imf "$lm")" "$BASE$path")" 304
done
h304=$(curl -sS -o /dev/null -D - -H "If-Modified-Since: $pre_lm" "$BASE/v1/presets" | tr -d '\r')
check "a 304 keeps ETag and Last-Modified, and has no body length" \
	python3 -c 'import sys; h = sys.argv[1].lower(); sys.exit(not ("\netag: " in h and "\nlast-modified: " in h and "content-length" not in h))' "$h304"
check "the preflight allows If-Modified-Since" \
	contains "$(header "$BASE/v1/presets" Access-Control-Allow-Headers -X OPTIONS)" "If-Modified-Since"

# tiles: ETag only
tile="$BASE/v1/worlds/5/chunks/2/0/0"
check "a tile has no Last-Modified" eq "$(header "$tile" Last-Modified)" ""
check "If-Modified-Since on a tile is ignored (200)" \
	eq "$(status -H "If-Modified-Since: $(http_date imf $(($(date +%s) + 86400)))" "$tile")" 200
check "server stops with 0" server_stop
finish
