// edits.test.mjs - postEdits of the JavaScript client module
// (clients/js/terrain.js) under Node's own test runner: retries with one
// Idempotency-Key per batch, the bound, what is not retried, timeouts,
// Retry-After, and the message when the outcome is unknown (issue 35);
// postReverts and lookupEdits (issue 36).
// Most tests script the answers through the fetch option; the last runs
// against tests/lib/fake_edits.py over real HTTP (a dropped connection) and is
// skipped without python3. Needs no server: run by tests/client/client_retry.sh
// and by tests/client/js_client.sh (node --test tests/client/js/), or alone:
//   node --test tests/client/js/edits.test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { postEdits, postReverts, revertsUrl, lookupEdits, newEditKey, editsUrl, TileError } from '../../../clients/js/terrain.js';

const EDITS = [{ op: 'raise', x: 1, z: 2, radius: 5, strength: 1 }];
const ANSWER = { first_seq: 7, last_seq: 7, world_hash: '00000000000000ab', chunks: [[0, 0]] };
const KEY_RE = /^"[0-9a-f]{32}"$/;

// A fetch that answers the script's steps in turn (the last repeats): a
// status (with Retry-After: 0 on 503, 504, 409, 429), 'drop' (a TypeError,
// as a lost connection gives), 'hang' (no answer until aborted), or
// { status, headers, body }. calls: [url, init] of each request.
function scripted(...steps) {
	const calls = [];
	const f = (url, init) => {
		const s = steps[Math.min(calls.length, steps.length - 1)];
		calls.push([url, init]);
		if (s === 'drop') return Promise.reject(new TypeError('fetch failed', { cause: new Error('other side closed') }));
		if (s === 'hang') return new Promise((_, reject) => init.signal.addEventListener('abort', () => reject(init.signal.reason)));
		const { status, headers = {}, body } = typeof s === 'object' ? s : { status: s };
		const h = [503, 504, 409, 429].includes(status) ? { 'Retry-After': '0', ...headers } : headers;
		const b = body ?? (status === 200 ? ANSWER : { error: status === 504 ? 'outcome_unknown' : 'nope', detail: `scripted ${status}` });
		return Promise.resolve(new Response(JSON.stringify(b), { status, headers: { 'Content-Type': 'application/json', ...h } }));
	};
	const keys = () => calls.map(([, init]) => init.headers['Idempotency-Key']);
	return { f, calls, keys };
}
const rejects = (p, check) => assert.rejects(p, (e) => { check(e); return true; });

test('503, 504 and a lost connection are retried with one key until applied', async () => {
	const s = scripted(503, 504, 'drop', 200), retries = [];
	const a = await postEdits('http://h', { seed: 42, gen: 'alpine' }, EDITS, { fetch: s.f, onRetry: (r) => retries.push(r) });
	assert.equal(a.attempts, 4);
	assert.equal(a.replay, false);
	assert.equal(a.last_seq, 7);
	assert.equal(s.calls.length, 4);
	assert.equal(new Set(s.keys()).size, 1, 'one key for every attempt');
	assert.match(s.keys()[0], KEY_RE);
	assert.equal(`"${a.key}"`, s.keys()[0]);
	for (const [url, init] of s.calls) {
		assert.equal(url, 'http://h/v1/worlds/42/edits?gen=alpine');
		assert.equal(init.method, 'POST');
		assert.deepEqual(JSON.parse(init.body), { edits: EDITS });
	}
	assert.deepEqual(retries.map((r) => [r.attempt, r.status, r.unknown]), [[2, 503, false], [3, 504, true], [4, 0, true]]);
});

test('two batches carry different keys', async () => {
	const s = scripted(200);
	await postEdits('', { seed: 1 }, EDITS, { fetch: s.f });
	await postEdits('', { seed: 1 }, EDITS, { fetch: s.f });
	assert.equal(s.calls.length, 2);
	assert.notEqual(s.keys()[0], s.keys()[1]);
	assert.ok(s.keys().every((k) => KEY_RE.test(k)));
	assert.notEqual(newEditKey(), newEditKey());
});

