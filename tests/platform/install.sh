#!/bin/bash
# install.sh - the operator's install (docs/operations.md, "The operator's
# install"): `make install DESTDIR=tmp PREFIX=/usr` puts the programs, the
# library, the man pages, the systemd unit and its options file in place;
# the man pages render with `man -l` and say what --help says (tools/man.sh
# gives them back unchanged); --version names the release and the commit;
# `systemd-analyze verify` finds nothing to say of the installed unit and
# `systemd-analyze security` rates it well hardened. Then what the unit
# would do, since systemd is not PID 1 here: the installed ExecStart run
# with the unit's environment (its EnvironmentFile, STATE_DIRECTORY,
# NOTIFY_SOCKET on a socket this test listens on) sends READY=1 once its
# port answers and STOPPING=1 on SIGTERM, keeps its edit log in
# STATE_DIRECTORY, makes only system calls the unit's SystemCallFilter
# allows (under strace), and TERRAIN_DATA_DIR still wins. `make uninstall`
# leaves nothing but an options file the operator changed; install-lib
# installs the library alone.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh

ROOT=$TMP/root
# the flags $BUILD was made with, so that make finds it up to date (a
# sanitizer build's programs carry their runtime)
MAKEFLAGS_B=()
nm "$BUILD/terrain-server" 2>/dev/null | grep -q ' __asan_init' && MAKEFLAGS_B=(SAN=1 OPT=-O1)
inst() { make --no-print-directory -s BUILD="$BUILD" "${MAKEFLAGS_B[@]}" DESTDIR="$ROOT" PREFIX=/usr "$@"; }
UNIT=$ROOT/usr/lib/systemd/system/terrain-server.service
ENVF=$ROOT/etc/terrain/terrain-server.env
RELEASE=$(sed -n 's/^#define TERRAIN_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' common/terrain.h | paste -sd.)

# ---- make install ----
inst install >"$TMP/install.log" 2>&1
check "make install DESTDIR=\$TMP/root PREFIX=/usr" test $? = 0 || cat "$TMP/install.log"
for f in usr/bin/terrain-server usr/bin/terrain-client; do
	check "installed $f, executable" test -x "$ROOT/$f"
done
for f in usr/share/man/man1/terrain-server.1 usr/share/man/man1/terrain-client.1 \
	usr/lib/systemd/system/terrain-server.service etc/terrain/terrain-server.env \
	usr/include/terrain.h usr/lib/libterrain.so.1 usr/lib/pkgconfig/terrain.pc; do
	check "installed $f" test -f "$ROOT/$f"
done
check "the options file is not for every user to read (640)" eq "$(stat -c %a "$ENVF")" 640
check "the unit runs the installed program" has "$UNIT" '^ExecStart=/usr/bin/terrain-server serve$'
check "... reads its options from /etc/terrain" \
	has "$UNIT" '^EnvironmentFile=-/etc/terrain/terrain-server\.env$'
check "... has every folder filled in" not has "$UNIT" '@[A-Z]+@'
for k in Type=notify DynamicUser=yes StateDirectory=terrain ProtectSystem=strict ProtectHome=yes \
	PrivateTmp=yes NoNewPrivileges=yes CapabilityBoundingSet= \
	'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' SystemCallFilter=@system-service; do
	check "the unit says $k" has "$UNIT" "^$k\$"
done

# ---- --version ----
for p in terrain-server terrain-client; do
	"$ROOT/usr/bin/$p" --version >"$TMP/$p.version"
	check "$p --version names the release $RELEASE" has "$TMP/$p.version" "^$p ${RELEASE//./\\.}\$"
	check "... and a commit" has "$TMP/$p.version" '^commit ([0-9a-f]{12}(-dirty)?|unknown)$'
	if head=$(git rev-parse --short=12 HEAD 2>/dev/null); then
		check "... git's HEAD" has "$TMP/$p.version" "^commit $head"
	fi
done

