// three.test.mjs - clients/web/three.html in headless Chromium (run by
// tests/client/js_client.sh): the page imports the JavaScript client module from
// the live server (/assets/terrain.js) and three.js from clients/web's own
// npm packages, turns the ring of 5 x 5 tiles around a chunk into one mesh
// and draws it. Two views: the page's default (LOD 2 around the origin,
// where a 1190 m mountain stands on the ring's near edge) and a LOD-3 one.
//
// The page used to draw the ring as an open sheet seen from beyond its near
// edge: ground rising towards that edge showed its back faces, culled, so
// the background showed through and peaks floated (20% of the default
// view's outline). gridMesh's skirt closes the sheet with walls.
// Checks, each on what a person would see:
//   - the mesh is the ring's: 25 tiles, the stitched grid's size, heights
//     within the generator's range;
//   - no holes: the terrain's outline is drawn a second time as a
//     silhouette (every face, both sides, flat white, into a render
//     target), and the share of the screenshot's background-coloured
//     pixels inside it (1 px in from its edge) is at most 0.2%;
//   - nothing floats apart: the edges every tile shares with a neighbour,
//     each taken from the tile's own heights (fetched here and decoded by
//     `terrain-client decode --heights`, not by the page), project within
//     1 px of the neighbour's and of the mesh's own vertices there, and the
//     screenshot shows terrain, not background, at those points;
//   - the outline covers at least 15% of the view, the screenshot has over
//     2000 colours and none on more than 85% of it (not blank);
//   - no script errors; no request leaves 127.0.0.0/8 (pages.mjs refuses
//     them, as offline, and lists them).
// Environment: BASE (the server), CLIENT (terrain-client), WORK (scratch),
// SHOTS (where to save three.png and three-lod3.png).
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { launch, newPage, servePages, blockOutside, screenshotStats, watchErrors, check, fail, failures, within } from './pages.mjs';

const { BASE, CLIENT, WORK, SHOTS } = process.env;
const BACKGROUND = [0x1a, 0x20, 0x27];   // the page's scene.background
const VIEWS = [
	{ name: 'three', query: 'seed=42&gen=default', lod: 2, side: 321 },
	{ name: 'three-lod3', query: 'seed=42&gen=default&x=300&z=-100&lod=3&radius=2', lod: 3, side: 161 },
];

// The heights of tile (lod, cx, cz) of seed 42, as terrain-client decodes them.
async function refTile(lod, cx, cz) {
	const r = await fetch(`${BASE}/v1/worlds/42/chunks/${lod}/${cx}/${cz}?gen=default`);
	if (!r.ok) throw new Error(`GET tile ${lod}/${cx}/${cz}: ${r.status}`);
	const file = `${WORK}/three-${lod}_${cx}_${cz}.bin`;
	writeFileSync(file, Buffer.from(await r.arrayBuffer()));
	return execFileSync(CLIENT, ['decode', '--heights', file], { encoding: 'utf8' }).trim().split(/\s+/).map(Number);
}

// In the page: the terrain's silhouette (every face of the mesh, both
// sides, flat white on black, no lights) as a w x h array of 0/1, rows
// from the top; the scene is drawn as before afterwards.
const silhouette = () => {
	const { THREE, renderer, scene, camera, mesh } = window.terrainRing;
	const size = renderer.getSize(new THREE.Vector2()), w = size.x, h = size.y;
	const target = new THREE.WebGLRenderTarget(w, h);
	const material = mesh.material, background = scene.background, lights = scene.children.filter((c) => c.isLight);
	mesh.material = new THREE.MeshBasicMaterial({ color: 0xffffff, side: THREE.DoubleSide });
	scene.background = new THREE.Color(0x000000);
	lights.forEach((l) => { l.visible = false; });
	renderer.setRenderTarget(target);
	renderer.render(scene, camera);
	const px = new Uint8Array(4 * w * h);
	renderer.readRenderTargetPixels(target, 0, 0, w, h, px);
	renderer.setRenderTarget(null);
	mesh.material = material;
	scene.background = background;
	lights.forEach((l) => { l.visible = true; });
	renderer.render(scene, camera);
	target.dispose();
	const mask = new Uint8Array(w * h);
	for (let j = 0; j < h; j++)   // readPixels: bottom row first
		for (let i = 0; i < w; i++) mask[j * w + i] = px[4 * ((h - 1 - j) * w + i)] > 127 ? 1 : 0;
	// as base64: an array of numbers takes Playwright many seconds to pass
	let s = '';
	for (let k = 0; k < mask.length; k += 0x8000) s += String.fromCharCode.apply(null, mask.subarray(k, k + 0x8000));
	return { w, h, mask: btoa(s) };
};

