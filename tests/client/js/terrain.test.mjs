// terrain.test.mjs - the JavaScript client module (clients/js/terrain.js)
// under Node's own test runner, against the live server that
// tests/client/js_client.sh starts. Environment:
//   BASE    http://127.0.0.1:PORT of the server
//   WORK    folder of reference files: tile-NAME.bin (fetched by curl),
//           .heights (terrain-client decode --heights), .header
//           (terrain-client decode) for each NAME of TILES; xxh3.txt
//           ("n hex" lines of libxxhash, optional)
//   TILES   "NAME=PATH ..." the tiles' names and URL paths
//   CLIENT  terrain-client (decode --heights of damaged tiles)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import {
	decodeTile, decodeBundle, fetchTile, fetchBundle, seedU64, stitch, gridMesh, heightArray,
	tileUrl, bundleUrl, ringRect, xxh3Hex, TileError,
} from '../../../clients/js/terrain.js';

const { BASE, WORK, CLIENT } = process.env;
const TILES = (process.env.TILES || '').split(/\s+/).filter(Boolean).map((t) => [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1)]);
const file = (name, ext) => `${WORK}/tile-${name}.${ext}`;
const refHeights = (name) => readFileSync(file(name, 'heights'), 'utf8').trim().split(/\s+/).map(Number);
const refHeader = (name) => Object.fromEntries(readFileSync(file(name, 'header'), 'utf8').trim().split('\n').map((l) => l.split(': ')));
const bytes = (name) => new Uint8Array(readFileSync(file(name, 'bin')));
const code = (c) => (e) => e instanceof TileError && e.code === c;

test('the reference tiles are there', () => {
	assert.ok(BASE && WORK && TILES.length >= 4, 'run from tests/client/js_client.sh');
});

test('decodeTile equals terrain-client decode --heights, header and heights', () => {
	for (const [name] of TILES) {
		const t = decodeTile(bytes(name)), h = refHeader(name), ref = refHeights(name);
		assert.equal(t.header.seed, h.seed, `${name} seed`);
		assert.equal(t.header.fingerprint, h.fingerprint, `${name} fingerprint`);
		assert.equal(t.header.checksum, h.checksum, `${name} checksum`);
		assert.deepEqual([t.header.cx, t.header.cz, t.header.lod, t.header.side, t.header.editSeq],
			[Number(h.cx), Number(h.cz), Number(h.lod), Number(h.side), Number(h.edit_seq)], name);
		assert.equal(t.header.version, Number(h.version), `${name} version`);
		assert.equal(t.heights.length, ref.length, `${name} samples`);
		// terrain-client prints exact decimals of the quanta: compare quanta
		const q = Number(h.quantum_m);
		for (let k = 0; k < ref.length; k++)
			if (Math.round(ref[k] / q) !== t.quanta[k]) assert.fail(`${name} sample ${k}: ${t.quanta[k]} quanta, reference ${ref[k]} m`);
		const f32 = heightArray(t);
		assert.ok(f32 instanceof Float32Array && f32.length === ref.length);
		const k = ref.length - 1;
		assert.ok(Math.abs(f32[k] - ref[k]) < 1e-3, `${name}: ${f32[k]} against ${ref[k]}`);
		assert.equal(t.materials === null, !t.header.layers, `${name} materials`);
	}
});

test('fetchTile over HTTP gives the same tile, verified, with its ETag', async () => {
	for (const [name, path] of TILES) {
		if (/format=/.test(path)) continue;   // the older forms: the module asks for the current one
		const [, seed, lod, cx, cz] = path.match(/worlds\/([^/]+)\/chunks\/(\d+)\/(-?\d+)\/(-?\d+)/);
		const layers = /layers=([a-z,]+)/.exec(path)?.[1];
		const gen = /gen=([a-z]+)/.exec(path)?.[1];
		const t = await fetchTile(BASE, { seed, gen, lod: Number(lod), cx: Number(cx), cz: Number(cz), layers });
		assert.equal(t.header.checksum, decodeTile(bytes(name)).header.checksum, name);
		assert.match(t.etag, /^"[0-9a-f]{16}(-[zg])?"$/);
		assert.equal(new URL(t.url).pathname + new URL(t.url).search, path, `${name}: the module's URL is the one curl used`);
	}
});

