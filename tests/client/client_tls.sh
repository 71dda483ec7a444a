#!/bin/bash
# client_tls.sh - terrain-client over TLS, HTTP/2 and a proxy from the
# environment (libcurl: client-sample/hclient.h). The real server on
# 127.0.0.1 behind Debian's nginx on 127.0.0.1 with a self-signed
# certificate made here by openssl (for localhost and 127.0.0.1), HTTP/2 on
# its TLS listener, and a second, plain listener that nginx uses as a
# forward proxy for absolute-form requests. Checked: --version names
# libcurl; an https:// URL is accepted; without the certificate the client
# is refused with the verification error named and no request reaches the
# server; with --cacert (and with CURL_CA_BUNDLE) fetch and export give
# byte-identical files to plain HTTP; nginx logged the client's requests as
# HTTP/2.0, an edit's POST included (sent once), and follow gets its events
# over HTTP/2; http_proxy sends the plain-HTTP requests through the proxy
# (nginx logs the absolute URI) and no_proxy bypasses it.
. "$(dirname "$0")/../lib/lib.sh"

CLIENT=$BUILD/terrain-client
T="timeout -k 5 $(scaled 120)"
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
[ -x "$CLIENT" ] || { echo "FAIL: build $CLIENT first"; exit 1; }
[ -x "$NGINX" ] || { echo "FAIL: nginx not installed (scripts/deps.sh test installs nginx-light)"; exit 1; }
command -v openssl >/dev/null || { echo "FAIL: openssl not installed (scripts/deps.sh test)"; exit 1; }
unset http_proxy https_proxy HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY \
	CURL_CA_BUNDLE SSL_CERT_FILE
trap 'nginx_down; cleanup' EXIT
to() { local o=$1 e=$2; shift 2; "$@" >"$o" 2>"$e"; }

check "--version names terrain-client and libcurl" has <("$CLIENT" --version) '^libcurl/[0-9]'
"$CLIENT" --version

server_start

# ---- the certificate and the front ----
N=$TMP/nginx
mkdir -p "$N"
check "openssl makes a self-signed certificate for localhost and 127.0.0.1" \
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$N/key.pem" -out "$N/cert.pem" -days 2 -subj /CN=localhost \
	-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>"$N/openssl.err"
