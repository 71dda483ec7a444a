#!/bin/bash
# tile_versions.sh - versioned URLs (?v=SEQ, docs/edits.md) against the real
# server: the current version answers 200 with an immutable Cache-Control
# and the same bytes as the unversioned URL; an older version, or a later
# sequence number at which the chunk had not changed, is a 302 to the current
# one (not cacheable); a version beyond the world's sequence is a 404 that
# no cache keeps. Heights follow the chunk's own version; the material layer,
# objects and bundles the version they read (neighbours, members). The
# versions come from /hashes, as a client that syncs gets them.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

server_start --workers 2 --node-name tv-node-1

# get URL [CURL ARGS...]: headers in $TMP/h (lowercase names, no CR), body in
# $TMP/b; prints the status.
get() {
	local url=$1
	shift
	"${CURL[@]}" -D "$TMP/h.raw" -o "$TMP/b" -w '%{http_code}' "$@" "$url"
	tr -d '\r' <"$TMP/h.raw" | sed 's/^\([^:]*\):/\L\1:/' >"$TMP/h"
}
hdr() { sed -n "s/^$1: //p" "$TMP/h" | head -n 1; }
# version CX CZ: the chunk's edit version from /hashes (0 when not listed)
version() {
	"${CURL[@]}" "$BASE/v1/worlds/42/hashes?cx0=$1&cz0=$2&cx1=$1&cz1=$2" |
		grep -o '"version":[0-9]*' | cut -d: -f2 | grep . || echo 0
}
edit_seq_of() { "$BUILD/terrain-client" decode "$1" | sed -n 's/^edit_seq: //p'; }
IMM='public, max-age=31536000, immutable'
T=$BASE/v1/worlds/42/chunks/0

# ---- a world with no edits: version 0 everywhere ---------------------------------------
check "unversioned tile: 200" eq "$(get "$T/0/0")" 200
cp "$TMP/b" "$TMP/plain0"
etag0=$(hdr etag)
check "unversioned: today's short max-age" eq "$(hdr cache-control)" "public, max-age=60"
check "the node names itself" eq "$(hdr x-terrain-node)" tv-node-1
check "?v=0 of an unedited chunk: 200" eq "$(get "$T/0/0?v=0")" 200
check "?v=0: immutable" eq "$(hdr cache-control)" "$IMM"
check "?v=0: one Cache-Control line" eq "$(grep -c '^cache-control:' "$TMP/h")" 1
check "?v=0: X-Cache still sent" eq "$(hdr x-cache)" hit
check "?v=0: same bytes as unversioned" cmp -s "$TMP/b" "$TMP/plain0"
check "?v=0: same ETag" eq "$(hdr etag)" "$etag0"
check "?v=1 beyond the world's sequence (0): 404" eq "$(get "$T/0/0?v=1")" 404
check "404: no cache may keep it" eq "$(hdr cache-control)" no-store
check "404 says why" grep -q 'beyond' "$TMP/b"
check "?v=abc: 400" eq "$(get "$T/0/0?v=abc")" 400
check "?v=-1: 400" eq "$(get "$T/0/0?v=-1")" 400
check "?v= (empty): 400" eq "$(get "$T/0/0?v=")" 400

# ---- two edits: one on chunk (0,0), then one far away on (3,3) -------------------------
"${CURL[@]}" -X POST -H 'Content-Type: application/json' -d \
	'{"edits":[{"op":"raise","x":100,"z":100,"radius":10,"strength":3},
	  {"op":"raise","x":900,"z":900,"radius":10,"strength":3}]}' \
	"$BASE/v1/worlds/42/edits" >"$TMP/post"
check "batch accepted as seq 1..2" grep -q '"first_seq":1,"last_seq":2' "$TMP/post"
v00=$(version 0 0)
v33=$(version 3 3)
v10=$(version 1 0)
check "chunk (0,0) is at version 1" eq "$v00" 1
check "chunk (3,3) is at version 2" eq "$v33" 2
check "chunk (1,0) has no edit" eq "$v10" 0

check "current version of (0,0): 200" eq "$(get "$T/0/0?v=$v00")" 200
cp "$TMP/b" "$TMP/v1"
check "current version: immutable" eq "$(hdr cache-control)" "$IMM"
check "the tile's header carries that version" eq "$(edit_seq_of "$TMP/v1")" "$v00"
check "the edit changed the bytes" not cmp -s "$TMP/v1" "$TMP/plain0"
get "$T/0/0" >/dev/null
check "unversioned now gives the same bytes" cmp -s "$TMP/b" "$TMP/v1"
check "unversioned stays short-lived" eq "$(hdr cache-control)" "public, max-age=60"

check "older ?v=0: 302" eq "$(get "$T/0/0?v=0")" 302
check "302 to the current version" eq "$(hdr location)" "/v1/worlds/42/chunks/0/0/0?v=1"
check "302: not kept by caches" eq "$(hdr cache-control)" no-cache
check "302 body names the version" grep -q '"version":1' "$TMP/b"
check "?v=2 (a later seq, chunk unchanged): 302" eq "$(get "$T/0/0?v=2")" 302
check "to the one canonical URL" eq "$(hdr location)" "/v1/worlds/42/chunks/0/0/0?v=1"
check "?v=3 beyond the world's sequence (2): 404" eq "$(get "$T/0/0?v=3")" 404
check "other parameters kept in the Location" eq \
	"$(get "$T/0/0?gen=default&v=0&layers=height" >/dev/null; hdr location)" \
	"/v1/worlds/42/chunks/0/0/0?gen=default&v=1&layers=height"