test('seedU64 hashes text seeds as the server does', async () => {
	assert.equal(seedU64(42), 42n);
	assert.equal(seedU64('18446744073709551615'), 2n ** 64n - 1n);
	const t = await fetchTile(BASE, { seed: 'my-world', lod: 8, cx: 1, cz: 1 });
	assert.equal(t.header.seed, seedU64('my-world').toString());
	assert.notEqual(t.header.seed, '0');
	assert.throws(() => seedU64('18446744073709551616'), code('ERR_RANGE'));
	assert.throws(() => seedU64('no spaces'), code('ERR_INVAL'));
	assert.throws(() => seedU64(-1), code('ERR_RANGE'));
});

test('fetchBundle equals the single tiles, and stitch shares their edges', async () => {
	const rect = { seed: 42, lod: 4, ...ringRect(2, -1, 1) };
	const tiles = await fetchBundle(BASE, rect);
	assert.equal(tiles.size, 9);
	for (const [key, t] of tiles) {
		const [cx, cz] = key.split(',').map(Number);
		const one = await fetchTile(BASE, { seed: 42, lod: 4, cx, cz });
		assert.deepEqual(t.quanta, one.quanta, key);
	}
	const g = stitch(tiles, rect);
	assert.deepEqual([g.width, g.height, g.spacing, g.x0, g.z0], [49, 49, 16, 256, -512]);
	const centre = tiles.get('2,-1'), h = heightArray(centre);
	for (let j = 0; j < 17; j++)
		for (let i = 0; i < 17; i++) assert.equal(g.heights[(16 + j) * 49 + 16 + i], h[j * 17 + i]);
	// a stitched grid is the same whatever order the tiles come in
	const again = stitch([...tiles.values()].reverse(), rect);
	assert.deepEqual(again.heights, g.heights);
	// tiles that disagree on their edge are refused
	const broken = new Map(tiles), t = tiles.get('3,-1');
	broken.set('3,-1', { ...t, quanta: t.quanta.map((v, k) => (k % 17 === 0 ? v + 1 : v)) });
	assert.throws(() => stitch(broken, rect), code('ERR_SEAM'));
	const missing = new Map(tiles);
	missing.delete('1,0');
	assert.throws(() => stitch(missing, rect), code('ERR_MISMATCH'));
});

test('gridMesh builds a mesh three.js takes', async () => {
	const rect = { seed: 42, lod: 6, cx0: 0, cz0: 0, cx1: 1, cz1: 0 };
	const g = stitch(await fetchBundle(BASE, rect), rect);
	const m = gridMesh(g, { verticalScale: 2, offset: [10, 0, -5] });
	const n = g.width * g.height;
	assert.equal(m.positions.length, 3 * n);
	assert.equal(m.normals.length, 3 * n);
	assert.equal(m.indices.length, 6 * (g.width - 1) * (g.height - 1));
	assert.ok(m.indices.every((i) => i < n));
	assert.equal(m.positions[3 * (g.width + 1)], 10 + g.spacing);
	assert.equal(m.positions[3 * (g.width + 1) + 2], -5 + g.spacing);
	assert.ok(Math.abs(m.positions[3 * 5 + 1] - 2 * g.heights[5]) < 1e-3);
	for (let k = 0; k < n; k++) {
		const l = Math.hypot(m.normals[3 * k], m.normals[3 * k + 1], m.normals[3 * k + 2]);
		assert.ok(Math.abs(l - 1) < 1e-5 && m.normals[3 * k + 1] > 0, 'unit normals pointing up');
	}
	// every triangle's face normal (counter-clockwise) points up, +y
	const p = m.positions;
	for (let t = 0; t < m.indices.length; t += 3) {
		const [a, b, c] = [m.indices[t], m.indices[t + 1], m.indices[t + 2]].map((i) => [p[3 * i], p[3 * i + 1], p[3 * i + 2]]);
		const u = b.map((v, k) => v - a[k]), w = c.map((v, k) => v - a[k]);
		const ny = u[2] * w[0] - u[0] * w[2];
		if (!(ny > 0)) assert.fail(`triangle ${t / 3} faces down`);
	}
});

