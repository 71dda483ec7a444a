// installed.mjs - the npm package as a project gets it (run by
// tests/library/npm_package.sh from a scratch project where the packed
// tarball is installed, so that the import below is resolved by name from
// its node_modules): the module and terrain.wasm found there, loadWasm()
// true with no argument (the file beside terrain.js) and with the URL of
// the package's ./terrain.wasm export, and the tile terrain-server generate
// wrote (NATIVE, the key in KEY: "gen seed lod cx cz layers") generated and
// decoded equal. Prints ok/FAIL lines; exit 0 when all passed.
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as T from 'terrain-chunk-client';

let failed = 0;
const check = (what, ok) => {
	console.log(`${ok ? 'ok' : 'FAIL'}: ${what}`);
	if (!ok) failed++;
};
const same = (a, b) => a.length === b.length && a.every((v, k) => v === b[k]);

const at = fileURLToPath(import.meta.resolve('terrain-chunk-client'));
check(`'terrain-chunk-client' resolves into the project's node_modules (${at})`,
	at === fileURLToPath(new URL('node_modules/terrain-chunk-client/terrain.js', import.meta.url)));
const wasmAt = fileURLToPath(import.meta.resolve('terrain-chunk-client/terrain.wasm'));
check("'terrain-chunk-client/terrain.wasm' is exported, beside terrain.js", wasmAt === at.replace(/terrain\.js$/, 'terrain.wasm') && existsSync(wasmAt));
check('no terrain.wasm loaded before loadWasm()', T.wasmLoaded() === false);

if (process.argv[2] === 'by-export') {
	check('loadWasm(the URL of the ./terrain.wasm export) is true', await T.loadWasm(new URL(import.meta.resolve('terrain-chunk-client/terrain.wasm'))));
} else {
	check('loadWasm() finds terrain.wasm beside terrain.js: true', await T.loadWasm());
	check('... and wasmLoaded()', T.wasmLoaded());
	const sc = T.selfCheck();
	check(`selfCheck() passes (${sc.message || sc.digest})`, sc.ok);
	const [gen, seed, lod, cx, cz, layers] = process.env.KEY.split(' ');
	const key = { gen, seed: Number(seed), lod: Number(lod), cx: Number(cx), cz: Number(cz), layers };
	const native = new Uint8Array(readFileSync(process.env.NATIVE));
	const made = T.generateTile(key);
	check(`generateTile(${process.env.KEY}): the bytes terrain-server generate wrote (${native.length})`, same(made.bytes, native));
	const wasm = T.decodeTile(native), js = T.decodeTile(native, { wasm: false });
	check('decodeTile of those bytes (terrain.wasm\'s decoder): the generated quanta and materials',
		same(wasm.quanta, made.quanta) && wasm.materials !== null && same(wasm.materials, made.materials));
	check('... the JavaScript decoder (wasm: false) too', same(js.quanta, made.quanta) && same(js.materials, made.materials));
	check('... the header names the key', wasm.header.seed === seed && wasm.header.cx === key.cx && wasm.header.cz === key.cz &&
		wasm.header.lod === key.lod && wasm.header.layers === true);
}
process.exit(failed ? 1 : 0);