// In the page: screen pixels [x, y] of points [x, y, z] (the mesh's frame)
// through the page's camera, and of the mesh's own vertices at grid
// indices (vertex k = j * width + i).
const project = ([points, vertices]) => {
	const { THREE, renderer, camera, mesh } = window.terrainRing;
	const size = renderer.getSize(new THREE.Vector2()), pos = mesh.geometry.getAttribute('position');
	const toPx = (v) => { v.project(camera); return [(v.x + 1) / 2 * size.x, (1 - v.y) / 2 * size.y, v.z]; };
	return {
		points: points.map(([x, y, z]) => toPx(new THREE.Vector3(x, y, z))),
		vertices: vertices.map((k) => toPx(new THREE.Vector3(pos.getX(k), pos.getY(k), pos.getZ(k)))),
	};
};

// In the page: the screenshot's RGB pixels (PNG as base64), decoded by the browser.
const decodePng = async (b64) => {
	const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
	const bmp = await createImageBitmap(blob), c = new OffscreenCanvas(bmp.width, bmp.height), g = c.getContext('2d');
	g.drawImage(bmp, 0, 0);
	const d = new Uint8Array(g.getImageData(0, 0, c.width, c.height).data.buffer);
	let s = '';   // as base64, as silhouette's mask
	for (let k = 0; k < d.length; k += 0x8000) s += String.fromCharCode.apply(null, d.subarray(k, k + 0x8000));
	return { w: c.width, h: c.height, rgb: btoa(s) };
};

const isBackground = (img, x, y) => {
	const k = 4 * (y * img.w + x);
	return Math.abs(img.rgb[k] - BACKGROUND[0]) + Math.abs(img.rgb[k + 1] - BACKGROUND[1]) + Math.abs(img.rgb[k + 2] - BACKGROUND[2]) <= 6;
};

// The share of background pixels inside the silhouette, 1 px in from its
// edge (antialiasing blends the outline itself with the background).
function holes(img, sil) {
	let inside = 0, bg = 0;
	for (let y = 1; y + 1 < sil.h; y++)
		for (let x = 1; x + 1 < sil.w; x++) {
			const k = y * sil.w + x;
			if (!(sil.mask[k] && sil.mask[k - 1] && sil.mask[k + 1] && sil.mask[k - sil.w] && sil.mask[k + sil.w])) continue;
			inside++;
			if (isBackground(img, x, y)) bg++;
		}
	return { inside, bg, share: inside ? bg / inside : 1 };
}

// Every edge a tile shares with its east or south neighbour, from both
// tiles' own heights: [{ a: [x, y, z], b: [x, y, z], vertex }], positions
// in the mesh's frame (gridMesh's offset: the ring centred on 0).
async function seams(rect, lod, width, spacing) {
	const n = 2 ** (8 - lod), side = n + 1, half = ((width - 1) * spacing) / 2, tiles = new Map();
	for (let cz = rect.cz0; cz <= rect.cz1; cz++)
		for (let cx = rect.cx0; cx <= rect.cx1; cx++) tiles.set(`${cx},${cz}`, await refTile(lod, cx, cz));
	const out = [];
	const at = (cx, cz, i, j, h) => {
		const I = (cx - rect.cx0) * n + i, J = (cz - rect.cz0) * n + j;
		return { p: [I * spacing - half, h, J * spacing - half], vertex: J * width + I, border: !I || !J || I === width - 1 || J === width - 1 };
	};
	for (let cz = rect.cz0; cz <= rect.cz1; cz++)
		for (let cx = rect.cx0; cx <= rect.cx1; cx++) {
			const t = tiles.get(`${cx},${cz}`), east = tiles.get(`${cx + 1},${cz}`), south = tiles.get(`${cx},${cz + 1}`);
			for (let k = 0; k < side; k++) {
				if (east) {
					const a = at(cx, cz, n, k, t[k * side + n]), b = at(cx + 1, cz, 0, k, east[k * side]);
					out.push({ a: a.p, b: b.p, vertex: a.vertex, border: a.border });
				}
				if (south) {
					const a = at(cx, cz, k, n, t[n * side + k]), b = at(cx, cz + 1, k, 0, south[k]);
					out.push({ a: a.p, b: b.p, vertex: a.vertex, border: a.border });
				}
			}
		}
	return out;
}

