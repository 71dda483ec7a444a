// core.test.mjs - terrain.wasm (make wasm) in Node.js, under Node's test
// runner (tests/library/wasm.sh runs it). Environment:
//   WASM, WASM_NOSIMD  the build's terrain.wasm and one built without simd128
//   WORK               folder of native references: golden.inc (a copy of
//                      common/golden_tiles.inc), presets.json (GET
//                      /v1/presets of the native server), native-K.bin
//                      (terrain-server generate of the keys in keys.txt)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as T from '../../../clients/js/terrain.js';

const { WASM, WASM_NOSIMD, WORK } = process.env;
const INT32 = { INT32_MAX: 2147483647, INT32_MIN: -2147483648 };
const num = (s) => (s in INT32 ? INT32[s] : Number(s));
const golden = readFileSync(`${WORK}/golden.inc`, 'utf8').split('\n')
	.map((l) => /\{ "(\w+)", (\d+)ULL, (\d+), ([-\w]+), ([-\w]+), 0x([0-9a-f]{16})ULL \}/.exec(l)).filter(Boolean)
	.map(([, gen, seed, lod, cx, cz, hash]) => ({ gen, seed: BigInt(seed), lod: Number(lod), cx: num(cx), cz: num(cz), hash }));
const heightsHash = (q) => T.xxh3Hex(new Uint8Array(q.buffer, q.byteOffset, q.byteLength));

test('terrain.wasm loads', async () => {
	assert.equal(T.wasmLoaded(), false);
	assert.equal(await T.loadWasm(new URL('file:///nonexistent/terrain.wasm')), false, 'a missing file is no error');
	assert.equal(T.wasmLoaded(), false);
	assert.throws(() => T.openWorld({ seed: 1 }), (e) => e.code === 'ERR_INVAL', 'no world without the module');
	assert.equal(await T.loadWasm(new URL(`file://${WASM}`)), true);
	assert.ok(golden.length >= 30, `${golden.length} golden rows`);
	const sc = T.selfCheck();
	assert.ok(sc.ok, sc.message);
	assert.match(sc.digest, /^[0-9a-f]{16}$/);
});

test('every golden tile of common/golden_tiles.inc, through openWorld', () => {
	for (const g of golden) {
		const w = T.openWorld({ seed: g.seed, gen: g.gen });
		const t = w.tile({ lod: g.lod, cx: g.cx, cz: g.cz }, { encode: false, metres: false });
		w.close();
		assert.equal(heightsHash(t.quanta), g.hash, `${g.gen} seed ${g.seed} lod ${g.lod} (${g.cx}, ${g.cz})`);
	}
});

test('the build without simd128 gives the same golden tiles, and the same tile bytes', async () => {
	// a second instance of the module (another URL is another module), on the other build
	const N = await import('../../../clients/js/terrain.js?nosimd');
	assert.equal(await N.loadWasm(new URL(`file://${WASM_NOSIMD}`)), true);
	assert.ok(N.selfCheck().ok);
	for (const g of golden) {
		const key = { seed: g.seed, gen: g.gen, lod: g.lod, cx: g.cx, cz: g.cz };
		assert.equal(heightsHash(N.generateTile(key, { encode: false }).quanta), g.hash, `no simd128: ${g.gen} lod ${g.lod}`);
		// materials too (eroded presets have none at coarse LODs: ERR_INVAL, as the server says)
		key.layers = g.gen === 'eroded' ? 'height' : 'height,material';
		assert.deepEqual(N.generateTile(key).bytes, T.generateTile(key).bytes, `tile bytes, ${g.gen} lod ${g.lod} (${g.cx}, ${g.cz})`);
	}
});

test('generated tiles are byte for byte terrain-server generate\'s (native x86-64)', () => {
	const keys = readFileSync(`${WORK}/keys.txt`, 'utf8').trim().split('\n');
	assert.ok(keys.length >= 20);
	keys.forEach((line, k) => {
		const [gen, seed, lod, cx, cz, layers] = line.split(' ');
		const t = T.generateTile({ seed, gen, lod: Number(lod), cx: Number(cx), cz: Number(cz), layers });
		assert.deepEqual(t.bytes, new Uint8Array(readFileSync(`${WORK}/native-${k}.bin`)), line);
		// and the decoders agree on them
		const d = T.decodeTile(t.bytes), j = T.decodeTile(t.bytes, { wasm: false });
		assert.deepEqual(d.quanta, t.quanta, `${line}: wasm decode`);
		assert.deepEqual(j.quanta, t.quanta, `${line}: JS decode`);
		assert.deepEqual(d.materials, t.materials, `${line}: materials`);
		assert.deepEqual(d.header, j.header, `${line}: header`);
	});
});

