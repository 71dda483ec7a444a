# deps.sh - source it (after tests/lib.sh): browser_deps, for the tests that
# drive pages in headless Chromium (tests/maps_browser.sh, tests/js_client.sh).
#
# browser_deps      Debian's chromium (apt-get when missing and root), Node.js
#                   20+ and npm, and every package of tests/browser/package.json
#                   at its version in tests/browser/node_modules (npm install
#                   when one is missing or another version; the folder is
#                   outside git). Calls skip REASON (the caller's) when one
#                   of them cannot be had.
# node_ok MAJOR     Node.js MAJOR or later is installed.

node_ok() {
	local major
	command -v node >/dev/null || return 1
	major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
	[ "$major" -ge "$1" ] 2>/dev/null
}

# Whether tests/browser/node_modules holds every dependency at its version.
npm_packages_ok() {
	node -e '
		const dir = process.argv[1], want = require(dir + "/package.json").dependencies;
		for (const [name, v] of Object.entries(want)) {
			let have = null;
			try { have = require(`${dir}/node_modules/${name}/package.json`).version; } catch {}
			if (have !== v) { console.log(`${name} ${have || "missing"}, want ${v}`); process.exit(1); }
		}' "$BROWSER_DIR"
}

browser_deps() {
	if [ ! -x /usr/bin/chromium ]; then
		[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null ||
			skip "no /usr/bin/chromium, and not root with apt-get to install it (apt-get install chromium)"
		echo "installing Debian's chromium (once)..."
		export DEBIAN_FRONTEND=noninteractive
		if ! timeout 600 apt-get install -y -qq chromium >"$TMP/apt.log" 2>&1; then
			timeout 300 apt-get update -qq >>"$TMP/apt.log" 2>&1
			timeout 600 apt-get install -y -qq chromium >>"$TMP/apt.log" 2>&1 ||
				skip "apt-get install chromium failed: $(tail -n 2 "$TMP/apt.log" | tr '\n' ' ')"
		fi
		[ -x /usr/bin/chromium ] || skip "chromium installed but /usr/bin/chromium is missing"
	fi
	command -v node >/dev/null && command -v npm >/dev/null || skip "Node.js and npm are not installed"
	node_ok 20 || skip "playwright-core needs Node.js 20 or later, this is $(node --version)"
	if ! npm_packages_ok >"$TMP/npm-want.txt"; then
		echo "installing from npm into tests/browser/node_modules ($(cat "$TMP/npm-want.txt"))..."
		(cd "$BROWSER_DIR" && timeout 300 npm install --no-audit --no-fund) >"$TMP/npm.log" 2>&1 ||
			skip "npm install failed (is the npm registry reachable?): $(tail -n 3 "$TMP/npm.log" | tr '\n' ' ')"
		npm_packages_ok || skip "npm install left tests/browser/node_modules incomplete"
	fi
}
