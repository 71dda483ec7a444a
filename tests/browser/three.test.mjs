// three.test.mjs - clients/web/three.html in headless Chromium (run by
// tests/js_client.sh): the page imports the JavaScript client module from
// the live server (/assets/terrain.js) and three.js from npm, turns the
// ring of 5 x 5 tiles around a chunk into one mesh and draws it. Checks
// that it drew the mesh it should (25 tiles, the stitched grid's size, its
// heights within the server's) and that the screenshot is not blank.
// Environment: BASE (the server), SHOTS (where to save three.png).
import { launch, servePages, routeLibraries, screenshotStats, watchErrors, check, fail, failures, within } from './pages.mjs';

const { BASE, SHOTS } = process.env;
const browser = await launch();
const pages = await servePages();
let exitCode = 1;
try {
	const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
	const refused = await routeLibraries(page);
	const errors = watchErrors(page);
	const t0 = Date.now();
	await page.goto(`${pages.url}/three.html?server=${BASE}&seed=42&gen=default&x=300&z=-100&lod=3&radius=2`);
	await within(page.waitForFunction(() => window.terrainRing), 60000, 'the three.js page to start');
	const r = await within(page.evaluate(() => window.terrainRing.ready), 90000, 'the ring to be drawn');
	console.log(`  drawn in ${Date.now() - t0} ms: ${r.tiles} tiles, ${r.vertices} vertices, ${r.triangles} triangles, ` +
		`heights ${r.minHeight.toFixed(2)}..${r.maxHeight.toFixed(2)} m, ${r.renderer}`);
	const versions = await page.evaluate(async () => (await import('three')).REVISION);
	console.log(`  three.js r${versions}`);
	// 5 x 5 tiles of 33 samples (LOD 3), edges shared: 161 x 161
	check(r.tiles === 25 && r.width === 161 && r.vertices === 161 * 161 && r.triangles === 2 * 160 * 160 && r.spacing === 8,
		'the ring of 5 x 5 LOD-3 tiles became one 161 x 161 mesh', JSON.stringify(r));
	const info = await (await fetch(`${BASE}/v1/worlds/42?gen=default`)).json();
	check(r.minHeight >= info.height.min && r.maxHeight <= info.height.max && r.maxHeight - r.minHeight > 20,
		'its heights lie within the generator\'s range and have relief', `${r.minHeight}..${r.maxHeight}`);
	const px = await screenshotStats(page, `${SHOTS}/three.png`);
	console.log(`  screenshot: ${px.colours} colours, the most common on ${(100 * px.topShare).toFixed(1)}% of the pixels`);
	check(px.colours > 2000 && px.topShare < 0.7, 'the three.js screenshot is not blank', JSON.stringify(px));
	check(!errors.length, 'no script errors', errors.join('; '));
	check(!refused.length, 'no request left 127.0.0.1 (three came from node_modules)', refused.join(', '));
	exitCode = failures() ? 1 : 0;
} catch (e) {
	fail(`the browser test stopped: ${e.stack || e}`);
} finally {
	pages.close();
	await browser.close();
}
console.log(exitCode ? `${failures()} failed` : 'all passed');
process.exit(exitCode);
