// browser.mjs - terrain.wasm in headless Chromium (run by tests/library/wasm.sh):
// a page on a loopback server imports clients/js/terrain.js, whose
// loadWasm() fetches terrain.wasm from beside it, and computes every golden
// tile of common/golden_tiles.inc and the tiles of WORK/keys.txt; their
// hashes must be the native ones (the golden table; terrain-server
// generate's files, WORK/native-K.bin), and the page's decoder must take
// the wasm path. Environment: WASM (the terrain.wasm), WORK (tests/library/wasm.sh's
// references). Prints ok/FAIL lines; exit 0 when all passed.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch, watchErrors, check, fail, failures, within } from '../../browser/pages.mjs';
import { xxh3Hex } from '../../../clients/js/terrain.js';

const { WASM, WORK } = process.env;
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const files = {
	'/': ['text/html', '<!doctype html><title>terrain.wasm</title><p>terrain.wasm test</p>'],
	'/terrain.js': ['text/javascript', readFileSync(join(ROOT, 'clients/js/terrain.js'))],
	'/terrain.wasm': ['application/wasm', readFileSync(WASM)],
	'/favicon.ico': ['image/x-icon', ''],
};
const server = createServer((req, res) => {
	const f = files[new URL(req.url, 'http://x').pathname];
	if (!f) return res.writeHead(404).end('not found');
	res.writeHead(200, { 'Content-Type': f[0], 'Cache-Control': 'no-store' }).end(f[1]);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}`;

const INT32 = { INT32_MAX: 2147483647, INT32_MIN: -2147483648 };
const num = (s) => (s in INT32 ? INT32[s] : Number(s));
const golden = readFileSync(`${WORK}/golden.inc`, 'utf8').split('\n')
	.map((l) => /\{ "(\w+)", (\d+)ULL, (\d+), ([-\w]+), ([-\w]+), 0x([0-9a-f]{16})ULL \}/.exec(l)).filter(Boolean)
	.map(([, gen, seed, lod, cx, cz, hash]) => ({ gen, seed, lod: Number(lod), cx: num(cx), cz: num(cz), hash }));
const keys = readFileSync(`${WORK}/keys.txt`, 'utf8').trim().split('\n').map((l) => l.split(' '));

const browser = await launch();
let code = 1;
try {
	const page = await browser.newPage();
	const errors = watchErrors(page);
	await page.goto(`${url}/`);
	const r = await within(page.evaluate(async ({ golden, keys }) => {
		const T = await import('/terrain.js');
		const loaded = await T.loadWasm();
		const hex = (q) => T.xxh3Hex(new Uint8Array(q.buffer, q.byteOffset, q.byteLength));
		const got = golden.map((g) => hex(T.generateTile({ seed: g.seed, gen: g.gen, lod: g.lod, cx: g.cx, cz: g.cz }, { metres: false }).quanta));
		const tiles = keys.map(([gen, seed, lod, cx, cz, layers]) =>
			T.xxh3Hex(T.generateTile({ seed, gen, lod: Number(lod), cx: Number(cx), cz: Number(cz), layers }).bytes));
		const t = T.generateTile({ seed: 42, lod: 0, cx: 3, cz: -2 });
		const d = T.decodeTile(t.bytes), j = T.decodeTile(t.bytes, { wasm: false });
		const same = d.quanta.every((v, k) => v === t.quanta[k] && v === j.quanta[k]);
		return { loaded, wasm: T.wasmLoaded(), got, tiles, same, ua: navigator.userAgent };
	}, { golden, keys }), 120000, 'the page to compute the tiles');
	console.log(`  ${r.ua}`);
	check(r.loaded && r.wasm, 'loadWasm() fetched terrain.wasm from beside terrain.js');
	const bad = golden.filter((g, k) => r.got[k] !== g.hash);
	check(!bad.length, `${golden.length} golden tiles equal the native hashes`, bad.map((g) => `${g.gen} lod ${g.lod}`).join(', '));
	const want = keys.map((_, k) => xxh3Hex(new Uint8Array(readFileSync(`${WORK}/native-${k}.bin`))));
	const diff = keys.filter((_, k) => r.tiles[k] !== want[k]);
	check(!diff.length, `${keys.length} tiles byte for byte terrain-server generate's`, diff.map((k) => k.join(' ')).join('; '));
	check(r.same, 'the wasm and JavaScript decoders give the generated heights');
	check(!errors.length, 'no script errors', errors.join('; '));
	code = failures() ? 1 : 0;
} catch (e) {
	fail(`the browser test stopped: ${e.stack || e}`);
} finally {
	server.close();
	await browser.close();
}
console.log(code ? `${failures()} failed` : 'all passed');
process.exit(code);
