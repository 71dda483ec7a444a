// moderation.test.mjs - who edited here, and a moderator's revert and undo,
// in the map viewer in headless Chromium (run by tests/browser/viewer_moderation.sh,
// which starts the servers and mints the tokens). Environment:
//   BASE        http://127.0.0.1:PORT of the server under test
//   REF         another server (same token secret, an empty log of its own)
//   ALICE, BOB  players' tokens; MIA a moderator's
//   SCREENSHOT  where to save the PNG
// Prints "ok: ..." or "FAIL: ..." per check and exits 1 on any failure.
import { chromium } from 'playwright-core';
import { fetchTile, postEdits } from '../../clients/js/terrain.js';

const env = process.env;
const { BASE, REF, ALICE, BOB, MIA } = env;
let failed = 0;
const ok = (m) => console.log(`ok: ${m}`);
const fail = (m) => { console.log(`FAIL: ${m}`); failed++; };
const check = (cond, m, detail = '') => (cond ? ok(m) : fail(detail ? `${m} (${detail})` : m));
const SCALE = Math.max(1, Math.floor(Number(env.TEST_TIMEOUT_SCALE)) || 1), STEP = 120000 * SCALE;

// The view: 1 m per pixel around the point P of chunk (0, 0); both players'
// brushes cover P. Alice's second edit, at FAR, lies outside the view.
const P = { x: 128, z: 128 }, FAR = { x: 3000, z: 3000 };
const VIEW = { x: 128, z: 128, zoom: 1 };
const W = { seed: 42, gen: 'default' };

// The heights (metres) of tile LOD 0 (cx, cz) of a server, fetched afresh.
const heights = async (base, cx = 0, cz = 0) => {
	const t = await fetchTile(base, { ...W, lod: 0, cx, cz }, { init: { cache: 'no-store' } });
	return { h: Array.from(t.heights), seq: t.header.editSeq };
};
const same = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
const differs = (a, b) => a.reduce((n, v, i) => n + (v !== b[i]), 0);