test('it stops at the bound; an unknown outcome says so and names the key', async () => {
	const s = scripted(504);
	await rejects(postEdits('', { seed: 1 }, EDITS, { fetch: s.f, attempts: 3 }), (e) => {
		assert.ok(e instanceof TileError);
		assert.equal(e.code, 'HTTP_504');
		assert.equal(e.status, 504);
		assert.equal(e.attempts, 3);
		assert.equal(e.unknown, true);
		assert.equal(`"${e.key}"`, s.keys()[0]);
		assert.match(e.message, /gave up after 3 attempts; the last: HTTP 504: outcome_unknown/);
		assert.match(e.message, new RegExp(`outcome is unknown.*key ${e.key}`));
	});
	assert.equal(s.calls.length, 3);
});

test('503 every time: not applied, said so', async () => {
	const s = scripted(503);
	await rejects(postEdits('', { seed: 1 }, EDITS, { fetch: s.f, attempts: 2 }), (e) => {
		assert.equal(e.unknown, false);
		assert.equal(e.attempts, 2);
		assert.match(e.message, /the edits were not applied$/);
	});
	assert.equal(s.calls.length, 2);
});

for (const status of [422, 400, 401, 403])
	test(`${status} is not retried`, async () => {
		const s = scripted(status, 200);
		await rejects(postEdits('', { seed: 1 }, EDITS, { fetch: s.f }), (e) => {
			assert.equal(e.status, status);
			assert.equal(e.attempts, 1);
			assert.equal(e.unknown, false);
			assert.equal(e.body.detail, `scripted ${status}`);
		});
		assert.equal(s.calls.length, 1);
	});

test('a 422 after an unknown outcome stops, and the outcome stays unknown', async () => {
	const s = scripted('drop', 422);
	await rejects(postEdits('', { seed: 1 }, EDITS, { fetch: s.f }), (e) => {
		assert.equal(e.status, 422);
		assert.equal(e.attempts, 2);
		assert.equal(e.unknown, true);
	});
});

test('a timeout, 409 and 429 are retried; a replay is reported; a given key is sent', async () => {
	const s = scripted('hang', 409, 429, { status: 200, headers: { 'Idempotent-Replayed': 'true' }, body: { ...ANSWER, replay: true } });
	const a = await postEdits('', { seed: 1 }, EDITS, { fetch: s.f, timeoutMs: 50, key: 'my-key' });
	assert.equal(a.attempts, 4);
	assert.equal(a.replay, true);
	assert.deepEqual(s.keys(), Array(4).fill('"my-key"'));
});

test('Retry-After is waited; without it the backoff grows', async () => {
	const times = [], s = scripted({ status: 503, headers: { 'Retry-After': '1' } }, 502, 502, 200);
	const f = (url, init) => { times.push(performance.now()); return s.f(url, init); };
	await postEdits('', { seed: 1 }, EDITS, { fetch: f });
	assert.ok(times[1] - times[0] >= 990, `Retry-After: 1 waited ${times[1] - times[0]} ms`);
	assert.ok(times[2] - times[1] >= 49, `first backoff ${times[2] - times[1]} ms`);
	assert.ok(times[3] - times[2] >= 99, `second backoff ${times[3] - times[2]} ms`);
});

test('the caller\'s signal ends the retries', async () => {
	const ctrl = new AbortController(), s = scripted({ status: 503, headers: { 'Retry-After': '30' } });
	const p = postEdits('', { seed: 1 }, EDITS, { fetch: s.f, signal: ctrl.signal, onRetry: () => ctrl.abort(new Error('stop')) });
	await assert.rejects(p, /stop/);
	assert.equal(s.calls.length, 1);
});

test('editsUrl', () => {
	assert.equal(editsUrl('', { seed: 'my-world' }), '/v1/worlds/my-world/edits?gen=default');
});