test('fingerprints equal the native server\'s, built-in and from JSON', () => {
	const presets = JSON.parse(readFileSync(`${WORK}/presets.json`, 'utf8'));
	const list = presets.presets ?? presets;
	assert.ok(list.length >= 6);
	for (const p of list) {
		const w = T.openWorld({ seed: 1, gen: p.name });
		assert.equal(w.fingerprint, p.fingerprint, p.name);
		w.close();
	}
	const json = readFileSync(new URL('../../../presets/alpine.json', import.meta.url), 'utf8');
	const a = T.openWorld({ seed: 5, gen: 'alpine', preset: json }), b = T.openWorld({ seed: 5, gen: 'alpine' });
	assert.equal(a.fingerprint, b.fingerprint);
	assert.deepEqual(a.tile({ lod: 3, cx: -7, cz: 2 }).bytes, b.tile({ lod: 3, cx: -7, cz: 2 }).bytes);
	a.close(); b.close();
	assert.throws(() => T.openWorld({ seed: 1, gen: 'nope' }), (e) => e.code === 'ERR_NOTFOUND');
	assert.throws(() => T.openWorld({ seed: 1, gen: 'x', preset: '{"height": 3' }), (e) => e.code === 'ERR_PARSE');
});

test('precisions and edits: requantised like the server, edits through an EditLog', () => {
	const exact = T.generateTile({ seed: 42, lod: 1, cx: 3, cz: 4 });
	const coarse = T.generateTile({ seed: 42, lod: 1, cx: 3, cz: 4, precision: '10cm' });
	assert.equal(coarse.header.quantumUm, 100000);
	for (let k = 0; k < exact.quanta.length; k++) {
		const v = exact.quanta[k], r = v < 0 ? -Math.round(-v / 10) : Math.round(v / 10);
		if (coarse.quanta[k] !== r) assert.fail(`sample ${k}: ${coarse.quanta[k]}, want ${r}`);
	}
	assert.throws(() => T.generateTile({ seed: 42, lod: 1, cx: 3, cz: 4, precision: '3cm' }), (e) => e.code === 'ERR_INVAL');
	const w = T.openWorld({ seed: 42 }), log = w.edits();
	assert.equal(log.seq, 0);
	log.apply({ edits: [{ op: 'raise', x: 800, z: 1050, radius: 30, strength: 4 }] });
	assert.equal(log.seq, 1);
	const ed = w.tile({ lod: 0, cx: 3, cz: 4 }, { edits: log }), un = w.tile({ lod: 0, cx: 3, cz: 4 });
	assert.equal(ed.header.editSeq, 1);
	const k = (1050 - 1024) * 257 + (800 - 768);
	assert.equal(ed.quanta[k] - un.quanta[k], 400, 'raised 4 m at the centre');
	assert.equal(ed.quanta[0], un.quanta[0], 'untouched outside the brush');
	assert.equal(log.chunk(3, 4).version, 1);
	assert.deepEqual(log.chunk(4, 4), { version: 0, hash: '0000000000000000' });
	assert.throws(() => log.apply('{"edits": [{"op": "raise"}]}'), (e) => e.code === 'ERR_PARSE' || e.code === 'ERR_RANGE');
	assert.throws(() => log.apply({ edits: [{ op: 'lower', x: 0, z: 0, radius: 3, strength: 1 }] }, 5), (e) => e.code === 'ERR_CONFLICT');
	w.close();
});

test('a revert takes edits out of an EditLog and its undo puts them back, from POST bodies and GET edits entries', () => {
	const w = T.openWorld({ seed: 42 }), log = w.edits(), un = w.tile({ lod: 0, cx: 3, cz: 4 });
	log.apply({ edits: [{ op: 'raise', x: 800, z: 1050, radius: 30, strength: 4 }] });
	const ed = w.tile({ lod: 0, cx: 3, cz: 4 }, { edits: log }), h1 = log.chunk(3, 4).hash;
	log.revert({ seq_from: 1 }, { author: 'mod', time: 1000 });
	assert.deepEqual(log.chunk(3, 4), { version: 2, hash: '0000000000000000' });
	assert.deepEqual(w.tile({ lod: 0, cx: 3, cz: 4 }, { edits: log }).quanta, un.quanta, 'the unedited heights');
	log.revert({ seq: 3, undo: 2, author: 'mod', time: 2000 }); // as GET .../edits lists it
	assert.deepEqual(log.chunk(3, 4), { version: 3, hash: h1 });
	assert.deepEqual(w.tile({ lod: 0, cx: 3, cz: 4 }, { edits: log }).quanta, ed.quanta, 'the edited heights again');
	log.revert({ seq: 4, revert: { area: [700, 1000, 900, 1100], floor: 1 }, count: 1, author: 'mod', time: 3000 });
	assert.deepEqual(log.chunk(3, 4), { version: 4, hash: '0000000000000000' });
	assert.throws(() => log.revert({ nobody: 1 }, { author: 'mod' }), (e) => e.code === 'ERR_PARSE' && /nobody/.test(e.message));
	assert.throws(() => log.revert({ undo: 2 }, { author: 'a b' }), (e) => e.code === 'ERR_INVAL');
	w.close();
});

