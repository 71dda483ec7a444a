#!/bin/bash
# http_codings.sh - tiles in every content coding, as HTTP clients that
# nobody here wrote see them (docs/codings.md): curl --compressed (zstd),
# curl and Python's urllib asking for gzip, wget --compression=gzip (when
# installed), clients that ask for nothing (identity). Each body decodes to
# what `terrain-server generate` writes; each coding has its own strong
# ETag and 304; Vary, HEAD and Range; identity and gzip hits come from the
# cache; ?encoding=zstd sends the zstd frame itself as application/zstd,
# whatever the client negotiates; bundles and objects; an edit changes
# every coding's tag.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

server_start --workers 2

hdr() { tr -d '\r' <"$1" | sed -n "s/^$2: //Ip" | head -n 1; }
metric() { "${CURL[@]}" "$BASE/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }

# ---- each coding decodes to the tile `generate` writes -------------------------
for t in "42 0 3 -2 default height" "my-world 2 -7 11 alpine height,material" \
	"7 0 2147483647 -2147483648 mesa height"; do
	set -- $t
	"$SERVER_BIN" generate --seed "$1" --lod "$2" --cx "$3" --cz "$4" --gen "$5" \
		--layers "$6" -o "$TMP/cli"
	url="$BASE/v1/worlds/$1/chunks/$2/$3/$4?gen=$5&layers=$6"
	"${CURL[@]}" --compressed -D "$TMP/h_z" -o "$TMP/z" "$url"
	"${CURL[@]}" -H 'Accept-Encoding: gzip' -D "$TMP/h_g" -o "$TMP/g.gz" "$url"
	"${CURL[@]}" -D "$TMP/h_id" -o "$TMP/id" "$url"
	check "zstd (curl --compressed) decodes to generate ($t)" cmp -s "$TMP/cli" "$TMP/z"
	check "zstd is negotiated ($t)" eq "$(hdr "$TMP/h_z" content-encoding)" zstd
	check "gzip for Accept-Encoding: gzip ($t)" eq "$(hdr "$TMP/h_g" content-encoding)" gzip
	check "gzip body gunzips to generate ($t)" cmp -s "$TMP/cli" <(gzip -dc "$TMP/g.gz")
	check "gzip Content-Length is the body ($t)" eq "$(hdr "$TMP/h_g" content-length)" \
		"$(stat -c %s "$TMP/g.gz")"
	check "identity without Accept-Encoding ($t)" cmp -s "$TMP/cli" "$TMP/id"
	check "identity has no Content-Encoding ($t)" eq "$(hdr "$TMP/h_id" content-encoding)" ""
	for h in h_z h_g h_id; do
		check "Vary: Accept-Encoding on $h ($t)" eq "$(hdr "$TMP/$h" vary)" Accept-Encoding
	done
	echo "sizes ($t): identity $(stat -c %s "$TMP/id"), zstd $(hdr "$TMP/h_z" content-length)," \
		"gzip $(stat -c %s "$TMP/g.gz") bytes"
done
# curl decoding gzip itself (--compressed with a gzip-only offer)
"${CURL[@]}" --compressed -H 'Accept-Encoding: gzip' -D "$TMP/h" -o "$TMP/g" "$url"
check "curl --compressed decodes the gzip answer" cmp -s "$TMP/cli" "$TMP/g"
check "x-gzip is gzip" eq "$("${CURL[@]}" -o /dev/null -D - -H 'Accept-Encoding: x-gzip' "$url" |
	tr -d '\r' | sed -n 's/^[Cc]ontent-[Ee]ncoding: //p')" gzip

# ---- clients as they come -------------------------------------------------------
url="$BASE/v1/worlds/42/chunks/0/3/-2"
"$SERVER_BIN" generate --seed 42 --lod 0 --cx 3 --cz -2 -o "$TMP/cli"
if command -v python3 >/dev/null; then
	py=$(python3 - "$url" "$TMP/cli" <<'EOF'
import gzip, sys, urllib.request
url, cli = sys.argv[1], open(sys.argv[2], "rb").read()
r = urllib.request.urlopen(urllib.request.Request(url, headers={"Accept-Encoding": "gzip"}))
body = r.read()
print("gzip" if r.headers.get("Content-Encoding") == "gzip" and gzip.decompress(body) == cli
      else "bad gzip")
r = urllib.request.urlopen(url)          # urllib's own Accept-Encoding: identity
print("identity" if r.headers.get("Content-Encoding") is None and r.read() == cli
      else "bad identity")
EOF
)
	check "python urllib with gzip gets the tile" eq "$(sed -n 1p <<<"$py")" gzip
	check "python urllib as it comes gets identity" eq "$(sed -n 2p <<<"$py")" identity
else
	echo "SKIP: python3 not installed (urllib checks)"