test('postReverts: the filter as the body, a token, one key; an undo\'s own 409 is not retried', async () => {
	const s = scripted(503, { status: 200, body: { ...ANSWER, revert: true, count: 3 } });
	const r = await postReverts('http://h', { seed: 42 }, { author: 'bob', area: [0, 0, 512, 512] }, { fetch: s.f, token: 'T' });
	assert.equal(r.count, 3);
	assert.equal(r.attempts, 2);
	assert.equal(new Set(s.keys()).size, 1);
	for (const [url, init] of s.calls) {
		assert.equal(url, 'http://h/v1/worlds/42/reverts?gen=default');
		assert.equal(init.headers.Authorization, 'Bearer T');
		assert.equal(init.headers['Content-Type'], 'application/json');
		assert.deepEqual(JSON.parse(init.body), { author: 'bob', area: [0, 0, 512, 512] });
	}
	const u = scripted({ status: 409, body: { error: 'conflict', detail: 'undo: revert 3 is undone already' } });
	await rejects(postReverts('', { seed: 1 }, { undo: 3 }, { fetch: u.f }), (e) => {
		assert.equal(e.status, 409);
		assert.equal(e.attempts, 1);
		assert.match(e.message, /POST reverts: HTTP 409: conflict: undo: revert 3 is undone already$/);
	});
	// the key's 409 (in flight) is retried as for edits
	const k = scripted({ status: 409, body: { error: 'conflict', detail: 'idempotency-key: a request with this key is in flight' } }, 200);
	assert.equal((await postReverts('', { seed: 1 }, { undo: 3 }, { fetch: k.f })).attempts, 2);
	const p = scripted({ status: 403, body: { error: 'forbidden', detail: 'authorization: this needs the role moderator; alice is a player' } });
	await rejects(postReverts('', { seed: 1 }, { author: 'x' }, { fetch: p.f, token: 'A' }), (e) => {
		assert.equal(e.status, 403);
		assert.equal(e.body.detail, 'authorization: this needs the role moderator; alice is a player');
	});
	assert.equal(revertsUrl('', { seed: 'w', gen: 'alpine' }), '/v1/worlds/w/reverts?gen=alpine');
});

test('lookupEdits: the point, before and the error detail', async () => {
	const calls = [];
	const f = async (url) => {
		calls.push(url);
		return calls.length === 1 ? new Response(JSON.stringify({ seq: 9, edits: [{ seq: 4, author: 'bob' }], next: 4 })) :
			new Response(JSON.stringify({ error: 'bad_request', detail: 'x: not metres' }), { status: 400 });
	};
	const d = await lookupEdits('http://h', { seed: 42 }, 300.5, -2, { before: 7, fetch: f });
	assert.equal(d.next, 4);
	assert.equal(calls[0], 'http://h/v1/worlds/42/edits?gen=default&x=300.5&z=-2&before=7');
	await rejects(lookupEdits('', { seed: 42 }, 'a', 0, { fetch: f }), (e) => {
		assert.equal(e.status, 400);
		assert.match(e.message, /x: not metres/);
	});
});

test('over HTTP (tests/lib/fake_edits.py): 503, a dropped connection, 504, then a replay', async (t) => {
	if (spawnSync('python3', ['--version']).status !== 0) return t.skip('no python3');
	const dir = mkdtempSync(join(tmpdir(), 'edits-')), log = join(dir, 'keys');
	const fake = spawn('python3', [new URL('../../lib/fake_edits.py', import.meta.url).pathname, '503,drop,504,200r', log],
		{ stdio: ['ignore', 'pipe', 'inherit'] });
	try {
		const [line] = await once(fake.stdout, 'data');
		const base = `http://${String(line).match(/listening on (\S+)/)[1]}`;
		const a = await postEdits(base, { seed: 42 }, EDITS);
		assert.equal(a.attempts, 4);
		assert.equal(a.replay, true);
		const keys = readFileSync(log, 'utf8').trim().split('\n').map((l) => l.split(' ')[1]);
		assert.equal(keys.length, 4);
		assert.deepEqual(keys, Array(4).fill(`"${a.key}"`));
	} finally {
		fake.kill();
		rmSync(dir, { recursive: true, force: true });
	}
});