# ---- man pages ----
for p in terrain-server terrain-client; do
	page=$ROOT/usr/share/man/man1/$p.1
	MANWIDTH=200 man -l "$page" >"$TMP/$p.man" 2>"$TMP/$p.man.err"
	check "man -l $p.1 renders it" has "$TMP/$p.man" "^NAME"
	check "... naming the release" has "$TMP/$p.man" "^terrain ${RELEASE//./\\.} "
	check "... with no groff warning" bash -c "groff -man -ww -z '$page' 2>&1 | \
		{ ! grep .; }"
	tools/man.sh "dist/man/$p.1" "$BUILD/$p" >"$TMP/$p.1.again"
	check "dist/man/$p.1 is what --help says now (else: make man)" cmp "$TMP/$p.1.again" "dist/man/$p.1"
	check "... and installed as it is" cmp "$page" "dist/man/$p.1"
done
"$BUILD/terrain-server" --help | sed -n 's/^  \(--[a-z-]*\) .*/\1/p' | sort -u >"$TMP/flags"
check "terrain-server --help lists options ($(wc -l <"$TMP/flags"))" test "$(wc -l <"$TMP/flags")" -gt 20
missing=$(while read -r f; do grep -qe "^ *$f\b" "$TMP/terrain-server.man" || echo "$f"; done <"$TMP/flags")
check "the man page has every option of --help" eq "$missing" ""
for c in decode png pngstat fetch walk swarm edit export follow; do
	check "terrain-client(1) has the command $c" has "$TMP/terrain-client.man" "^ +terrain-client $c "
done

# ---- systemd-analyze ----
# verify checks the unit against this machine's systemd: its ExecStart must
# exist and its Documentation= man page open, so a copy points into DESTDIR
# and MANPATH there. verify exits 0 even for a directive it cannot parse;
# what it prints is the finding (the broken copy shows the check sees one).
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$TMP/verify" "$TMP/broken"
	sed "s|=/usr/bin/|=$ROOT/usr/bin/|" "$UNIT" >"$TMP/verify/terrain-server.service"
	sed 's/^ProtectSystem=strict$/ProtectSystem=very/' "$TMP/verify/terrain-server.service" \
		>"$TMP/broken/terrain-server.service"
	verify() {
		MANPATH=$ROOT/usr/share/man systemd-analyze verify "$1" >"$TMP/verify.out" 2>&1 &&
			[ ! -s "$TMP/verify.out" ] && return 0
		sed 's/^/  /' "$TMP/verify.out"
		return 1
	}
	check "systemd-analyze verify: nothing to say of the unit" verify "$TMP/verify/terrain-server.service"
	check "... but it flags a broken copy" not verify "$TMP/broken/terrain-server.service"
	systemd-analyze security --offline=true "$TMP/verify/terrain-server.service" >"$TMP/security" 2>&1
	secure() { systemd-analyze security --offline=true --threshold=20 "$1" >/dev/null 2>&1; }
	check "systemd-analyze security rates it 2.0 or better: $(sed -n \
		's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$TMP/security")" \
		secure "$TMP/verify/terrain-server.service"
else
	echo "skip: systemd-analyze verify and security (no systemd-analyze; scripts/deps.sh test installs systemd)"
fi
echo "skip: starting the unit for real: systemd is not PID 1 here ($(ps -o comm= -p 1)); the unit's" \
	"part is run by hand below, and docs/operations.md has the check for a systemd machine"