test('gridMesh with a skirt closes the grid with walls facing out', async () => {
	const rect = { seed: 42, lod: 5, cx0: 0, cz0: 0, cx1: 1, cz1: 0 };
	const g = stitch(await fetchBundle(BASE, rect), rect);
	const W = g.width, H = g.height, n = W * H, skirt = 25;
	const plain = gridMesh(g), m = gridMesh(g, { skirt, offset: [3, 4, 5] });
	assert.equal(plain.skirtStart, n);
	assert.equal(plain.positions.length, 3 * n, 'no skirt by default');
	assert.equal(m.skirtStart, n);
	assert.equal(m.positions.length, 3 * (n + 4 * (W + H)));
	assert.equal(m.indices.length, 6 * ((W - 1) * (H - 1) + 2 * (W - 1) + 2 * (H - 1)));
	assert.ok(m.indices.every((i) => i < m.positions.length / 3));
	const lo = Math.min(...g.heights), p = m.positions, nm = m.normals;
	const bottom = [];
	for (let k = n; k < p.length / 3; k++) {
		const y = p[3 * k + 1];
		// a wall vertex is an edge sample or right under one, at the base
		const x = p[3 * k] - 3, z = p[3 * k + 2] - 5, i = x / g.spacing, j = z / g.spacing;
		assert.ok((i === 0 || i === W - 1 || j === 0 || j === H - 1) && Number.isInteger(i) && Number.isInteger(j));
		if (Math.abs(y - (lo - skirt + 4)) < 1e-3) bottom.push(k);
		else assert.ok(Math.abs(y - (g.heights[j * W + i] + 4)) < 1e-3, 'a top vertex is on its sample');
		assert.equal(nm[3 * k + 1], 0);
		assert.equal(Math.abs(nm[3 * k]) + Math.abs(nm[3 * k + 2]), 1, 'level unit normals');
	}
	assert.equal(bottom.length, 2 * (W + H), 'one bottom vertex per edge sample and side');
	// the grid's triangles face up; each wall triangle faces out, along its normal
	for (let t = 6 * (W - 1) * (H - 1); t < m.indices.length; t += 3) {
		const [a, b, c] = [0, 1, 2].map((d) => m.indices[t + d]);
		const v = (i) => [p[3 * i], p[3 * i + 1], p[3 * i + 2]];
		const [A, B, C] = [v(a), v(b), v(c)];
		const u = B.map((x, k) => x - A[k]), w = C.map((x, k) => x - A[k]);
		const cross = [u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]];
		const out = cross[0] * nm[3 * a] + cross[2] * nm[3 * a + 2];
		if (!(out > 0) || Math.abs(cross[1]) > 1e-6 * Math.hypot(...cross))
			assert.fail(`wall triangle ${t / 3} does not face out`);
		// and out is away from the grid's middle
		const mx = 3 + (W - 1) * g.spacing / 2, mz = 5 + (H - 1) * g.spacing / 2;
		if (!((A[0] - mx) * nm[3 * a] + (A[2] - mz) * nm[3 * a + 2] > 0)) assert.fail(`wall triangle ${t / 3} faces in`);
	}
});

test('the server sends coded tiles (version 7, 8 with layers; 5 and 6 with format=5, 3 and 4 with format=3) of both filters; small tiles the old form', () => {
	const seen = new Set(), versions = new Set();
	for (const [name, path] of TILES) {
		const h = decodeTile(bytes(name)).header;
		const coded = h.side >= 33;   // tile.h TILE_CODED_MIN_SIDE
		const v = Number(/format=(\d)/.exec(path)?.[1] ?? 7);
		assert.equal(h.version, coded ? v + (h.layers ? 1 : 0) : (h.layers ? 2 : 1), name);
		assert.equal(h.tans, h.version >= 7, name);
		seen.add(`${h.version}/${h.filter}`);
		versions.add(h.version);
	}
	for (const vf of ['7/2', '7/3', '8/3', '5/2', '5/3', '3/2', '3/3']) assert.ok(seen.has(vf), `${vf} in ${[...seen].join(' ')}`);
	assert.deepEqual([...versions].sort(), [1, 2, 3, 4, 5, 6, 7, 8]);
});

