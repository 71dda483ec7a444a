#!/bin/bash
# run: once
# openapi_lint.sh - Redocly's recommended lint (npm @redocly/cli, pinned in
# tests/http/lint/package.json) of the OpenAPI description,
# server/assets/openapi.json: no error and no warning but those
# tests/http/lint/.redocly.lint-ignore.yaml lists, each with its reason (counted
# from the lint's JSON report). Installs @redocly/cli into
# tests/http/lint/node_modules with npm ci when it is missing (one package, 15
# MB, bundled); the lint itself takes a few seconds. "# run: once": what it
# checks is a file, not the build. SKIP without Node.js 20.19+ and npm.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/lib.sh"
LINT=$HERE/lint
. "$HERE/../browser/deps.sh"

skip() { echo "SKIP: $*"; exit 0; }
command -v node >/dev/null && command -v npm >/dev/null || skip "Node.js and npm are not installed"
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a >= 22 || (a === 20 && b >= 19) ? 0 : 1)' ||
	skip "@redocly/cli needs Node.js 20.19 or 22.12 and later, this is $(node --version)"
npm_dir "$LINT"
version=$(node -p 'require(process.argv[1]).version' "$LINT/node_modules/@redocly/cli/package.json")

(cd "$LINT" && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true timeout 120 ./node_modules/.bin/redocly lint --format json ../../../server/assets/openapi.json) \
	>"$TMP/lint.json" 2>"$TMP/lint.err"
report() {
	node -e '
		const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		const t = r.totals;
		console.log(`  @redocly/cli ${process.argv[2]}, recommended: ${t.errors} errors, ${t.warnings} warnings, ${t.ignored} accepted (.redocly.lint-ignore.yaml)`);
		for (const p of r.problems.slice(0, 20))
			console.log(`    ${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0].pointer}`);
		process.exit(t.errors === 0 && t.warnings === 0 && t.ignored > 0 ? 0 : 1);' "$TMP/lint.json" "$version"
}
check "Redocly's recommended lint finds no error and no warning it was not told the reason for" report ||
	tail -n 5 "$TMP/lint.err"
check "the lint read the document (its JSON report names the rules' version)" grep -q '"version"' "$TMP/lint.json"
finish