fi
if command -v wget >/dev/null && wget --help 2>/dev/null | grep -q -- '--compression'; then
	check "wget --compression=gzip fetches the tile" \
		wget -q -T 30 --compression=gzip -S -O "$TMP/w" "$url" -o "$TMP/wlog"
	check "wget was sent gzip" grep -qi 'Content-Encoding: gzip' "$TMP/wlog"
	check "wget decoded it to the tile" cmp -s "$TMP/cli" "$TMP/w"
	wget -q -T 30 -O "$TMP/w" "$url"
	check "wget as it comes gets identity" cmp -s "$TMP/cli" "$TMP/w"
else
	echo "SKIP: wget with --compression not installed"
fi

# ---- identity and gzip hits come from the cache ----------------------------------
url="$BASE/v1/worlds/42/chunks/1/9/9"
gens=$(metric terrain_generations_total)
"${CURL[@]}" -D "$TMP/h1" -o /dev/null "$url"
"${CURL[@]}" -D "$TMP/h2" -o "$TMP/b2" "$url"
"${CURL[@]}" -H 'Accept-Encoding: gzip' -D "$TMP/h3" -o /dev/null "$url"
"${CURL[@]}" -H 'Accept-Encoding: gzip' -D "$TMP/h4" -o /dev/null "$url"
check "first identity answer is a miss" eq "$(hdr "$TMP/h1" x-cache)" miss
check "second identity answer is a cache hit" eq "$(hdr "$TMP/h2" x-cache)" hit
check "first gzip answer is a miss (made from the cached zstd)" eq "$(hdr "$TMP/h3" x-cache)" miss
check "second gzip answer is a cache hit" eq "$(hdr "$TMP/h4" x-cache)" hit
check "one generation for all of them" eq "$(metric terrain_generations_total)" "$((gens + 1))"

# ---- ETags and 304 per coding ---------------------------------------------------------
url="$BASE/v1/worlds/42/chunks/0/0/0"
tag() { "${CURL[@]}" -o /dev/null -D - "$@" "$url" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p'; }
code() { "${CURL[@]}" -o "$TMP/body" -D "$TMP/hc" -w '%{http_code}' "$@"; }
t_id=$(tag); t_z=$(tag -H 'Accept-Encoding: zstd'); t_g=$(tag -H 'Accept-Encoding: gzip')
check "identity tag is 16 hex digits ($t_id)" grep -qE '^"[0-9a-f]{16}"$' <<<"$t_id"
check "zstd tag is the identity's with -z" eq "$t_z" "${t_id%\"}-z\""
check "gzip tag is the identity's with -g" eq "$t_g" "${t_id%\"}-g\""
check "304 for the gzip tag" eq "$(code -H 'Accept-Encoding: gzip' -H "If-None-Match: $t_g" "$url")" 304
check "gzip 304 has no body" not test -s "$TMP/body"
check "gzip 304 carries its tag" eq "$(hdr "$TMP/hc" etag)" "$t_g"
check "gzip 304 carries Vary" eq "$(hdr "$TMP/hc" vary)" Accept-Encoding
check "the gzip tag does not match zstd" eq "$(code -H 'Accept-Encoding: zstd' -H "If-None-Match: $t_g" "$url")" 200
check "the zstd tag does not match gzip" eq "$(code -H 'Accept-Encoding: gzip' -H "If-None-Match: $t_z" "$url")" 200
check "the identity tag does not match gzip" eq "$(code -H 'Accept-Encoding: gzip' -H "If-None-Match: $t_id" "$url")" 200
check "304 for the identity tag" eq "$(code -H "If-None-Match: $t_id" "$url")" 304
check "304 for one tag of a list" eq "$(code -H 'Accept-Encoding: gzip' -H "If-None-Match: $t_z, $t_g" "$url")" 304

# ---- HEAD and Range ----------------------------------------------------------------------
for ae in zstd gzip identity; do
	len_head=$("${CURL[@]}" -I -H "Accept-Encoding: $ae" "$url" | tr -d '\r' |
		sed -n 's/^[Cc]ontent-[Ll]ength: //p')
	len_get=$("${CURL[@]}" -H "Accept-Encoding: $ae" -o /dev/null -w '%{size_download}' "$url")
	check "HEAD Content-Length equals the $ae body ($len_head)" eq "$len_head" "$len_get"
	check "HEAD $ae has no body" eq "$("${CURL[@]}" -I -H "Accept-Encoding: $ae" -o /dev/null \
		-w '%{size_download}' "$url")" 0
done
# Range is not supported: the whole representation, as RFC 9110 allows
check "Range is ignored: 200" eq "$(code -H 'Accept-Encoding: gzip' -r 0-99 "$url")" 200
check "Range is ignored: the whole body" eq "$(stat -c %s "$TMP/body")" "$(hdr "$TMP/hc" content-length)"
check "no Content-Range" eq "$(hdr "$TMP/hc" content-range)" ""

# ---- ?encoding=zstd: the frame as the body, whatever is negotiated -------------------------
url="$BASE/v1/worlds/42/chunks/0/3/-2?encoding=zstd"
for ae in "" "gzip" "zstd" "identity"; do
	"${CURL[@]}" -H "Accept-Encoding: $ae" -D "$TMP/hf" -o "$TMP/f" "$url"
	check "frame ($ae): Content-Type application/zstd" eq "$(hdr "$TMP/hf" content-type)" application/zstd
	check "frame ($ae): no Content-Encoding" eq "$(hdr "$TMP/hf" content-encoding)" ""
	check "frame ($ae): no Vary" eq "$(hdr "$TMP/hf" vary)" ""
	check "frame ($ae): the body is a zstd frame of the tile" cmp -s "$TMP/cli" <(zstd -dcq "$TMP/f")
done
check "curl --compressed leaves the frame alone" \
	cmp -s "$TMP/f" <("${CURL[@]}" --compressed "$url")
t_f=$(hdr "$TMP/hf" etag)
check "frame tag is the zstd tag" eq "$t_f" "$("${CURL[@]}" -o /dev/null -D - -H 'Accept-Encoding: zstd' \
	"$BASE/v1/worlds/42/chunks/0/3/-2" | tr -d '\r' | sed -n 's/^[Ee][Tt]ag: //p')"
check "304 for the frame's tag" eq "$(code -H "If-None-Match: $t_f" "$url")" 304
check "frame 304 has no Vary" eq "$(hdr "$TMP/hc" vary)" ""
check "HEAD of the frame: its length" eq "$("${CURL[@]}" -I "$url" | tr -d '\r' |
	sed -n 's/^[Cc]ontent-[Ll]ength: //p')" "$(stat -c %s "$TMP/f")"