test('decodeTile still reads the old form: the worked example of version 1', () => {
	// docs/tile-format.md, "Worked example"
	const ex = Uint8Array.from([
		0x54, 0x52, 0x52, 0x4e, 0x01, 0x00, 0x40, 0x00, 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
		0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00,
		0x03, 0x04, 0x01, 0x01, 0x03, 0x00, 0x00, 0x00, 0x10, 0x27, 0x00, 0x00, 0x64, 0x00, 0x00, 0x00,
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xd4, 0xf7, 0xc4, 0x1f, 0xb7, 0x68, 0xa2, 0xb9,
		0x00, 0x06, 0x08, 0x03, 0x01, 0x06, 0x0f, 0x0a, 0x12]);
	const t = decodeTile(ex);
	assert.equal(t.header.version, 1);
	assert.deepEqual([...t.quanta], [100, 103, 110, 98, 100, 109, 90, 97, 120]);
	assert.equal(t.header.checksum, 'b9a268b71fc4f7d4');
});

for (const version of [7, 5]) test(`bad tiles are refused with the reference decoder's codes (version ${version})`, () => {
	const [name] = TILES.find(([n]) => decodeTile(bytes(n)).header.version === version);
	const good = bytes(name);
	const mut = (f) => { const b = good.slice(); f(b, new DataView(b.buffer)); return b; };
	assert.throws(() => decodeTile(good.subarray(0, 10)), code('ERR_TRUNC'));
	assert.throws(() => decodeTile(good.subarray(0, good.length - 1)), code('ERR_TRUNC'));
	assert.throws(() => decodeTile(new Uint8Array([...good, 0])), code('ERR_TOOBIG'));
	assert.throws(() => decodeTile(mut((b) => { b[0] = 0x58; })), code('ERR_MAGIC'));
	assert.throws(() => decodeTile(mut((b, dv) => dv.setUint16(4, 9, true))), code('ERR_VERSION'));
	assert.throws(() => decodeTile(mut((b, dv) => dv.setUint16(4, 1, true))), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b, dv) => dv.setUint32(36, 100, true))), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b) => { b[35] = 1; })), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b) => { b[34] = 1; })), code('ERR_CORRUPT'));
	// the coded length (bytes 64..67) is checked before the checksum
	assert.throws(() => decodeTile(mut((b) => { b[64] ^= 4; })), (e) => e instanceof TileError && /ERR_TRUNC|ERR_TOOBIG/.test(e.code));
	assert.throws(() => decodeTile(mut((b) => { b[32] = 13; })), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b) => { b[33] = 13; })), code('ERR_TOOBIG'));
	assert.throws(() => decodeTile(mut((b, dv) => dv.setUint32(40, 0, true))), code('ERR_CORRUPT'));
	// one flipped bit in a header field the format does not bound (fingerprint,
	// seed, cx, offset, edit_seq) or in the payload is a checksum error
	for (const at of [8, 16, 24, 44, 48, 68, 100, good.length - 1])
		assert.throws(() => decodeTile(mut((b) => { b[at] ^= 4; })), code('ERR_CHECKSUM'), `byte ${at}`);
	// verify: false skips the checksum but not the structure: the filter
	// byte, the stream lengths and the coder's states are still checked
	assert.doesNotThrow(() => decodeTile(mut((b) => { b[8] ^= 4; }), { verify: false }));
	assert.throws(() => decodeTile(mut((b) => { b[34] ^= 1; }), { verify: false }), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b) => { b[68] ^= 1; }), { verify: false }), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b, dv) => dv.setUint32(68, 0, true)), { verify: false }), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(good.subarray(0, 70), { verify: false }), code('ERR_TRUNC'));
	// a payload read as another coder's (versions 3, 5 and 7: rANS with 2
	// or 8 states, tANS) is not canonical
	for (const v of [3, 5, 7].filter((v) => v !== version))
		assert.throws(() => decodeTile(mut((b, dv) => dv.setUint16(4, v, true)), { verify: false }), code('ERR_CORRUPT'), `read as ${v}`);
});