# ---- what the unit would do ----
# its environment: the options file (a line of the operator's: a free port),
# STATE_DIRECTORY as StateDirectory=terrain sets it, NOTIFY_SOCKET; its
# working directory /, here an empty folder of ours.
echo "TERRAIN_PORT=0" >>"$ENVF"
exec_start=$(sed -n 's/^ExecStart=//p' "$UNIT")
STATE=$TMP/var/lib/terrain
mkdir -p "$STATE" "$TMP/cwd"
cat >"$TMP/notify.py" <<'EOF'
# notify.py SOCKET LOG: systemd's side of the notify protocol. Each datagram
# is one line of LOG: its fields, and after READY=1 whether the address in
# STATUS ("listening on HOST:PORT") took a connection at that moment.
import socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + path[1:] if path.startswith("@") else path)
open(log + ".up", "w").close()
with open(log, "a") as out:
    while True:
        msg = s.recv(4096).decode()
        f = dict(l.split("=", 1) for l in msg.split("\n") if "=" in l)
        seen = ""
        if f.get("READY") == "1":
            host, port = f.get("STATUS", "").rsplit(" ", 1)[-1].strip("[]").rsplit(":", 1)
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
                seen = " port-open"
            except (OSError, ValueError) as e:
                seen = " port-closed(%s)" % e
        out.write(msg.replace("\n", " ") + seen + "\n")
        out.flush()
        if f.get("STOPPING") == "1":
            break