test('bad tiles: the wasm decoder refuses them with the JavaScript decoder\'s codes', () => {
	const good = T.generateTile({ seed: 42, lod: 0, cx: 1, cz: 1 }).bytes;
	const mut = (f) => { const b = good.slice(); f(b, new DataView(b.buffer)); return b; };
	const cases = [good.subarray(0, 10), good.subarray(0, good.length - 1), new Uint8Array([...good, 0]),
		mut((b) => { b[0] = 0x58; }), mut((b, dv) => dv.setUint16(4, 9, true)), mut((b, dv) => dv.setUint32(36, 100, true)),
		mut((b) => { b[34] = 1; }), mut((b) => { b[33] = 13; }), mut((b) => { b[100] ^= 4; }), mut((b) => { b[8] ^= 4; })];
	for (const [k, c] of cases.entries()) {
		let js, wa;
		try { T.decodeTile(c, { wasm: false }); } catch (e) { js = e.code; }
		try { T.decodeTile(c); } catch (e) { wa = e.code; }
		assert.ok(js && wa, `case ${k} refused by both (${js}, ${wa})`);
		assert.equal(wa, js, `case ${k}`);
	}
});

// terrain_encode() of a second instance of terrain.wasm (terrain.js has no
// encoder): tiles of any heights, for the corners generated terrain never
// reaches. Returns encode(heights, { chunkLog2, format, materials }): the
// tile's bytes, LOD 0, side 2^chunkLog2 + 1.
async function wasmEncoder() {
	const stubs = { fd_close: () => 8, fd_seek: () => 8, fd_write: () => 8 };
	const { instance } = await WebAssembly.instantiate(readFileSync(WASM), { wasi_snapshot_preview1: stubs });
	const x = instance.exports;
	x._initialize();
	return (heights, { chunkLog2 = 5, format = 7, materials = null } = {}) => {
		const side = 2 ** chunkLog2 + 1, n = side * side, cap = x.terrain_encode_bound(side, materials ? 1 : 0);
		const info = x.malloc(72), hp = x.malloc(4 * n), mp = materials ? x.malloc(n) : 0, out = x.malloc(cap), lp = x.malloc(4);
		const dv = new DataView(x.memory.buffer);
		for (let o = 0; o < 72; o += 4) dv.setUint32(info + o, 0, true);
		dv.setUint32(info, 72, true);
		dv.setBigUint64(info + 16, 42n, true);
		dv.setInt32(info + 24, 3, true);
		dv.setInt32(info + 28, -1, true);
		dv.setInt32(info + 36, chunkLog2, true);
		dv.setUint32(info + 40, side, true);
		dv.setUint32(info + 44, 10000, true);
		dv.setUint32(info + 64, materials ? 1 : 0, true);
		new Int32Array(x.memory.buffer, hp, n).set(heights);
		if (materials) new Uint8Array(x.memory.buffer, mp, n).set(materials);
		const rc = x.terrain_encode(info, hp, mp, format, out, cap, lp);
		const bytes = rc ? null : new Uint8Array(x.memory.buffer, out, new DataView(x.memory.buffer).getUint32(lp, true)).slice();
		for (const p of [info, hp, mp, out, lp]) if (p) x.free(p);
		assert.equal(rc, 0, `terrain_encode: ${rc}`);
		return bytes;
	};
}