const browser = await chromium.launch({
	executablePath: '/usr/bin/chromium',
	timeout: STEP,
	args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
		'--disable-component-update', '--disable-sync'],
});
let exitCode = 1;
try {
	const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
	page.setDefaultTimeout(STEP);
	const errors = [], requests = [];
	page.on('pageerror', (e) => errors.push(e.message));
	// the 401 and 403 answers asked for below show in the console as failed loads
	page.on('console', (m) => { if (m.type() === 'error' && !/status of 40[13]/.test(m.text())) errors.push(m.text()); });
	page.on('request', (r) => { if (r.url().includes('/reverts')) requests.push({ url: r.url(), headers: r.headers(), body: r.postData() }); });

	const H0 = await heights(BASE);
	await page.goto(`${BASE}/#seed=42&gen=default&x=${VIEW.x}&z=${VIEW.z}&zoom=${VIEW.zoom}`);
	await page.evaluate(() => window.terrainViewer.ready);
	const st0 = await page.evaluate(() => window.terrainViewer.state);
	check(st0.lod === 0, 'the page shows LOD 0 at 1 m per pixel', `LOD ${st0.lod}`);

	// ---- two players edit through the brush, each with their token ----
	const brush = async (token, op, at, radius, strength) => {
		const prev = await page.evaluate(() => window.terrainViewer.lastEdit?.last_seq ?? 0);
		await page.fill('#token', token);
		await page.click(`#ops button[data-op="${op}"]`);
		await page.fill('#radius', String(radius));
		await page.fill('#strength', String(strength));
		const pt = await page.evaluate((p) => window.terrainViewer.clientPoint(p.x, p.z), at);
		await page.mouse.click(pt.x, pt.y);
		return page.waitForFunction((s) => {
			const e = window.terrainViewer.lastEdit;
			return e && e.last_seq > s && e;
		}, prev).then((h) => h.jsonValue()).catch(async () => ({ error: await page.textContent('#edit-status') }));
	};
	await page.click('#brush-on');
	const a1 = await brush(ALICE, 'raise', P, 60, 40);
	const b1 = await brush(BOB, 'lower', { x: P.x + 20, z: P.z - 10 }, 50, 15);
	check(a1.author === 'alice' && b1.author === 'bob', 'the brush posts with each player\'s token; the answers name the authors',
		`${JSON.stringify(a1)} ${JSON.stringify(b1)}`);
	const a2 = await postEdits(BASE, W, [{ op: 'raise', x: FAR.x, z: FAR.z, radius: 30, strength: 10 }], { token: ALICE });
	check(a2.author === 'alice', 'alice edits outside the view too', JSON.stringify(a2));
	await page.click('#brush-on');   // editing off: a click now looks up
	const H1 = await heights(BASE);
	check(differs(H1.h, H0.h) > 100, 'the edits changed chunk (0, 0)', `${differs(H1.h, H0.h)} samples`);

	// ---- who edited here ----
	const pt = await page.evaluate((p) => window.terrainViewer.clientPoint(p.x, p.z), P);
	// a new lookup (id), or a longer list (paging), once answered
	const lookup = async (click) => {
		const prev = await page.evaluate(() => window.terrainViewer.lookup);
		await click();
		return page.waitForFunction((p) => {
			const l = window.terrainViewer.lookup;
			return l && !l.loading && (!p || l.id !== p.id || l.entries.length !== p.entries.length) && l;
		}, prev).then((h) => h.jsonValue());
	};
	const look = await lookup(() => page.mouse.click(pt.x, pt.y));
	const items = await page.$$eval('#lookup-list li', (lis) => lis.map((li) => li.textContent));
	console.log(`  lookup at ${look.x}, ${look.z}:\n    ${items.join('\n    ')}`);
	check(look.entries.map((e) => e.author).join() === 'bob,alice' && look.entries[0].seq > look.entries[1].seq,
		'a click lists the edits covering the point, newest first: bob, alice', JSON.stringify(look.entries));
	check(items.length === 2 && /^#\d+ bob · .*\d{2}:\d{2}:\d{2}.* · lower r 50 m$/.test(items[0]) && /alice .* raise r 60 m$/.test(items[1]),
		'each entry shows seq, author, a readable time and the op', JSON.stringify(items));
	// with editing on, Alt+click looks up instead of editing
	await page.click('#brush-on');
	const editsBefore = await page.evaluate(() => window.terrainViewer.state.editSeq);
	const alt = await lookup(async () => {
		await page.keyboard.down('Alt');
		await page.mouse.click(pt.x + 3, pt.y);
		await page.keyboard.up('Alt');
	});
	await page.click('#brush-on');
	check(alt.entries.length === 2 && (await page.evaluate(() => window.terrainViewer.state.editSeq)) === editsBefore,
		'with editing on, Alt+click looks up and edits nothing', JSON.stringify(alt));
	// paging: the lookup asks for more with before= when the answer says next
	const byPoint = (u) => u.pathname.endsWith('/v1/worlds/42/edits') && u.searchParams.has('x');
	await page.route(byPoint, async (route) => {
		const u = new URL(route.request().url());
		if (u.searchParams.get('x') && !u.searchParams.get('limit')) {
			u.searchParams.set('limit', '1');
			return route.continue({ url: u.toString() });
		}
		return route.continue();
	});
	const one = await lookup(() => page.mouse.click(pt.x, pt.y));
	const moreShown = await page.isVisible('#lookup-more');
	const both = await lookup(() => page.click('#lookup-more'));
	await page.unroute(byPoint);
	check(one.entries.length === 1 && one.next > 0 && moreShown && both.entries.map((e) => e.author).join() === 'bob,alice' &&
		!(await page.isVisible('#lookup-more')), 'a cut page offers "Older edits", which asks with before=next',
		`${JSON.stringify(one)} / ${JSON.stringify(both)}`);

	// ---- the moderator panel: the token is kept in sessionStorage, not in the URL ----
	const area = await page.evaluate(() => window.terrainViewer.viewArea());
	check(area[0] < P.x && P.x < area[2] && area[1] < P.z && P.z < area[3] && area[2] < FAR.x && area[3] < FAR.z,
		'the view\'s area holds P and not FAR', JSON.stringify(area));
	const modAnswer = async (click) => {
		const before = await page.evaluate(() => window.terrainViewer.lastModeration);
		await click();
		return page.waitForFunction((b) => {
			const m = window.terrainViewer.lastModeration;
			return m && JSON.stringify(m) !== b && m;
		}, JSON.stringify(before)).then((h) => h.jsonValue());
	};
	await page.click('#lookup-list li:nth-child(2) button.who');   // alice, from the list
	check(await page.inputValue('#mod-author') === 'alice', 'an author picked in the list fills the Author field');

	await page.fill('#mod-token', 'not-a-token');
	const r401 = await modAnswer(() => page.click('#revert'));
	const s401 = await page.textContent('#mod-status');
	check(r401.status === 401 && /401/.test(s401) && s401.includes(r401.detail) && /wrong bearer token|malformed/.test(s401),
		'a bad token: the panel shows the 401 and the server\'s detail', s401);
	await page.fill('#mod-token', ALICE);
	const r403 = await modAnswer(() => page.click('#revert'));
	const s403 = await page.textContent('#mod-status');
	console.log(`  a player's revert: ${s403}`);
	check(r403.status === 403 && s403.includes('this needs the role moderator; alice is a player'),
		'a player\'s token: the panel shows the 403 and the server\'s detail', s403);
	const afterRefused = await heights(BASE);
	check(same(afterRefused.h, H1.h), 'the refused reverts changed nothing');

	await page.fill('#mod-token', MIA);
	const rev = await modAnswer(() => page.click('#revert'));
	const sRev = await page.textContent('#mod-status');
	console.log(`  the moderator's revert: ${sRev}`);
	check(!rev.error && rev.revert === true && rev.count === 1 && rev.author === 'mia',
		'the moderator reverts alice\'s edits in view: count 1 (her edit outside the view stays)', JSON.stringify(rev));
	check(JSON.stringify(rev.chunks) === '[[0,0]]', 'the answer names chunk (0, 0) only', JSON.stringify(rev.chunks));
	check(/Revert \d+: 1 edit of alice reverted, 1 chunk changed/.test(sRev), 'the panel shows the count and the chunks', sRev);
	const req = requests.at(-1), body = JSON.parse(req.body);
	check(req.headers.authorization === `Bearer ${MIA}` && req.headers['content-type'] === 'application/json' &&
		/^"[0-9a-f]{32}"$/.test(req.headers['idempotency-key'] ?? ''),
		'the revert is sent with Authorization: Bearer, Content-Type application/json and an Idempotency-Key',
		JSON.stringify(req.headers));
	check(body.author === 'alice' && JSON.stringify(body.area) === JSON.stringify(area) && !('since_time' in body),
		'its filter: the author and the view\'s area', req.body);
	const url = page.url(), stored = await page.evaluate(() => sessionStorage.getItem('terrain-mod-token'));
	check(!url.includes(MIA) && !requests.some((r) => r.url.includes(MIA)) && stored === MIA,
		'the token is in sessionStorage and in no URL', url);

	// the heights: those of a log without alice's edits (a server that had only bob's)
	const bobEdit = look.entries[0];
	const { seq: _s, author: _a, time: _t, reverted: _r, ...bobOnly } = bobEdit;
	await postEdits(REF, W, [bobOnly], { token: BOB });
	const HR = await heights(REF), H2 = await heights(BASE);
	check(same(H2.h, HR.h) && !same(H2.h, H1.h), 'after the revert, chunk (0, 0) has exactly the heights of a log with bob\'s edit alone',
		`${differs(H2.h, HR.h)} samples differ`);
	check(H2.seq === rev.first_seq, 'the tile\'s edit version is the revert\'s', `${H2.seq} vs ${rev.first_seq}`);
	const farT = await heights(BASE, Math.floor(FAR.x / 256), Math.floor(FAR.z / 256));
	check(farT.seq === a2.last_seq, 'alice\'s edit outside the view still counts', `version ${farT.seq}`);
	// the view refreshes the chunk (as after an edit: the answer's chunks)
	const refreshed = await page.waitForFunction((s) => {
		const t = window.terrainViewer.tile(0, 0, 0);
		return t && t.fresh && t.editSeq >= s && t;
	}, rev.first_seq).then((h) => h.jsonValue()).catch(() => null);
	const shown = await page.evaluate((p) => window.terrainViewer.heightAt(p.x, p.z), P);
	const hP = HR.h[P.z * 257 + P.x];
	check(refreshed && Math.abs(shown.h - hP) < 0.006, 'the page redraws chunk (0, 0) with the reverted heights',
		`${JSON.stringify(refreshed)} shows ${shown?.h}, server ${hP}`);
	const relook = await page.waitForFunction(() => {
		const l = window.terrainViewer.lookup;
		return l && !l.loading && l.entries.find((e) => e.author === 'alice')?.reverted && l;
	}).then((h) => h.jsonValue()).catch(() => null);
	const items2 = await page.$$eval('#lookup-list li', (lis) => lis.map((li) => li.textContent));
	check(relook && items2.some((t) => /alice.*reverted$/.test(t)) && !items2.some((t) => /bob.*reverted/.test(t)),
		'the lookup list now marks alice\'s edit "reverted"', JSON.stringify(items2));

	// ---- undo ----
	check(await page.isVisible('#undo') && (await page.textContent('#undo')).includes(String(rev.first_seq)), 'an Undo button names the revert');
	const und = await modAnswer(() => page.click('#undo'));
	const sUnd = await page.textContent('#mod-status');
	console.log(`  undo: ${sUnd}`);
	check(!und.error && und.undo === rev.first_seq && JSON.parse(requests.at(-1).body).undo === rev.first_seq,
		'Undo posts {"undo": SEQ}', JSON.stringify(und));
	const H3 = await heights(BASE);
	check(same(H3.h, H1.h), 'after the undo, chunk (0, 0) has exactly the heights of before the revert', `${differs(H3.h, H1.h)} samples differ`);
	const back = await page.waitForFunction((s) => {
		const t = window.terrainViewer.tile(0, 0, 0);
		return t && t.fresh && t.editSeq >= s && t;
	}, und.first_seq).then((h) => h.jsonValue()).catch(() => null);
	const shown2 = await page.evaluate((p) => window.terrainViewer.heightAt(p.x, p.z), P);
	check(back && Math.abs(shown2.h - H1.h[P.z * 257 + P.x]) < 0.006 && !(await page.isVisible('#undo')),
		'the page redraws the restored heights; the Undo button is gone', `${JSON.stringify(back)} ${shown2?.h}`);

	check(errors.length === 0, 'no script errors on the page', errors.slice(0, 5).join(' | '));
	await page.screenshot({ path: env.SCREENSHOT });
	console.log(`  screenshot: ${env.SCREENSHOT}`);
	exitCode = failed ? 1 : 0;
} catch (e) {
	fail(`${e.stack || e.message}`);
	exitCode = 1;
} finally {
	await browser.close();
}
console.log(failed ? `${failed} failed` : 'all passed');
process.exit(exitCode);
