// local.test.mjs - the JavaScript module's local mode (openLocal) against
// the live server that tests/library/wasm.sh starts (BASE), with terrain.wasm
// (WASM): in a world with edits (world "jslocal", posted here), the tiles
// and bundles of local mode equal the server's (heights, materials,
// edit_seq), most made here and the edited ones fetched; and the
// refusals: another fingerprint, other golden tiles, none, a tile whose
// edit_seq is not what GET /hashes says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as T from '../../../clients/js/terrain.js';

const { BASE, WASM } = process.env;
const mismatch = (e) => e instanceof T.TileError && e.code === 'ERR_MISMATCH';

test('local mode: the same tiles as the server, the unedited ones made here', async () => {
	assert.ok(await T.loadWasm(new URL(`file://${WASM}`)));
	const res = await fetch(`${BASE}/v1/worlds/jslocal/edits`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ edits: [{ op: 'raise', x: 512, z: 512, radius: 20, strength: 9 },
			{ op: 'flatten', x: -100, z: 300, radius: 90, strength: 0.7, height: 5 }] }) });
	assert.equal(res.status, 200);
	const local = await T.openLocal(BASE, { seed: 'jslocal' });
	for (const [lod, layers] of [[2, undefined], [3, 'height,material'], [0, 'height,material']]) {
		const rect = { lod, layers, cx0: -4, cz0: -3, cx1: 3, cz1: 4 };
		const mine = await local.fetchBundle(rect), theirs = await T.fetchBundle(BASE, { seed: 'jslocal', ...rect });
		assert.equal(mine.size, theirs.size);
		for (const [key, t] of theirs) {
			const m = mine.get(key);
			assert.deepEqual(m.quanta, t.quanta, `${lod}/${key} heights`);
			assert.deepEqual(m.materials, t.materials, `${lod}/${key} materials`);
			assert.equal(m.header.editSeq, t.header.editSeq, `${lod}/${key} edit_seq`);
			assert.equal(m.header.checksum, t.header.checksum, `${lod}/${key}: the same tile`);
		}
	}
	assert.ok(local.stats.generated > 2 * local.stats.fetched && local.stats.fetched >= 3, JSON.stringify(local.stats));
	assert.ok(local.stats.hashes <= 3, `GET /hashes kept between calls: ${local.stats.hashes}`);
	const one = await local.fetchTile({ lod: 0, cx: 2, cz: 2 }), srv = await T.fetchTile(BASE, { seed: 'jslocal', lod: 0, cx: 2, cz: 2 });
	assert.equal(one.header.checksum, srv.header.checksum);
	assert.equal(one.header.editSeq, 1);
	const far = await local.fetchTile({ lod: 1, cx: 40, cz: -9 });
	assert.ok(far.local, 'an unedited chunk is made here');
	assert.equal(far.header.checksum, (await T.fetchTile(BASE, { seed: 'jslocal', lod: 1, cx: 40, cz: -9 })).header.checksum);
});

// a fetch that changes the world info (or the hashes) on the way
const lying = (change) => async (url, init) => {
	const res = await fetch(url, init);
	const u = new URL(url);
	if (/^\/v1\/worlds\/[^/]+$/.test(u.pathname)) {
		const info = await res.json();
		change.info?.(info);
		return new Response(JSON.stringify(info), { status: 200 });
	}
	if (u.pathname.endsWith('/hashes') && change.hashes) {
		const h = await res.json();
		change.hashes(h);
		return new Response(JSON.stringify(h), { status: 200 });
	}
	return res;
};

test('local mode refuses a world it cannot vouch for', async () => {
	const flip = (hex) => (BigInt(`0x${hex}`) ^ 1n).toString(16).padStart(16, '0');
	await assert.rejects(T.openLocal(BASE, { seed: 'jslocal' }, { fetch: lying({ info: (i) => { i.fingerprint = flip(i.fingerprint); } }) }),
		(e) => mismatch(e) && /fingerprint/.test(e.message));
	await assert.rejects(T.openLocal(BASE, { seed: 'jslocal' }, { fetch: lying({ info: (i) => { i.selfcheck = flip(i.selfcheck); } }) }),
		(e) => mismatch(e) && /other golden tiles/.test(e.message));
	await assert.rejects(T.openLocal(BASE, { seed: 'jslocal' }, { fetch: lying({ info: (i) => { delete i.selfcheck; } }) }),
		(e) => mismatch(e) && /selfcheck/.test(e.message));
	const liar = await T.openLocal(BASE, { seed: 'jslocal' }, { fetch: lying({ hashes: (h) => {
		for (const c of h.chunks) c.version += 1;
	} }) });
	await assert.rejects(liar.fetchTile({ lod: 0, cx: 2, cz: 2 }), (e) => mismatch(e) && /GET \/hashes says version 2/.test(e.message));
});
