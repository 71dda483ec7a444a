// page.mjs - the installed package in headless Chromium, as a plain page
// imports it (run by tests/library/npm_package.sh): a loopback server
// serves PROJECT/node_modules/ (terrain.wasm as application/wasm) and a
// page whose import map names 'terrain-chunk-client'
// (docs/js-client.md, "Installation"); the page imports EXAMPLE, the first
// example of docs/js-client.md as the Node.js test ran it, which fetches
// from the terrain server (another origin: CORS) and generates with
// terrain.wasm. What it logs must be LINES (one expected line per line).
// Prints ok/FAIL lines; exit 0 when all passed.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { launch, watchErrors, blockOutside, check, fail, failures, within } from '../../browser/pages.mjs';

const { PROJECT, EXAMPLE, LINES } = process.env;
const page0 = `<!doctype html><title>terrain-chunk-client</title>
<script type="importmap">
  { "imports": { "terrain-chunk-client": "/node_modules/terrain-chunk-client/terrain.js" } }
</script>
<p>the npm package in a plain page</p>`;
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json' };
const served = [];
const server = createServer((req, res) => {
	const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
	served.push(path);
	if (path === '/') return res.writeHead(200, { 'Content-Type': 'text/html' }).end(page0);
	if (path === '/example.mjs') return res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(readFileSync(EXAMPLE));
	const ext = path.slice(path.lastIndexOf('.'));
	if (!path.startsWith('/node_modules/terrain-chunk-client/') || !TYPES[ext]) return res.writeHead(404).end('not found');
	try {
		res.writeHead(200, { 'Content-Type': TYPES[ext], 'Cache-Control': 'no-store' }).end(readFileSync(join(PROJECT, path)));
	} catch {
		res.writeHead(404).end('not found');
	}
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}`;

const browser = await launch();
let code = 1;
try {
	const page = await browser.newPage();
	const errors = watchErrors(page), refused = await blockOutside(page), logged = [];
	page.on('console', (m) => { if (m.type() === 'log') logged.push(m.text()); });
	await page.goto(`${url}/`);
	await within(page.evaluate(() => import('/example.mjs')), 120000, 'the example to run in the page');
	const want = LINES.split('\n');
	check(logged.join('\n') === want.join('\n'), `the page logs what Node.js printed: ${want.join(' / ')}`, `got: ${logged.join(' / ')}`);
	check(served.includes('/node_modules/terrain-chunk-client/terrain.js') && served.includes('/node_modules/terrain-chunk-client/terrain.wasm'),
		"the import map's terrain.js, and terrain.wasm from beside it", served.join(' '));
	check(!errors.length, 'no script errors', errors.join('; '));
	check(!refused.length, 'nothing asked of the internet', refused.join(' '));
	code = failures() ? 1 : 0;
} catch (e) {
	fail(`the browser test stopped: ${e.stack || e}`);
} finally {
	server.close();
	await browser.close();
}
console.log(code ? `${failures()} failed` : 'all passed');
process.exit(code);