// A copy of tile bytes b with f applied and the checksum made right again,
// so that the decoders get past it to the payload.
function damaged(b, f) {
	const d = b.slice(), dv = new DataView(d.buffer);
	f(d, dv);
	const rest = new Uint8Array(d.length - 8);
	rest.set(d.subarray(0, 56), 0);
	rest.set(d.subarray(64), 56);
	dv.setBigUint64(56, BigInt(`0x${xxh3Hex(rest)}`), true);
	return d;
}

// terrain-client decode --heights of bytes b: { quanta } or { error } (its message).
function referenceDecode(b, name) {
	const f = `${WORK}/damaged-${name}.bin`;
	writeFileSync(f, b);
	const r = spawnSync(CLIENT, ['decode', '--heights', f], { encoding: 'utf8' });
	if (r.status !== 0) return { error: r.stderr.trim() };
	const q = Number(refHeader(name).quantum_m);
	return { quanta: r.stdout.trim().split(/\s+/).map((m) => Math.round(Number(m) / q)) };
}

test('damaged version-7 and 8 streams: refused as terrain-client refuses them, never read otherwise', { skip: !CLIENT && 'no CLIENT' }, () => {
	let refused = 0, cases = 0;
	for (const [name] of TILES) {
		const good = bytes(name), h = decodeTile(good).header;
		if (!h.tans) continue;
		const end = 68 + h.codedLen - 1;   // the stream's last byte, its end mark in it
		// the last byte 0 (no end mark), an end mark one bit higher or lower
		const mark = 31 - Math.clz32(good[end]);
		const muts = [(b) => { b[end] = 0; },
			(b) => { if (mark < 7) b[end] |= 2 << mark; else b[end] ^= 1; },
			(b) => { b[end] = (b[end] & ((1 << mark) - 1)) | (mark ? 1 << (mark - 1) : 0); }];
		// single bits flipped all over the coded bytes (tables, stream, states)
		for (let k = 0; k < 24; k++) {
			const at = 68 + Math.floor((h.codedLen - 1) * k / 23), bit = (k * 5) % 8;
			muts.push((b) => { b[at] ^= 1 << bit; });
		}
		for (const [k, f] of muts.entries()) {
			const d = damaged(good, f), ref = referenceDecode(d, name);
			cases++;
			let js;
			try { js = { quanta: Array.from(decodeTile(d).quanta) }; } catch (e) { js = { code: e.code, message: e.message }; }
			if (ref.error) {
				refused++;
				assert.match(ref.error, /corrupt data/, `${name} case ${k}: terrain-client says ${ref.error}`);
				assert.equal(js.code, 'ERR_CORRUPT', `${name} case ${k}: terrain-client refuses it (${ref.error}), JS ${js.code ?? 'decodes it'}`);
			} else {
				assert.ok(js.quanta, `${name} case ${k}: terrain-client decodes it, JS says ${js.message}`);
				assert.deepEqual(js.quanta, ref.quanta, `${name} case ${k}: other heights than terrain-client's`);
			}
			if (k === 0) assert.equal(js.code, 'ERR_CORRUPT', `${name}: a last byte of 0`);
		}
	}
	assert.ok(cases >= 60 && refused >= cases / 2, `${refused} of ${cases} damaged tiles refused`);
	// and without the checksum, the JavaScript decoder alone
	const [name] = TILES.find(([n]) => decodeTile(bytes(n)).header.version === 7);
	const good = bytes(name), end = 68 + decodeTile(good).header.codedLen - 1;
	const mut = (f) => { const b = good.slice(); f(b); return b; };
	assert.throws(() => decodeTile(mut((b) => { b[end] = 0; }), { verify: false }), code('ERR_CORRUPT'));
	assert.throws(() => decodeTile(mut((b) => { b[end] ^= 0x80 >> Math.clz32(b[end]) - 24; }), { verify: false }), code('ERR_CORRUPT'));
});

