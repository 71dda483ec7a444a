// pages.mjs - what the browser tests of the pages in clients/web share
// (tests/browser/maps.test.mjs, three.test.mjs): checks that print
// "ok: ..." / "FAIL: ...", headless Chromium with WebGL on SwiftShader, a
// static server for clients/web (with the libraries `make web` installs
// into clients/web/node_modules) on a loopback port, every request that
// would leave 127.0.0.0/8 refused and listed, as offline, and pixel
// statistics of a screenshot, decoded by the browser.
import { createServer } from 'node:http';
import { readFileSync, existsSync, statSync } from 'node:fs';
import { extname, join, normalize, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = dirname(fileURLToPath(import.meta.url));
export const PAGES = join(HERE, '..', '..', 'clients', 'web');

let failed = 0;
export const ok = (m) => console.log(`ok: ${m}`);
export const fail = (m) => { console.log(`FAIL: ${m}`); failed++; };
export const check = (cond, m, detail = '') => (cond ? ok(m) : fail(detail ? `${m} (${detail})` : m));
export const failures = () => failed;
// Bounds are generous (a busy machine makes everything many times slower;
// a bound is only for a page that hangs) and grow with TEST_TIMEOUT_SCALE
// (tests/lib/lib.sh), as every wait of within() and newPage()'s pages does.
export const SCALE = Math.max(1, Math.floor(Number(process.env.TEST_TIMEOUT_SCALE)) || 1);
export const within = (p, ms, what) => {
	ms *= SCALE;
	let timer;
	return Promise.race([p, new Promise((_, rej) => {
		timer = setTimeout(() => rej(new Error(`timeout after ${ms} ms: ${what}`)), ms);
	})]).finally(() => clearTimeout(timer));
};
// Playwright's own timeouts of a page's actions and waits (page.goto,
// waitForFunction, screenshot: 30 s by default) and of the launch.
const STEP_MS = 180000 * SCALE;

/** browser.newPage(options), its Playwright timeouts STEP_MS. */
export async function newPage(browser, options) {
	const page = await browser.newPage(options);
	page.setDefaultTimeout(STEP_MS);
	page.setDefaultNavigationTimeout(STEP_MS);
	return page;
}

// WebGL in headless Chromium without a GPU: ANGLE on SwiftShader (Chromium
// falls back to it by itself today, but asks for the flag to keep doing so).
// No host name resolves but localhost, as on a machine with no network
// (blockOutside() also refuses, and lists, what a page asks of the rest).
export const launch = () => chromium.launch({
	executablePath: '/usr/bin/chromium',
	timeout: STEP_MS,
	args: ['--no-sandbox', '--disable-gpu', '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
		'--disable-quic', '--no-first-run', '--disable-background-networking',
		'--disable-component-update', '--disable-sync', '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1'],
});

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
	'.css': 'text/css', '.png': 'image/png', '.json': 'application/json', '.map': 'application/json' };

/** Serve clients/web on 127.0.0.1: { url, close }. */
export function servePages() {
	const server = createServer((req, res) => {
		const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
		const file = join(PAGES, path);
		if (!file.startsWith(PAGES) || !existsSync(file) || !statSync(file).isFile()) {
			res.writeHead(404).end('not found');
			return;
		}
		res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream', 'Cache-Control': 'no-store' });
		res.end(readFileSync(file));
	});
	return new Promise((resolve) => server.listen(0, '127.0.0.1', () =>
		resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() })));
}

/** Whether url names this machine: 127.0.0.0/8, localhost or [::1]. */
const loopback = (url) => /^127\.\d+\.\d+\.\d+$/.test(url.hostname) || url.hostname === 'localhost' || url.hostname === '[::1]';

/**
 * Refuse every request of page that would leave the machine (anything but
 * 127.0.0.0/8, localhost, [::1], data: and blob: URLs), as on a machine
 * with no internet: the pages must work from the server and clients/web
 * alone. Returns the array the refused URLs are added to.
 */
export async function blockOutside(page) {
	const refused = [];
	await page.route('**/*', (route) => {
		const url = new URL(route.request().url());
		if (url.protocol === 'data:' || url.protocol === 'blob:' || loopback(url)) return route.continue();
		refused.push(url.href);
		return route.abort('internetdisconnected');
	});
	return refused;
}

/** Distinct colours of a screenshot of page (taken and saved at path, or
 * the PNG Buffer given), and the share of the most common one, decoded by
 * the browser. */
export async function screenshotStats(page, path) {
	const png = Buffer.isBuffer(path) ? path : await page.screenshot({ path });
	return page.evaluate(async (b64) => {
		const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
		const bmp = await createImageBitmap(blob), c = new OffscreenCanvas(bmp.width, bmp.height);
		const g = c.getContext('2d');
		g.drawImage(bmp, 0, 0);
		const d = g.getImageData(0, 0, c.width, c.height).data, count = new Map();
		for (let k = 0; k < d.length; k += 4) {
			const v = (d[k] << 16) | (d[k + 1] << 8) | d[k + 2];
			count.set(v, (count.get(v) || 0) + 1);
		}
		return { colours: count.size, topShare: Math.max(...count.values()) / (d.length / 4), width: c.width, height: c.height };
	}, png.toString('base64'));
}

/** Collect page errors and console errors (but those matching ignore). */
export function watchErrors(page, ignore = /$^/) {
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	page.on('console', (m) => { if (m.type() === 'error' && !ignore.test(m.text())) errors.push(m.text()); });
	return errors;
}
