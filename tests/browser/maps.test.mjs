// maps.test.mjs - the world in MapLibre GL JS and in Leaflet, both from npm,
// in headless Chromium against the live server (run by
// tests/browser/maps_browser.sh). The pages are clients/web/maplibre.html (a
// raster-dem source with hillshade and 3D terrain, from the TileJSON) and
// clients/web/leaflet.html (CRS.Simple over the same tiles). Checks: both
// draw, not blank; the elevations MapLibre reports (queryTerrainElevation)
// and the heights decoded (by the browser) from the Terrarium tiles Leaflet
// loaded equal `terrain-client decode --heights` of the binary tiles within
// 1/512 m; Leaflet's CRS puts world samples at the pixel centres of zoom
// 17; the page as it comes (3D terrain, zoom 14, pitched 60 degrees)
// reports its view loaded, and the test prints how long that took and how
// much of it was the server's (from its access log). Environment: BASE
// (the server), CLIENT (terrain-client), WORK (a scratch folder), SHOTS
// (where to save the screenshots), ACCESS_LOG (the server's access log).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { SCALE, launch, newPage, servePages, blockOutside, screenshotStats, watchErrors, check, ok, fail, failures, within } from './pages.mjs';

const { BASE, CLIENT, WORK, SHOTS, ACCESS_LOG } = process.env;
// the server's access log (--access-log), one JSON object a line
const accessLog = () => readFileSync(ACCESS_LOG, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
const HALF_STEP = 1 / 512 + 1e-7; // Terrarium's rounding, and float noise in MapLibre's sampling
const VIEW = { x: 384, z: -200 };   // a hilly place of seed 42, preset default
const VIEW3D = { x: 12000, z: 9000 }; // another, whose map tiles no view before asked for (cold)

// The server's heights of chunk (cx, cz) at lod: the binary tile fetched
// and decoded by terrain-client decode --heights, rows of z.
const refCache = new Map();
async function serverTile(lod, cx, cz) {
	const key = `${lod}/${cx}/${cz}`;
	if (!refCache.has(key)) {
		const r = await fetch(`${BASE}/v1/worlds/42/chunks/${key}?gen=default`);
		if (!r.ok) throw new Error(`GET tile ${key}: ${r.status}`);
		const file = `${WORK}/ref-${lod}_${cx}_${cz}.bin`;
		writeFileSync(file, Buffer.from(await r.arrayBuffer()));
		const h = execFileSync(CLIENT, ['decode', '--heights', file], { encoding: 'utf8' }).trim().split(/\s+/).map(Number);
		refCache.set(key, { side: Math.round(Math.sqrt(h.length)), h });
	}
	return refCache.get(key);
}
// The server's height at world sample (x, z) of the LOD-lod lattice.
async function serverHeight(lod, x, z) {
	const cx = Math.floor(x / 256), cz = Math.floor(z / 256), s = 2 ** lod;
	const t = await serverTile(lod, cx, cz);
	return t.h[((z - cz * 256) / s) * t.side + (x - cx * 256) / s];
}

// The elevations MapLibre reports at 49 points near the view's centre: world
// samples of the LOD-(17 - zd) lattice queried at the centres of their
// pixels of zoom zd ((2^(17 - zd) - 1) / 2 m east and south of the sample,
// docs/maps.md), so that MapLibre's bilinear sampling returns one pixel.
// zd: the DEM zoom expected, or null for any; true when, for it, all 49
// equal terrain-client decode --heights within 1/512 m.
async function elevationsMatch(page, zd) {
	let best = null;
	for (let z = 17; z >= 9; z--) {
		if (zd !== null && z !== zd) continue;
		// within the view: +-36 m by +-27 m at zoom 17, +-87 m by +-69 m beyond
		const s = 2 ** (17 - z), off = (s - 1) / 2, points = [], dx = z === 17 ? 12 : 29, dz = z === 17 ? 9 : 23;
		for (let j = -3; j <= 3; j++)
			for (let i = -3; i <= 3; i++) {
				const x = Math.round((VIEW.x + dx * i + (j & 3)) / s) * s, zz = Math.round((VIEW.z + dz * j - (i & 1)) / s) * s;
				points.push([x, zz]);
			}
		const elev = await page.evaluate(([pts, o]) => pts.map(([x, z]) => window.terrainMap.elevation(x + o, z + o)), [points, off]);
		let worst = 0, bad = null;
		const heights = new Set();
		for (let k = 0; k < points.length; k++) {
			const want = await serverHeight(17 - z, points[k][0], points[k][1]);
			const d = elev[k] === null ? Infinity : Math.abs(elev[k] - want);
			heights.add(Math.round(want));
			if (d > worst) { worst = d; bad = `(${points[k]}): MapLibre ${elev[k]}, server ${want}`; }
		}
		if (!best || worst < best.worst) best = { z, worst, bad, spread: heights.size };
	}
	console.log(`  49 points at DEM zoom ${best.z}: largest difference ${best.worst.toExponential(3)} m` +
		(best.worst > HALF_STEP ? ` at ${best.bad}` : '') + `, ${best.spread} distinct whole metres`);
	return best.worst <= HALF_STEP && best.spread > 10;
}

const browser = await launch();
const pages = await servePages();
let exitCode = 1;
try {
	// ---- MapLibre GL JS -------------------------------------------------------------
	{
		const page = await newPage(browser, { viewport: { width: 640, height: 480 } });
		const refused = await blockOutside(page);
		const errors = watchErrors(page);
		const mapRequests = [];
		page.on('response', (r) => { if (/\/maps\//.test(r.url())) mapRequests.push([r.status(), r.url()]); });
		const t0 = Date.now();
		await page.goto(`${pages.url}/maplibre.html?server=${BASE}&seed=42&gen=default&x=${VIEW.x}&z=${VIEW.z}&zoom=19.3&pitch=0&fade=0`);
		await within(page.waitForFunction(() => window.terrainMap), 60000, 'the MapLibre page to start');
		await within(page.evaluate(() => window.terrainMap.idle()), 120000, 'MapLibre to load its tiles');
		const info = await page.evaluate(() => ({ version: window.terrainMap.maplibregl.getVersion(), zooms: window.terrainMap.demZooms(),
			terrain: !!window.terrainMap.map.getTerrain(), errors: window.terrainMap.errors }));
		console.log(`  MapLibre GL JS ${info.version}: idle in ${Date.now() - t0} ms, DEM tiles at zoom ${info.zooms.join(', ')}`);
		check(info.terrain, 'MapLibre has 3D terrain from the raster-dem source');
		check(info.zooms.includes(17), 'MapLibre loaded Terrarium tiles at zoom 17 (1 m per pixel)', `zooms ${info.zooms}`);
		check(mapRequests.some(([s, u]) => s === 200 && /\/maps\/terrarium\/17\/\d+\/\d+\.png\?gen=default$/.test(u)) &&
			mapRequests.some(([s, u]) => s === 200 && /\/maps\/shaded\/\d+\/\d+\/\d+\.png/.test(u)),
		'MapLibre fetched the Terrarium and shaded tiles named by the TileJSON');
		// elevations at world samples around the centre, at the centres of
		// the pixels of the DEM zoom MapLibre draws with (the view's zoom
		// less 2 in MapLibre 6: so at 19.3, zoom 17, 1 m per pixel)
		check(await elevationsMatch(page, 17), 'MapLibre draws the terrain of the zoom 17 DEM at view zoom 19.3');
		await page.evaluate(() => window.terrainMap.map.jumpTo({ zoom: 16.3 }));
		await within(page.evaluate(() => window.terrainMap.idle()), 120000, 'MapLibre to load zoom 16.3');
		check(await elevationsMatch(page, null), 'and at view zoom 16.3, from a coarser DEM');
		const late = await page.evaluate(() => window.terrainMap.errors);
		check(!late.length && !errors.length, 'no MapLibre or script errors', [...late, ...errors].join('; '));
		check(!refused.length, 'no request left 127.0.0.0/8 (the libraries came from clients/web/node_modules)', refused.join(', '));
		await page.close();
	}

	// ---- MapLibre: the page as it comes (3D terrain at zoom 14, pitched 60 degrees) --------
	{
		const page = await newPage(browser, { viewport: { width: 800, height: 600 } });
		const refused = await blockOutside(page);
		const errors = watchErrors(page);
		const before = accessLog().length;
		await page.goto(`${pages.url}/maplibre.html?server=${BASE}&seed=42&gen=default&x=${VIEW3D.x}&z=${VIEW3D.z}`);
		await within(page.waitForFunction(() => window.terrainMap), 60000, 'the MapLibre page to start');
		await within(page.waitForFunction(() => window.terrainMap.timing.idle, null, { polling: 100, timeout: 480000 * SCALE }), 480000,
			'MapLibre to report the view loaded');
		const t = await page.evaluate(() => window.terrainMap.timing);
		const served = accessLog().slice(before).filter((l) => /\/maps\/[a-z]+\/\d+\//.test(l.path));
		const serverMs = served.reduce((a, l) => a + l.duration_ms, 0), slowest = Math.max(0, ...served.map((l) => l.duration_ms));
		console.log(`  MapLibre, zoom 14, pitch 60, cold tiles: style drawn (load) ${Math.round(t.load)} ms, view loaded (first idle, ` +
			`map.loaded() ${t.loaded}) ${Math.round(t.idle)} ms after the page's start; its ${served.length} map tiles took ` +
			`${Math.round(serverMs)} ms of server time in all (the slowest ${Math.round(slowest)} ms)`);
		check(t.loaded && t.idle >= t.load, 'MapLibre reports the zoom-14 3D view loaded (map.loaded() at its first idle)', JSON.stringify(t));
		const px = await screenshotStats(page, `${SHOTS}/maplibre.png`);
		console.log(`  3D view: ${px.colours} colours, the most common on ${(100 * px.topShare).toFixed(1)}% of the pixels`);
		check(px.colours > 2000 && px.topShare < 0.5, 'the MapLibre 3D screenshot is not blank', JSON.stringify(px));
		const late = await page.evaluate(() => window.terrainMap.errors);
		check(!late.length && !errors.length, 'no MapLibre or script errors in the 3D view', [...late, ...errors].join('; '));
		check(!refused.length, 'no request of the 3D view left 127.0.0.0/8', refused.join(', '));
		await page.close();
	}

	// ---- Leaflet ----------------------------------------------------------------------
	{
		const page = await newPage(browser, { viewport: { width: 800, height: 600 } });
		const refused = await blockOutside(page);
		const errors = watchErrors(page);
		const t0 = Date.now();
		await page.goto(`${pages.url}/leaflet.html?server=${BASE}&seed=42&gen=default&x=${VIEW.x}&z=${VIEW.z}&zoom=16&fade=0`);
		await within(page.waitForFunction(() => window.terrainMap), 60000, 'the Leaflet page to start');
		await within(page.evaluate(() => window.terrainMap.idle()), 60000, 'Leaflet to load the relief');
		const version = await page.evaluate(() => window.terrainMap.L.version);
		console.log(`  Leaflet ${version}: relief loaded in ${Date.now() - t0} ms`);
		const px = await screenshotStats(page, `${SHOTS}/leaflet.png`);
		console.log(`  relief: ${px.colours} colours, the most common on ${(100 * px.topShare).toFixed(1)}% of the pixels`);
		check(px.colours > 500 && px.topShare < 0.5, 'the Leaflet screenshot is not blank', JSON.stringify(px));
		// the CRS: world sample (x, z) is the centre of its pixel at zoom 17
		const proj = await page.evaluate(([x, z]) => {
			const m = window.terrainMap.map, p = m.project(window.terrainMap.L.latLng(-z, x), 17);
			return [p.x, p.y];
		}, [VIEW.x, VIEW.z]);
		check(proj[0] === VIEW.x + 2 ** 24 + 0.5 && proj[1] === VIEW.z + 2 ** 24 + 0.5,
			'Leaflet\'s CRS puts a world sample at its pixel\'s centre at zoom 17', String(proj));
		// the Terrarium overlay, decoded by the browser, against the binary tiles
		await within(page.evaluate(() => window.terrainMap.showElevation()), 60000, 'Leaflet to load the elevation');
		const tiles = await page.evaluate(() => window.terrainMap.terrariumTiles());
		let worst = 0, bad = null, n = 0;
		for (const t of tiles.slice(0, 4)) {
			const d = 17 - t.z, s = 2 ** d;
			for (let j = 0; j < 256; j++)
				for (let i = 0; i < 256; i++) {
					const x = (t.x * 256 + i) * s - 2 ** 24, z = (t.y * 256 + j) * s - 2 ** 24;
					const want = await serverHeight(d, x, z), diff = Math.abs(t.heights[j * 256 + i] - want);
					n++;
					if (diff > worst) { worst = diff; bad = `tile ${t.key} pixel (${i}, ${j}): ${t.heights[j * 256 + i]} against ${want}`; }
				}
		}
		console.log(`  ${tiles.length} Terrarium tiles loaded at zoom ${[...new Set(tiles.map((t) => t.z))]}; ${n} pixels compared, largest difference ${worst.toExponential(3)} m`);
		check(tiles.length >= 4 && n === 4 * 65536, 'Leaflet loaded Terrarium tiles', `${tiles.length}`);
		check(worst <= HALF_STEP, 'Terrarium pixels Leaflet loaded equal terrain-client decode --heights within 1/512 m', bad);
		const late = await page.evaluate(() => window.terrainMap.errors);
		check(!late.length && !errors.length, 'no Leaflet tile or script errors', [...late, ...errors].join('; '));
		check(!refused.length, 'no request left 127.0.0.0/8 (the libraries came from clients/web/node_modules)', refused.join(', '));
		await page.close();
	}
	exitCode = failures() ? 1 : 0;
} catch (e) {
	fail(`the browser test stopped: ${e.stack || e}`);
} finally {
	pages.close();
	await browser.close();
}
console.log(exitCode ? `${failures()} failed` : 'all passed');
process.exit(exitCode);