test('bad bundles are refused', async () => {
	const res = await fetch(`${BASE}${new URL(bundleUrl(BASE, { seed: 42, lod: 7, cx0: 0, cz0: 0, cx1: 1, cz1: 0 })).pathname}` +
		new URL(bundleUrl(BASE, { seed: 42, lod: 7, cx0: 0, cz0: 0, cx1: 1, cz1: 0 })).search);
	const good = new Uint8Array(await res.arrayBuffer());
	assert.equal(decodeBundle(good).length, 2);
	const mut = (f) => { const b = good.slice(); f(new DataView(b.buffer)); return b; };
	assert.throws(() => decodeBundle(good.subarray(0, 8)), code('ERR_TRUNC'));
	assert.throws(() => decodeBundle(good.subarray(0, 40)), code('ERR_TRUNC'));
	assert.throws(() => decodeBundle(good.subarray(0, good.length - 1)), code('ERR_TRUNC'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setUint8(3, 0x58))), code('ERR_MAGIC'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setUint16(4, 2, true))), code('ERR_VERSION'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setUint32(8, 0, true))), code('ERR_CORRUPT'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setUint32(8, 5000, true))), code('ERR_TOOBIG'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setUint32(24, 20, true))), code('ERR_CORRUPT'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setInt32(16, 9, true))), code('ERR_MISMATCH'));
	assert.throws(() => decodeBundle(mut((dv) => dv.setUint8(dv.getUint32(24, true) + 70, dv.getUint8(dv.getUint32(24, true) + 70) ^ 1))),
		code('ERR_CHECKSUM'));
});

test('fetchTile refuses what was not asked for, and reports HTTP errors', async () => {
	const other = await fetch(`${BASE}/v1/worlds/42/chunks/8/5/5`).then((r) => r.arrayBuffer());
	const liar = async () => new Response(other, { status: 200 });
	await assert.rejects(fetchTile(BASE, { seed: 42, lod: 8, cx: 5, cz: 6 }, { fetch: liar }), code('ERR_MISMATCH'));
	await assert.rejects(fetchTile(BASE, { seed: 43, lod: 8, cx: 5, cz: 5 }, { fetch: liar }), code('ERR_MISMATCH'));
	await assert.rejects(fetchTile(BASE, { seed: 42, lod: 7, cx: 5, cz: 5 }, { fetch: liar }), code('ERR_MISMATCH'));
	await assert.doesNotReject(fetchTile(BASE, { seed: 42, lod: 8, cx: 5, cz: 5 }, { fetch: liar }));
	await assert.rejects(fetchTile(BASE, { seed: 42, gen: 'nope', lod: 0, cx: 0, cz: 0 }),
		(e) => e.code === 'HTTP_404' && e.status === 404 && /unknown generator/.test(e.message));
	await assert.rejects(fetchTile(BASE, { seed: 42, lod: 99, cx: 0, cz: 0 }), (e) => e.code === 'HTTP_400');
	await assert.rejects(fetchBundle(BASE, { seed: 42, lod: 8, cx0: 0, cz0: 0, cx1: 1, cz1: 0 },
		{ fetch: async () => new Response(other, { status: 200 }) }), code('ERR_MAGIC'));
	assert.equal(tileUrl('', { seed: 'a b', lod: 1, cx: -2, cz: 3, layers: 'height,material' }),
		'/v1/worlds/a%20b/chunks/1/-2/3?gen=default&layers=height,material');
});

test('XXH3-64 equals libxxhash for lengths 0..2100', { skip: !existsSync(`${WORK}/xxh3.txt`) && 'no xxh3.txt' }, () => {
	for (const line of readFileSync(`${WORK}/xxh3.txt`, 'utf8').trim().split('\n')) {
		const [n, hex] = line.split(' ');
		const b = new Uint8Array(Number(n));
		for (let k = 0; k < b.length; k++) b[k] = (k * 131 + Number(n) * 7 + 1) & 0xff;
		if (xxh3Hex(b) !== hex) assert.fail(`length ${n}: ${xxh3Hex(b)}, libxxhash ${hex}`);
	}
});