EOF
# run_unit SOCKET [VAR=VALUE...]: the installed ExecStart as the unit would
# start it (plus VARs), with a notify listener on SOCKET; under strace -f
# when STRACE is set. Sets NLOG, NPID, UPID (what this shell started) and
# SPID (the server: UPID, or strace's child).
run_unit() {
	local sock=$1 envs
	shift
	NLOG=$TMP/notify.$RANDOM
	timeout "$(scaled 300)" python3 "$TMP/notify.py" "$sock" "$NLOG" &
	NPID=$!
	wait_until 60 test -e "$NLOG.up" || { echo "  the notify listener did not start"; return 1; }
	mapfile -t envs < <(grep -E '^[A-Za-z_][A-Za-z0-9_]*=' "$ENVF")
	# shellcheck disable=SC2086
	(cd "$TMP/cwd" && exec env -i PATH="$PATH" "${envs[@]}" STATE_DIRECTORY="$STATE" \
		NOTIFY_SOCKET="$sock" "$@" ${STRACE:+strace -f -qq -c -o "$TMP/strace"} \
		$ROOT$exec_start) 2>"$TMP/unit.log" &
	UPID=$!
	SERVERS+=("$UPID")
	SPID=$UPID
	if [ -n "$STRACE" ]; then
		wait_until 60 pgrep -P "$UPID" >/dev/null
		SPID=$(pgrep -P "$UPID")
	fi
}
ready() { grep -q 'READY=1' "$NLOG"; }
stopped() { ! kill -0 "$UPID" 2>/dev/null; }
# stop_unit: SIGTERM the server; its exit status once it has exited
stop_unit() {
	kill -TERM "$SPID"
	wait_until 60 stopped || { echo "  the server did not stop"; return 1; }
	wait "$UPID"
}
# strace, where it may trace; not a sanitizer build's server, whose leak
# check at exit needs ptrace itself (the other builds run it)
STRACE=
command -v strace >/dev/null && strace -f -qq -o /dev/null true 2>/dev/null &&
	[ ${#MAKEFLAGS_B[@]} = 0 ] && STRACE=1

run_unit "$TMP/notify.sock"
check "READY=1 arrives" wait_until 120 ready
check "... once the port answers" has "$NLOG" 'READY=1 STATUS=listening on 127\.0\.0\.1:[0-9]+ .*port-open$'
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$NLOG" | head -n 1)
check "GET /readyz answers 200" eq "$("${CURL[@]}" -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$port/readyz")" 200
"$ROOT/usr/bin/terrain-client" edit --server "http://127.0.0.1:$port" --seed 7 --op raise \
	--x 10 --z 10 --radius 5 --strength 1 >"$TMP/edit.out" 2>&1
check "the installed client posts an edit" has "$TMP/edit.out" 'first_seq'
check "the edit log is in STATE_DIRECTORY" test -s "$STATE/edits.log"
check "... and nothing in the working directory" eq "$(ls -A "$TMP/cwd")" ""
stop_unit
status=$?
check "SIGTERM: STOPPING=1 arrived" grep -q 'STOPPING=1' "$NLOG"
check "... and the server exited 0" eq "$status" 0
[ "$status" = 0 ] || cat "$TMP/unit.log"
wait "$NPID"

# the system calls it made, starting, serving, editing and draining, are
# all in the unit's filter: @system-service and none of @privileged
if [ -n "$STRACE" ] && command -v systemd-analyze >/dev/null; then
	systemd-analyze syscall-filter >"$TMP/groups"
	check "every system call is one SystemCallFilter allows" python3 - "$TMP/groups" "$TMP/strace" <<'EOF'
import sys
groups, cur = {}, None
for line in open(sys.argv[1]):
    w = line.strip()
    if line.startswith("@"):
        cur = groups.setdefault(w, set())
    elif w and not w.startswith("#") and cur is not None:
        cur.add(w)
def expand(g, seen=()):
    out = set()
    for m in groups.get(g, ()):
        out |= expand(m, seen + (g,)) if m.startswith("@") and m not in seen else {m}
    return out
allowed = expand("@system-service") - expand("@privileged")
used = set()
for line in open(sys.argv[2]):
    f = line.split()
    if f and f[-1].isidentifier() and f[-1] != "total" and f[0][0].isdigit():
        used.add(f[-1])
bad = sorted(used - allowed)
print("  %d system calls used" % len(used) + (", outside the filter: %s" % bad if bad else ""))
sys.exit(1 if bad or not used else 0)
EOF
else
	echo "skip: the system-call check (needs strace that may trace here, systemd-analyze," \
		"and a build without sanitizers)"
fi
STRACE=

# TERRAIN_DATA_DIR wins over STATE_DIRECTORY; NOTIFY_SOCKET in the
# abstract namespace (@name), as systemd may give it
run_unit "@terrain-test-$$-$RANDOM" TERRAIN_DATA_DIR="$TMP/elsewhere"
check "an abstract NOTIFY_SOCKET gets READY=1" wait_until 120 ready
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$NLOG" | head -n 1)
"$ROOT/usr/bin/terrain-client" edit --server "http://127.0.0.1:$port" --seed 8 --op raise \
	--x 10 --z 10 --radius 5 --strength 1 >"$TMP/edit.out" 2>&1
check "TERRAIN_DATA_DIR wins over STATE_DIRECTORY" test -s "$TMP/elsewhere/edits.log"
stop_unit
status=$?
check "... and the server exits 0" eq "$status" 0
[ "$status" = 0 ] || cat "$TMP/unit.log"
wait "$NPID"
check "--help says the data directory's rule" has <("$ROOT/usr/bin/terrain-server" --help) \
	'TERRAIN_DATA_DIR, else STATE_DIRECTORY'

# ---- make uninstall ----
inst uninstall >"$TMP/uninstall.log" 2>&1
check "make uninstall" test $? = 0
check "... keeps the options file the operator changed" test -f "$ENVF"
check "... and says so" has "$TMP/uninstall.log" "kept .*terrain-server\.env: changed"
check "... and leaves nothing else" eq "$(find "$ROOT" -type f -o -type l | grep -v "$ENVF")" ""
inst install >"$TMP/install.log" 2>&1
check "make install again keeps the changed options file" has "$ENVF" '^TERRAIN_PORT=0$'
cp dist/terrain-server.env "$ENVF"
inst uninstall >"$TMP/uninstall.log" 2>&1
check "make uninstall after the change is undone leaves no file" \
	eq "$(find "$ROOT" -type f -o -type l)" ""

# ---- the library alone ----
inst install-lib >"$TMP/install.log" 2>&1
check "make install-lib" test $? = 0
check "... installs the library" test -f "$ROOT/usr/lib/libterrain.so.1"
check "... and no program, unit or page" eq "$(find "$ROOT" -path '*/bin/*' -o -name '*.service' \
	-o -name 'terrain-*.1' -o -name '*.env')" ""
inst uninstall-lib >"$TMP/uninstall.log" 2>&1
check "make uninstall-lib leaves no file" eq "$(find "$ROOT" -type f -o -type l)" ""
finish
