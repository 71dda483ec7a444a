#!/bin/bash
# metrics.sh - /metrics against the real server: `promtool check metrics`
# passes (before and after traffic of every kind), the per-route duration
# histograms count exactly the responses of their route and are well formed,
# the process_* figures equal what /proc says of the server's pid (each
# family with its HELP and TYPE), and the build and generator info match
# `terrain-server version` (the release of common/terrain.h and the
# commit) and /v1/presets.
. "$(dirname "$0")/../lib/lib.sh"

if ! command -v promtool >/dev/null; then
	echo "FAIL: promtool not found (scripts/deps.sh test installs Debian's prometheus)"
	exit 1
fi

before=$(date +%s)
server_start
after=$(date +%s)
PID=$(pgrep -P "$SERVER_PID") # the server itself, under timeout(1)

scrape() { curl -sS -o "$1" "$BASE/metrics"; }
promtool_ok() { promtool check metrics <"$1"; }
# sample FILE NAME [LABELS]: the value of the sample NAME{LABELS} (exact
# label text, e.g. 'route="tile",le="+Inf"'), or "none"
sample() {
	python3 - "$@" <<'EOF'
import sys
path, name = sys.argv[1], sys.argv[2]
want = name + ("{" + sys.argv[3] + "}" if len(sys.argv) > 3 else "")
for line in open(path):
    if line.startswith("#"):
        continue
    key, _, value = line.rstrip("\n").rpartition(" ")
    if key == want:
        print(value)
        break
else:
    print("none")
EOF
}
# histogram_ok FILE NAME ROUTE: buckets cumulative in increasing le, +Inf
# equal to _count, a _sum that is positive once the count is
histogram_ok() {
	python3 - "$@" <<'EOF'
import re, sys
path, name, route = sys.argv[1:4]
pat = re.compile(r'^%s_bucket\{route="%s",le="([^"]+)"\} (\d+)$' % (name, route))
les, counts = [], []
count = total = None
for line in open(path):
    m = pat.match(line)
    if m:
        les.append(float(m.group(1)))
        counts.append(int(m.group(2)))
    elif line.startswith('%s_count{route="%s"} ' % (name, route)):
        count = int(line.split()[-1])
    elif line.startswith('%s_sum{route="%s"} ' % (name, route)):
        total = float(line.split()[-1])
ok = (len(les) >= 2 and les == sorted(les) and les[-1] == float("inf")
      and les[0] == 0.0001 and 10.0 in les
      and counts == sorted(counts) and counts[-1] == count
      and (total > 0) == (count > 0))
if not ok:
    print("  le %s counts %s count %s sum %s" % (les, counts, count, total))
sys.exit(0 if ok else 1)
EOF
}
# near A B TOL: |A - B| <= TOL (floats)
near() {
	python3 -c 'import sys; a, b, t = map(float, sys.argv[1:4]); sys.exit(0 if abs(a - b) <= t else print("  %s and %s differ by more than %s" % (a, b, t)) or 1)' "$1" "$2" "$3"
}
# the server's start time by /proc, as the Prometheus clients compute it
proc_start() {
	python3 - "$PID" <<'EOF'
import os, sys
stat = open("/proc/%s/stat" % sys.argv[1]).read()
fields = stat[stat.rindex(")") + 2:].split()
btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime "))
print(btime + int(fields[19]) / os.sysconf("SC_CLK_TCK"))
EOF
}
proc_cpu() {
	python3 - "$PID" <<'EOF'
import os, sys
stat = open("/proc/%s/stat" % sys.argv[1]).read()
fields = stat[stat.rindex(")") + 2:].split()
print((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
EOF
}

scrape "$TMP/m0"
check "promtool accepts the first scrape" promtool_ok "$TMP/m0"
tile0=$(sample "$TMP/m0" terrain_request_duration_seconds_count 'route="tile"')
pres0=$(sample "$TMP/m0" terrain_request_duration_seconds_count 'route="presets"')
check "every route has its histogram before any request" eq "$tile0 $pres0" "0 0"

# traffic: 6 tiles (cold, then the same again: hits), 3 presets, a 404,
# a 400, a HEAD, a 304, a preflight, a protocol error
for cx in 0 1 2; do curl -sS -o /dev/null "$BASE/v1/worlds/7/chunks/0/$cx/0"; done
for cx in 0 1 2; do curl -sS -o /dev/null --compressed "$BASE/v1/worlds/7/chunks/0/$cx/0"; done
for i in 1 2 3; do curl -sS -o /dev/null "$BASE/v1/presets"; done
curl -sS -o /dev/null "$BASE/no/such/route"
curl -sS -o /dev/null "$BASE/v1/worlds/7/chunks/99/0/0"
curl -sS -o /dev/null -I "$BASE/healthz"
etag=$(curl -sS -D - -o /dev/null "$BASE/" | sed -n 's/^[Ee][Tt]ag: *\([^\r]*\).*/\1/p')
curl -sS -o /dev/null -H "If-None-Match: $etag" "$BASE/"
curl -sS -o /dev/null -X OPTIONS "$BASE/v1/presets"
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GARBAGE\r\n\r\n' >&3
timeout 10 cat <&3 >/dev/null
exec 3>&-
scrape "$TMP/m1"
scrape "$TMP/m2"

check "promtool accepts the scrape after traffic" promtool_ok "$TMP/m2"
check "the tile histogram counted the 6 tiles and the 400" \
	eq "$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="tile"')" 7
check "the tile histogram is cumulative, +Inf = count, sum > 0" \
	histogram_ok "$TMP/m1" terrain_request_duration_seconds tile
check "the presets histogram counted its 3 answers and the preflight" \
	eq "$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="presets"')" 4
check "the 404 of an unknown route counts as route none" \
	eq "$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="none"')" 1
check "the protocol error counts as route error" \
	eq "$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="error"')" 1
check "HEAD /healthz counted" \
	eq "$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="healthz"')" 1
check "the viewer's 200 and 304 counted" \
	eq "$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="viewer"')" 2
m1=$(sample "$TMP/m1" terrain_request_duration_seconds_count 'route="metrics"')
m2=$(sample "$TMP/m2" terrain_request_duration_seconds_count 'route="metrics"')
check "each scrape is counted once it has gone out" eq "$m1 $m2" "1 2"
check "durations agree with the request counter" \
	eq "$(sample "$TMP/m1" terrain_requests_total 'route="tile",status="200"')" 6
check "the histogram of a route with no traffic stays 0" \
	eq "$(sample "$TMP/m2" terrain_request_duration_seconds_count 'route="hashes"')" 0

# process_*: what /proc says of the same pid
rss=$(sample "$TMP/m2" process_resident_memory_bytes)
vsz=$(sample "$TMP/m2" process_virtual_memory_bytes)
vmrss=$(awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$PID/status")
check "process_resident_memory_bytes is above 1 MB and below the virtual size" \
	python3 -c "import sys; sys.exit(not (1e6 < $rss < $vsz))"
check "RSS is /proc's VmRSS within 8 MB" near "$rss" "$vmrss" 8e6
check "process_start_time_seconds is /proc's start time" \
	near "$(sample "$TMP/m2" process_start_time_seconds)" "$(proc_start)" 0.02
check "the start time lies between the test's clock before and after starting" \
	python3 -c "import sys; sys.exit(not ($before - 2 <= $(sample "$TMP/m2" process_start_time_seconds) <= $after + 2))"
fds=$(sample "$TMP/m2" process_open_fds)
nfd=$(ls "/proc/$PID/fd" | wc -l)
check "process_open_fds is /proc/PID/fd and the scrape's connection (0..2 apart)" \
	python3 -c "import sys; sys.exit(not ($nfd <= $fds <= $nfd + 2))"
check "process_max_fds is the soft open-files limit" \
	eq "$(sample "$TMP/m2" process_max_fds)" "$(awk '/^Max open files/ { print $4 }' "/proc/$PID/limits")"
for f in process_cpu_seconds_total:counter process_resident_memory_bytes:gauge \
	process_virtual_memory_bytes:gauge process_open_fds:gauge process_max_fds:gauge \
	process_start_time_seconds:gauge; do
	check "${f%%:*} has its HELP and TYPE ${f#*:} lines, then one sample" python3 - "$TMP/m2" "${f%%:*}" "${f#*:}" <<'EOF2'
import sys
lines = open(sys.argv[1]).read().splitlines()
name, kind = sys.argv[2], sys.argv[3]
i = next((k for k, l in enumerate(lines) if l.startswith("# HELP %s " % name)), None)
ok = (i is not None and i + 2 < len(lines) and lines[i + 1] == "# TYPE %s %s" % (name, kind)
      and lines[i + 2].startswith(name + " ")
      and sum(1 for l in lines if l.split(" ")[0] == name) == 1)
sys.exit(0 if ok else print("  " + "\n  ".join(l for l in lines if name in l)) or 1)
EOF2
done
cpu=$(sample "$TMP/m2" process_cpu_seconds_total)
check "process_cpu_seconds_total is at most /proc's figure read after it" \
	python3 -c "import sys; sys.exit(not (0 <= $cpu <= $(proc_cpu)))"
for cx in 3 4 5 6 7 8 9 10; do curl -sS -o /dev/null "$BASE/v1/worlds/8/chunks/0/$cx/0?gen=alpine"; done
scrape "$TMP/m3"
check "CPU time does not go back" \
	python3 -c "import sys; sys.exit(not ($cpu <= $(sample "$TMP/m3" process_cpu_seconds_total)))"

# build and generator info
ver=$("$SERVER_BIN" version)
want="version=\"$(sed -n 's/^terrain-server //p' <<<"$ver")\",commit=\"$(sed -n 's/^commit //p' <<<"$ver")\""
check "terrain_build_info carries the version and commit of terrain-server version" \
	has "$TMP/m3" "^terrain_build_info\\{$want,compiler=\"(gcc|clang) [0-9.]+\",.*\\} 1$"
release=$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)
check "the version is the release of common/terrain.h, $release" \
	has "$TMP/m3" "^terrain_build_info\\{version=\"${release//./\\.}\",commit=\"[0-9a-f]{12}(-dirty)?\","
if git rev-parse --short=12 HEAD >/dev/null 2>&1; then
	check "the commit is git's HEAD" contains "$ver" "commit $(git rev-parse --short=12 HEAD)"
fi
curl -sS -o "$TMP/presets.json" "$BASE/v1/presets"
check "one terrain_generator_info per preset, with its fingerprint" python3 - "$TMP/presets.json" "$TMP/m3" <<'EOF'
import json, re, sys
want = {(p["name"], p["fingerprint"]) for p in json.load(open(sys.argv[1]))["presets"]}
got = set(re.findall(r'^terrain_generator_info\{generator="([^"]+)",fingerprint="([0-9a-f]{16})"',
                     open(sys.argv[2]).read(), re.M))
sys.exit(0 if want == got and want else print("  got %s, want %s" % (got, want)) or 1)
EOF
check "promtool accepts the last scrape" promtool_ok "$TMP/m3"
check "server stops with 0" server_stop
finish