// Heights of side x side samples: the kinds of terrain the decoders'
// paths are for (smooth, rough, spikes, wide residuals, far from 0).
function cornerHeights(side) {
	let s = 12345;
	const rnd = () => { s = (Math.imul(s, 1103515245) + 12345) >>> 0; return s / 2 ** 32; };
	const n = side * side, at = (f) => Int32Array.from({ length: n }, (_, k) => f(k % side, Math.floor(k / side)));
	return {
		smooth: at((i, j) => Math.round(5000 * Math.sin(i / 7) + 3000 * Math.cos(j / 5) + 40 * i)),
		rough: at(() => Math.floor(rnd() * 2000) - 1000),
		// residuals of 2^22 and more: 32 to 40 bits a sample
		spikes: at((i, j) => (i * 7 + j * 3) % 11 === 0 ? Math.floor(rnd() * 2 ** 31) * (rnd() < 0.5 ? -1 : 1) : 100 * i - 50 * j),
		int32: at(() => (Math.floor(rnd() * 2 ** 32) | 0)),
		low: at((i, j) => -2147483648 + i + ((i * j) & 3)),
		high: at((i, j) => 2147483647 - 3 * j - (i & 1)),
		// a smooth ramp but for three samples almost 2^25 away, each its own
		// token: more than 32 bits a sample in filter 2's narrow loops
		jumps: at((i, j) => 30 * i + 20 * j + ((i === 5 && j === 8) || (i === 21 && j === 30) ? 2 ** 25 - 9999
			: i === 13 && j === 13 ? 9999 - 2 ** 25 : 0)),
		// within 2^25 of sample (0, 0), then far: the narrow sums give way to exact ones
		wide: at((i, j) => (j > side / 2 ? 2 ** 28 : 0) + 17 * i - 5 * j),
		flat: at(() => 777),
	};
}

test('any heights: encoded by terrain.wasm as versions 7, 8 and 5, decoded by JavaScript and by terrain.wasm alike', async () => {
	const encode = await wasmEncoder();
	const seen = new Set();
	for (const chunkLog2 of [5, 6]) {
		const side = 2 ** chunkLog2 + 1;
		for (const [kind, h] of Object.entries(cornerHeights(side))) {
			for (const [format, materials] of [[7, null], [7, Uint8Array.from(h, (v) => v & 3)], [5, null]]) {
				const b = encode(h, { chunkLog2, format, materials });
				const j = T.decodeTile(b, { wasm: false, metres: false }), w = T.decodeTile(b, { metres: false });
				const what = `${kind}, side ${side}, version ${j.header.version}, filter ${j.header.filter}`;
				assert.equal(j.header.version, format + (materials ? 1 : 0), what);
				assert.deepEqual(j.quanta, h, `${what}: JS heights`);
				assert.deepEqual(w.quanta, h, `${what}: wasm heights`);
				assert.deepEqual(j.materials, materials, `${what}: materials`);
				seen.add(`${j.header.version}/${j.header.filter}`);
			}
		}
	}
	for (const vf of ['7/2', '7/3', '8/2', '8/3', '5/2', '5/3']) assert.ok(seen.has(vf), `${vf} in ${[...seen].join(' ')}`);
});

test('damaged version-7 streams: the JavaScript decoder refuses (ERR_CORRUPT) or reads exactly what terrain.wasm does', async () => {
	const encode = await wasmEncoder();
	const hs = cornerHeights(33);
	const tiles = [T.generateTile({ seed: 42, lod: 0, cx: 1, cz: 1 }).bytes, T.generateTile({ seed: 42, gen: 'alpine', lod: 1, cx: 2, cz: 2 }).bytes,
		encode(hs.spikes), encode(hs.rough), encode(hs.int32)];
	let refused = 0, cases = 0;
	for (const [t, good] of tiles.entries()) {
		assert.equal(T.decodeHeader(good).version, 7, `tile ${t}`);
		const coded = new DataView(good.buffer, good.byteOffset).getUint32(64, true), end = 68 + coded - 1;
		const muts = [(b) => { b[end] = 0; }];
		for (let k = 0; k < 160; k++) {
			// every bit of the last bytes (the end mark and the states), then spread over the rest
			const at = k < 96 ? end - (k >> 3) : 68 + Math.floor((coded - 13) * (k - 96) / 63), bit = k < 96 ? k & 7 : (k * 3) % 8;
			muts.push((b) => { b[at] ^= 1 << bit; });
		}
		for (const [k, f] of muts.entries()) {
			const d = good.slice(), dv = new DataView(d.buffer);
			f(d);
			const rest = new Uint8Array(d.length - 8);
			rest.set(d.subarray(0, 56), 0);
			rest.set(d.subarray(64), 56);
			dv.setBigUint64(56, T.xxh3(rest), true);
			let js, wa;
			try { js = T.decodeTile(d, { wasm: false, metres: false }).quanta; } catch (e) { js = e.code; }
			try { wa = T.decodeTile(d, { metres: false }).quanta; } catch (e) { wa = e.code; }
			cases++;
			if (typeof wa === 'string') {
				refused++;
				assert.equal(wa, 'ERR_CORRUPT', `tile ${t} case ${k}`);
			}
			assert.deepEqual(js, wa, `tile ${t} case ${k}: JS and terrain.wasm`);
		}
	}
	assert.ok(refused >= cases / 2, `${refused} of ${cases} refused`);
});