"${CURL[@]}" -L -o "$TMP/followed" "$T/0/0?v=0"
check "following the redirect gives the current tile" cmp -s "$TMP/followed" "$TMP/v1"
check "an untouched chunk at v=0: 200" eq "$(get "$T/5/5?v=0")" 200
check "an untouched chunk: immutable" eq "$(hdr cache-control)" "$IMM"

# zstd, HEAD and revalidation of a versioned tile
check "zstd ?v=1: 200" eq "$(get "$T/0/0?v=1" --compressed)" 200
check "zstd ?v=1: zstd" eq "$(hdr content-encoding)" zstd
check "zstd ?v=1: immutable" eq "$(hdr cache-control)" "$IMM"
check "zstd ?v=1: decodes to the same tile" cmp -s "$TMP/b" "$TMP/v1"
etag_z=$(hdr etag)
check "HEAD ?v=1: 200" eq "$(get "$T/0/0?v=1" -I)" 200
check "HEAD ?v=1: immutable" eq "$(hdr cache-control)" "$IMM"
check "HEAD ?v=1: no body" eq "$("${CURL[@]}" -I -o /dev/null -w '%{size_download}' "$T/0/0?v=1")" 0
check "If-None-Match on ?v=1: 304" eq "$(get "$T/0/0?v=1" --compressed -H "If-None-Match: $etag_z")" 304
check "304 of ?v=1: immutable" eq "$(hdr cache-control)" "$IMM"
check "304 of ?v=1: one Cache-Control line" eq "$(grep -c '^cache-control:' "$TMP/h")" 1
check "304 of unversioned: short" eq \
	"$(get "$T/0/0" --compressed -H "If-None-Match: $etag_z" >/dev/null; hdr cache-control)" \
	"public, max-age=60"

# ---- what reads beyond its chunk follows its neighbours' versions ------------------------
# (1,0) has no edit itself, but its neighbour (0,0) has: heights at 0, the
# material layer and objects at 1
check "(1,0) heights ?v=0: 200" eq "$(get "$T/1/0?v=0")" 200
check "(1,0) heights ?v=1: 302 to v=0" eq "$(get "$T/1/0?v=1" >/dev/null; hdr location)" \
	"/v1/worlds/42/chunks/0/1/0?v=0"
M="$T/1/0?layers=height,material"
check "(1,0) material ?v=1: 200" eq "$(get "$M&v=1")" 200
check "(1,0) material: immutable" eq "$(hdr cache-control)" "$IMM"
check "(1,0) material ?v=0: 302 to v=1" eq "$(get "$M&v=0" >/dev/null; hdr location)" \
	"/v1/worlds/42/chunks/0/1/0?layers=height,material&v=1"
O=$BASE/v1/worlds/42/objects/1/0
check "(1,0) objects ?v=1: 200" eq "$(get "$O?v=1")" 200
check "(1,0) objects: immutable" eq "$(hdr cache-control)" "$IMM"
check "(1,0) objects ?v=0: 302" eq "$(get "$O?v=0")" 302
check "(2,0) objects (no edited neighbour) ?v=0: 200" eq "$(get "$BASE/v1/worlds/42/objects/2/0?v=0")" 200

# ---- bundles: the largest version of their members ------------------------------------
R="$T?cx0=0&cz0=0&cx1=1&cz1=1"
check "bundle ?v=1: 200" eq "$(get "$R&v=1")" 200
check "bundle ?v=1: immutable" eq "$(hdr cache-control)" "$IMM"
check "bundle ?v=1: one Cache-Control line" eq "$(grep -c '^cache-control:' "$TMP/h")" 1
cp "$TMP/b" "$TMP/bundle1"
get "$R" >/dev/null
check "bundle unversioned: same bytes" cmp -s "$TMP/b" "$TMP/bundle1"
check "bundle unversioned: short" eq "$(hdr cache-control)" "public, max-age=60"
check "bundle ?v=0: 302 to v=1" eq "$(get "$R&v=0" >/dev/null; hdr location)" \
	"/v1/worlds/42/chunks/0?cx0=0&cz0=0&cx1=1&cz1=1&v=1"
check "bundle of untouched chunks ?v=0: 200" eq "$(get "$T?cx0=5&cz0=5&cx1=6&cz1=6&v=0")" 200
check "bundle ?v=9: 404" eq "$(get "$R&v=9")" 404

# ---- another edit of (0,0): the old version moves, never changes its bytes --------------
"${CURL[@]}" -X POST -H 'Content-Type: application/json' -d \
	'{"edits":[{"op":"lower","x":120,"z":80,"radius":15,"strength":2}]}' \
	"$BASE/v1/worlds/42/edits" >"$TMP/post"
check "third edit is seq 3" grep -q '"first_seq":3' "$TMP/post"
check "chunk (0,0) is at version 3" eq "$(version 0 0)" 3
check "old ?v=1: 302 now, never other bytes" eq "$(get "$T/0/0?v=1")" 302
check "to ?v=3" eq "$(hdr location)" "/v1/worlds/42/chunks/0/0/0?v=3"
check "?v=3: 200" eq "$(get "$T/0/0?v=3")" 200
check "?v=3 carries edit_seq 3" eq "$(edit_seq_of "$TMP/b")" 3
check "?v=3 differs from ?v=1" not cmp -s "$TMP/b" "$TMP/v1"

server_stop
finish