user=
[ "$(id -u)" != 0 ] || user="user root;"
# the front's config: TLS on TPORT, plain HTTP and the forward proxy on PPORT
front_conf() {
	PPORT=$FPORT TPORT=$((FPORT + 1))
	cat <<CONF
$user
worker_processes 1;
pid nginx.pid;
error_log stderr warn;
events { worker_connections 256; }
http {
	client_body_temp_path body_temp;
	proxy_temp_path proxy_temp;
	fastcgi_temp_path fastcgi_temp;
	uwsgi_temp_path uwsgi_temp;
	scgi_temp_path scgi_temp;
	log_format proto '\$server_protocol \$status \$request';
	upstream terrain { server 127.0.0.1:$PORT; keepalive 8; }
	server {
		listen 127.0.0.1:$TPORT ssl http2;
		ssl_certificate cert.pem;
		ssl_certificate_key key.pem;
		access_log tls.log proto;
		location / {
			proxy_pass http://terrain;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host \$http_host; # localhost: edits need a loopback Host
			proxy_buffering off;
		}
	}
	server {
		listen 127.0.0.1:$PPORT;
		access_log proxy.log proto;
		location / {
			proxy_pass http://terrain;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
CONF
}
nginx_up "$N" front_conf
TLS="https://localhost:$TPORT"
check "curl reaches the server through the TLS front over HTTP/2" eq \
	"$("${CURL[@]}" --cacert "$N/cert.pem" -o /dev/null -w '%{http_version} %{http_code}' "$TLS/healthz")" "2 200"

# fetch and export ARGS...: into $TMP/$1.{out,err,png} and $TMP/$1-x.*
fetch() {
	local name=$1
	shift
	to "$TMP/$name.out" "$TMP/$name.err" $T "$CLIENT" fetch --seed 42 --x 100 --z -50 \
		--radius 256 --quiet -o "$TMP/$name.png" "$@"
}
export_() {
	local name=$1
	shift
	to "$TMP/$name-x.out" "$TMP/$name-x.err" $T "$CLIENT" export --seed 7 --lod 0 \
		--cx0 -1 --cz0 -1 --cx1 1 --cz1 0 --quiet -o "$TMP/$name-x" "$@"
}

# ---- refused without the certificate ----
: >"$N/tls.log"
check "https without the CA: exit 1" not fetch noca --server "$TLS"
cat "$TMP/noca.err"
check "the refusal names the certificate verification" has "$TMP/noca.err" \
	'tls: .*(certificate|verif)'
check "no request reached the server through the front" eq "$(wc -l <"$N/tls.log")" 0
check "a CA file that is not there: exit 1, named" not fetch badca --server "$TLS" \
	--cacert "$TMP/nowhere.pem"
check "the bad CA file is said to be a TLS problem" has "$TMP/badca.err" 'tls: '

# ---- the same answers over TLS and plain HTTP ----
check "fetch over plain HTTP" fetch plain --server "$BASE"
check "fetch over https with --cacert" fetch tls --server "$TLS" --cacert "$N/cert.pem"
cat "$TMP/tls.out" "$TMP/tls.err"
check "the maps are byte-identical" cmp "$TMP/plain.png" "$TMP/tls.png"
check "the same chunks and tiles were reported" eq \
	"$(grep -E 'chunks|tiles verified' "$TMP/tls.out")" "$(grep -E 'chunks|tiles verified' "$TMP/plain.out")"
check "CURL_CA_BUNDLE works as --cacert" env CURL_CA_BUNDLE="$N/cert.pem" \
	bash -c "$(declare -f to fetch); T='$T' CLIENT='$CLIENT' TMP='$TMP' fetch env --server '$TLS'"
check "export over plain HTTP" export_ plain --server "$BASE"
check "export over https with --cacert" export_ tls --server "https://127.0.0.1:$TPORT" \
	--cacert "$N/cert.pem"
for ext in r16 png json; do
	check "export's .$ext is byte-identical over TLS" cmp "$TMP/plain-x.$ext" "$TMP/tls-x.$ext"
done

# ---- a POST (sent once) and an event stream over HTTP/2 ----
check "edit over https: exit 0" to "$TMP/edit.out" "$TMP/edit.err" $T "$CLIENT" edit \
	--server "$TLS" --cacert "$N/cert.pem" --seed tls --op raise --x 10 --z 10 --radius 20 --strength 1
cat "$TMP/edit.out" "$TMP/edit.err"
check "the edit was applied once (seq 1, attempts 1)" has "$TMP/edit.out" '^first_seq: 1$'
check "nginx saw one POST, over HTTP/2" eq "$(grep -c '^HTTP/2.0 [0-9]* POST /v1/worlds/tls/edits' "$N/tls.log")" 1
# follow over https: nginx sends an HTTP/2 stream's head with its first
# bytes, so edits are posted until one reaches follow as an event
$T "$CLIENT" follow --server "$TLS" --cacert "$N/cert.pem" --seed tls --duration 100 \
	>"$TMP/follow.out" 2>"$TMP/follow.err" &
FOLLOW=$!
SERVERS+=("$FOLLOW")
followed() {
	grep -q '^seq ' "$TMP/follow.out" && return 0
	"$CLIENT" edit --server "$TLS" --cacert "$N/cert.pem" --seed tls --op raise \
		--x 10 --z 10 --radius 20 --strength 1 >/dev/null 2>&1
	return 1
}
check "an edit posted over https reaches follow's event stream" wait_until 60 followed
kill -INT "$FOLLOW" 2>/dev/null
wait "$FOLLOW"
check "follow exits 0 on SIGINT" eq "$?" 0
cat "$TMP/follow.out" "$TMP/follow.err"
check "follow read the log and opened its stream" has "$TMP/follow.out" \
	'^follow: world tls at seq [0-9]+, world_hash [0-9a-f]+; following its edits$'
check "the event's batch checked and its chunks refetched over https" has "$TMP/follow.out" \
	'^seq [0-9]+\.\.[0-9]+ world_hash [0-9a-f]+ ok, refetched [0-9]+ chunks$'
check "the event stream went over HTTP/2" has "$N/tls.log" '^HTTP/2.0 200 GET /v1/worlds/tls/events'

# ---- HTTP/2 ----
n_tls=$(grep -c ' /v1/' "$N/tls.log")
n_h2=$(grep -c '^HTTP/2.0 [0-9]* [A-Z]* /v1/' "$N/tls.log")
echo "  $n_tls requests through the TLS front, $n_h2 of them over HTTP/2"
check "requests went through the TLS front" test "$n_tls" -gt 10
check "every one of them over HTTP/2" eq "$n_h2" "$n_tls"

# ---- a proxy from the environment ----
: >"$N/proxy.log"
check "fetch with http_proxy set" env http_proxy="http://127.0.0.1:$PPORT" \
	bash -c "$(declare -f to fetch); T='$T' CLIENT='$CLIENT' TMP='$TMP' fetch proxied --server '$BASE'"
check "the proxied map is byte-identical" cmp "$TMP/plain.png" "$TMP/proxied.png"
n_proxy=$(grep -c "GET http://127.0.0.1:$PORT/v1/" "$N/proxy.log")
echo "  $n_proxy absolute-form requests through the proxy"
check "the requests went through the proxy, in absolute form" test "$n_proxy" -ge 5
: >"$N/proxy.log"
check "no_proxy=127.0.0.1 bypasses it" env http_proxy="http://127.0.0.1:$PPORT" no_proxy=127.0.0.1 \
	bash -c "$(declare -f to fetch); T='$T' CLIENT='$CLIENT' TMP='$TMP' fetch direct --server '$BASE'"
check "nothing went through the proxy then" eq "$(wc -l <"$N/proxy.log")" 0
check "a proxy that is down is named in the error" not env http_proxy="http://127.0.0.1:1" \
	bash -c "$(declare -f to fetch); T='$T' CLIENT='$CLIENT' TMP='$TMP' fetch down --server '$BASE'"
cat "$TMP/down.err"
check "the error says connect" has "$TMP/down.err" 'connect'

finish