async function view(browser, pages, v) {
	const page = await newPage(browser, { viewport: { width: 800, height: 600 } });
	const refused = await blockOutside(page);
	const errors = watchErrors(page);
	const t0 = Date.now();
	await page.goto(`${pages.url}/three.html?server=${BASE}&${v.query}`);
	await within(page.waitForFunction(() => window.terrainRing), 120000, 'the three.js page to start');
	const r = await within(page.evaluate(() => window.terrainRing.ready), 150000, 'the ring to be drawn');
	console.log(`  ${v.name}: drawn in ${Date.now() - t0} ms: ${r.tiles} tiles, ${r.vertices} vertices, ${r.triangles} triangles, ` +
		`heights ${r.minHeight.toFixed(2)}..${r.maxHeight.toFixed(2)} m, three.js r${r.revision}, ${r.renderer}`);
	const rect = await page.evaluate(() => window.terrainRing.rect);
	const n = v.side - 1;
	check(r.tiles === 25 && r.width === v.side && r.gridVertices === v.side * v.side && r.spacing === 2 ** v.lod &&
		r.gridTriangles === 2 * n * n, `${v.name}: the ring of 5 x 5 LOD-${v.lod} tiles became one ${v.side} x ${v.side} mesh`, JSON.stringify(r));
	const info = await (await fetch(`${BASE}/v1/worlds/42?gen=default`)).json();
	check(r.minHeight >= info.height.min && r.maxHeight <= info.height.max && r.maxHeight - r.minHeight > 20,
		`${v.name}: its heights lie within the generator's range and have relief`, `${r.minHeight}..${r.maxHeight}`);

	const sil = await page.evaluate(silhouette);
	sil.mask = Buffer.from(sil.mask, 'base64');
	const png = await page.screenshot({ path: `${SHOTS}/${v.name}.png` });
	const img = await page.evaluate(decodePng, png.toString('base64'));
	img.rgb = Buffer.from(img.rgb, 'base64');
	const px = await screenshotStats(page, png);
	console.log(`  ${v.name}: screenshot ${img.w} x ${img.h}: ${px.colours} colours, the most common on ${(100 * px.topShare).toFixed(1)}% of the pixels`);
	check(px.colours > 2000 && px.topShare < 0.85, `${v.name}: the screenshot is not blank`, JSON.stringify(px));
	const hole = holes(img, sil);
	console.log(`  ${v.name}: the terrain's outline covers ${(100 * hole.inside / (img.w * img.h)).toFixed(1)}% of the view; ` +
		`${hole.bg} of its ${hole.inside} pixels show the background (${(100 * hole.share).toFixed(3)}%)`);
	check(hole.inside > 0.15 * img.w * img.h && hole.share <= 0.002,
		`${v.name}: no holes: at most 0.2% of the pixels inside the terrain's outline show the background`,
		`${(100 * hole.share).toFixed(2)}%`);

	const edges = await seams(rect, v.lod, r.width, r.spacing);
	const pr = await page.evaluate(project, [edges.flatMap((e) => [e.a, e.b]), edges.map((e) => e.vertex)]);
	let apart = 0, off = 0, shown = 0, onBg = 0, worstBg = null;
	edges.forEach((e, k) => {
		const [pa, pb, pm] = [pr.points[2 * k], pr.points[2 * k + 1], pr.vertices[k]];
		apart = Math.max(apart, Math.hypot(pa[0] - pb[0], pa[1] - pb[1]));
		off = Math.max(off, Math.hypot(pa[0] - pm[0], pa[1] - pm[1]));
		const x = Math.floor(pm[0]), y = Math.floor(pm[1]);
		// in view, and not on the ring's outer edge (the outline: half background)
		if (e.border || x < 1 || y < 1 || x + 1 >= img.w || y + 1 >= img.h || Math.abs(pm[2]) > 1) return;
		shown++;
		if (isBackground(img, x, y)) { onBg++; worstBg ??= `(${x}, ${y})`; }
	});
	console.log(`  ${v.name}: ${edges.length} samples of the edges tiles share: neighbours' edges ${apart.toFixed(4)} px apart at most, the mesh's vertices ${off.toFixed(4)} px from them; ` +
		`${shown} inside the ring and in view, ${onBg} of them on background`);
	check(edges.length === 2 * 20 * (n / 5 + 1) && apart <= 1 && off <= 1,
		`${v.name}: every tile's edges meet its neighbours' within a pixel, and the mesh's vertices lie on them`,
		`${apart} px, ${off} px`);
	check(shown > edges.length / 3 && onBg <= shown * 0.002,
		`${v.name}: the screenshot shows terrain at the tiles' shared edges, not the background`, `${onBg} of ${shown}, first at ${worstBg}`);
	check(!errors.length, `${v.name}: no script errors`, errors.join('; '));
	check(!refused.length, `${v.name}: no request left 127.0.0.0/8 (three came from clients/web/node_modules)`, refused.join(', '));
	await page.close();
}

const browser = await launch();
const pages = await servePages();
let exitCode = 1;
try {
	for (const v of VIEWS) await view(browser, pages, v);
	exitCode = failures() ? 1 : 0;
} catch (e) {
	fail(`the browser test stopped: ${e.stack || e}`);
} finally {
	pages.close();
	await browser.close();
}
console.log(exitCode ? `${failures()} failed` : 'all passed');
process.exit(exitCode);