check "?encoding=gzip is 400" eq "$(code "$BASE/v1/worlds/42/chunks/0/3/-2?encoding=gzip")" 400
check "400 names the parameter" grep -q '"detail":"encoding: ' "$TMP/body"

# ---- bundles and objects -----------------------------------------------------------------
url="$BASE/v1/worlds/42/chunks/4?cx0=0&cz0=0&cx1=1&cz1=1"
"${CURL[@]}" -D "$TMP/hb" -o "$TMP/b_id" "$url"
"${CURL[@]}" -H 'Accept-Encoding: gzip' -D "$TMP/hbg" -o "$TMP/b_g" "$url"
check "a gzip-only client gets the identity bundle" cmp -s "$TMP/b_id" "$TMP/b_g"
check "no Content-Encoding on it" eq "$(hdr "$TMP/hbg" content-encoding)" ""
"${CURL[@]}" -H 'Accept-Encoding: gzip' -D "$TMP/hbf" -o "$TMP/b_f" "$url&encoding=zstd"
check "bundle frame: application/zstd" eq "$(hdr "$TMP/hbf" content-type)" application/zstd
check "bundle frame decodes to the bundle" cmp -s "$TMP/b_id" <(zstd -dcq "$TMP/b_f")
url="$BASE/v1/worlds/42/objects/3/-2"
"${CURL[@]}" -o "$TMP/o_id" "$url"
"${CURL[@]}" -H 'Accept-Encoding: gzip' -D "$TMP/ho" -o "$TMP/o_g" "$url"
check "objects in gzip" eq "$(hdr "$TMP/ho" content-encoding)" gzip
check "gzip objects gunzip to the JSON" cmp -s "$TMP/o_id" <(gzip -dc "$TMP/o_g")
check "objects Vary" eq "$(hdr "$TMP/ho" vary)" "Accept, Accept-Encoding"
"${CURL[@]}" -D "$TMP/hof" -o "$TMP/o_f" "$url?encoding=zstd"
check "objects frame decodes to the JSON" cmp -s "$TMP/o_id" <(zstd -dcq "$TMP/o_f")
check "objects frame varies by Accept only" eq "$(hdr "$TMP/hof" vary)" Accept

# ---- an edit changes every coding -----------------------------------------------------------
url="$BASE/v1/worlds/42/chunks/0/0/0"
"${CURL[@]}" -X POST -H 'Content-Type: application/json' -o /dev/null \
	-d '{"edits":[{"op":"raise","x":128,"z":128,"radius":40,"strength":5}]}' "$BASE/v1/worlds/42/edits"
n_g=$(tag -H 'Accept-Encoding: gzip')
check "the gzip tag changed with the edit" test "$n_g" != "$t_g"
check "the old gzip tag no longer gives 304" eq "$(code -H 'Accept-Encoding: gzip' -H "If-None-Match: $t_g" "$url")" 200
"${CURL[@]}" -o "$TMP/e_id" "$url"
check "the edited gzip tile gunzips to the edited identity tile" \
	cmp -s "$TMP/e_id" <("${CURL[@]}" -H 'Accept-Encoding: gzip' "$url" | gzip -dc)
check "and the edited tile is not the generated one" not cmp -s "$TMP/e_id" <("$SERVER_BIN" \
	generate --seed 42 --lod 0 --cx 0 --cz 0 -o /dev/stdout)
check "server exits 0 on SIGTERM" server_stop
finish
