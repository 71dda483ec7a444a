// moderation.js - the map viewer's "who edited here" and moderator panel
// (docs/edits.md, "In the map viewer"): a click lists the edits whose brush
// covers the point (GET .../edits?x=&z=, newest first, paged with before=),
// and a moderator's token reverts an author's edits in the view's area
// (POST .../reverts through postReverts of terrain.js: Bearer token,
// Idempotency-Key, retries), with an undo. The token is kept in this tab's
// sessionStorage, never in the URL. app.js owns the state and the map.
import { postReverts, lookupEdits } from './terrain.js';

const $ = (id) => document.getElementById(id);
const AUTHOR_RE = /^[A-Za-z0-9_.@-]{1,64}$/;
const HINT = 'Click the map (Alt+click while editing) to list the edits at a point.';
let v = null; // the viewer: { st, worldKey, applyChange, drawOverlay, toWorld }

/** Wire the panel to the viewer; returns { lookupAt, viewArea, reset }. */
export function setupModeration(viewer) {
	v = viewer;
	$('lookup-more').addEventListener('click', () => v.st.lookup && lookupAt(v.st.lookup.x, v.st.lookup.z, v.st.lookup.next));
	$('mod-token').value = sessionStorage.getItem('terrain-mod-token') || '';
	$('mod-token').addEventListener('input', () => sessionStorage.setItem('terrain-mod-token', $('mod-token').value));
	$('revert').addEventListener('click', () => revertInView());
	$('undo').addEventListener('click', () => v.st.lastRevert && undoRevert(v.st.lastRevert.first_seq ?? v.st.lastRevert.seq));
	return { lookupAt, viewArea, reset };
}

/** Forget the lookup and the revert (another world). */
function reset() {
	v.st.lookup = v.st.lastRevert = null;
	$('lookup-list').replaceChildren();
	$('lookup-more').hidden = $('undo').hidden = true;
	$('mod-status').textContent = '';
	$('lookup-status').className = 'muted';
	$('lookup-status').textContent = HINT;
}

const fmtTime = (ms) => (Number.isFinite(ms) ? new Date(ms).toLocaleString(undefined,
	{ year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' }) : 'time unknown');

/** List the edits whose brush covers world (x, z), newest first; with
 * before, the next (older) page, appended. */
export async function lookupAt(x, z, before = 0) {
	x = Math.round(x * 100) / 100;
	z = Math.round(z * 100) / 100;
	const world = v.worldKey(), list = $('lookup-list'), status = $('lookup-status');
	if (!before) {
		v.st.lookup = { id: (v.st.lookup?.id ?? 0) + 1, x, z, entries: [], next: 0, loading: true };
		list.replaceChildren();
	}
	const look = v.st.lookup;
	look.loading = true;
	status.className = 'muted';
	status.textContent = `Edits at ${x}, ${z}…`;
	$('lookup-more').hidden = true;
	v.drawOverlay();
	try {
		const d = await lookupEdits('', { seed: v.st.seed, gen: v.st.gen }, x, z, { before: before || undefined });
		if (v.st.lookup !== look || world !== v.worldKey()) return;
		look.entries.push(...(d.edits || []));
		look.next = Number(d.next) || 0;
		for (const e of d.edits || []) list.append(lookupItem(e));
		const n = look.entries.length;
		status.textContent = n ? `${n}${look.next ? '+' : ''} edit${n === 1 && !look.next ? '' : 's'} at ${x}, ${z}, newest first:` :
			`No edits at ${x}, ${z}.`;
		$('lookup-more').hidden = !look.next;
	} catch (e) {
		if (v.st.lookup !== look) return;
		status.className = 'error';
		status.textContent = `Lookup at ${x}, ${z} failed: ${e.body?.detail ?? e.message}`;
	} finally {
		look.loading = false;
	}
}

function lookupItem(e) {
	const li = document.createElement('li');
	li.dataset.seq = e.seq;
	if (e.reverted) li.classList.add('gone');
	const what = e.op ? `${e.op}${e.radius != null ? ` r ${e.radius} m` : ''}` : e.revert ? 'revert' : e.undo ? `undo ${e.undo}` : 'entry';
	li.append(`#${e.seq} `);
	if (e.author) {
		const who = document.createElement('button');
		who.type = 'button';
		who.className = 'who';
		who.textContent = e.author;
		who.title = `Revert ${e.author}'s edits: put the name in the moderator's Author field`;
		who.addEventListener('click', () => { $('mod-author').value = e.author; });
		li.append(who);
	} else {
		li.append('(no author)');
	}
	const when = document.createElement('span');
	when.className = 'muted';
	when.textContent = ` · ${fmtTime(e.time)} · ${what}`;
	if (Number.isFinite(e.time)) when.title = new Date(e.time).toISOString();
	li.append(when);
	if (e.reverted) {
		const r = document.createElement('span');
		r.className = 'reverted';
		r.textContent = ' · reverted';
		li.append(r);
	}
	return li;
}

/** The view's bounds in metres, [x0, z0, x1, z1], rounded outwards to the centimetre. */
export function viewArea() {
	const a = v.toWorld(0, 0), b = v.toWorld(v.st.cw, v.st.ch);
	const lo = (m) => Math.floor(m * 100) / 100, hi = (m) => Math.ceil(m * 100) / 100;
	return [lo(a.x), lo(a.z), hi(b.x), hi(b.z)];
}

function modError(e, doing) {
	const b = e.body, detail = b?.detail ? `${b.error ? `${b.error}: ` : ''}${b.detail}` : e.message;
	return e.status === 401 ? `${doing} refused (401, the token): ${detail}` :
		e.status === 403 ? `${doing} refused (403, not allowed): ${detail}` :
		e.status === 404 && (!b || b.detail === 'no such route') ? `${doing} failed: this server has no reverts endpoint` :
		e.unknown ? `${doing} failed: ${detail}. It may have been applied: the map shows it if it was.` :
		`${doing} failed${e.status ? ` (${e.status})` : ''}: ${detail}`;
}

/** POST a revert of the author's edits whose brush centre lies in the view
 * (and, when set, since the time given). */
async function revertInView() {
	const author = $('mod-author').value.trim(), status = $('mod-status');
	if (!AUTHOR_RE.test(author)) {
		status.className = 'error';
		status.textContent = 'Pick an author in the list above, or type one (1..64 of A-Z a-z 0-9 _ . @ -).';
		return;
	}
	const filter = { author, area: viewArea() };
	const since = $('mod-since').value ? new Date($('mod-since').value).getTime() : NaN;
	if (Number.isFinite(since)) filter.since_time = since;
	await moderate(filter, `Revert of ${author}'s edits in view`);
}

async function undoRevert(seq) {
	await moderate({ undo: Number(seq) }, `Undo of revert ${seq}`);
}

async function moderate(payload, doing) {
	if (v.st.reverting) return;
	const status = $('mod-status'), token = $('mod-token').value.trim(), world = v.worldKey();
	v.st.reverting = true;
	$('revert').disabled = $('undo').disabled = true;
	status.className = 'muted';
	status.textContent = `${doing}…`;
	try {
		const body = await postReverts('', { seed: v.st.seed, gen: v.st.gen }, payload, {
			token: token || undefined,
			onRetry: ({ attempt }) => { status.textContent = `${doing}: retrying (${attempt - 1})…`; },
		});
		const seq = body.first_seq ?? body.seq, n = (body.chunks || []).length;
		if (world === v.worldKey()) v.applyChange(body, 'revert');
		if ('undo' in payload) {
			v.st.lastRevert = null;
			status.textContent = `Undo ${seq}: revert ${payload.undo} undone, ${n} chunk${n === 1 ? '' : 's'} changed.`;
		} else {
			v.st.lastRevert = { ...body, filter: payload };
			status.textContent = `Revert ${seq}: ${body.count} edit${body.count === 1 ? '' : 's'} of ${payload.author} reverted, ` +
				`${n} chunk${n === 1 ? '' : 's'} changed.`;
		}
		v.st.lastModeration = { ...body, payload };
		$('undo').hidden = !v.st.lastRevert;
		if (v.st.lastRevert) $('undo').textContent = `Undo revert ${seq}`;
		if (v.st.lookup && world === v.worldKey()) lookupAt(v.st.lookup.x, v.st.lookup.z);
	} catch (e) {
		status.className = 'error';
		status.textContent = modError(e, doing);
		v.st.lastModeration = { error: true, status: e.status, detail: e.body?.detail ?? e.message, payload };
	} finally {
		v.st.reverting = false;
		$('revert').disabled = $('undo').disabled = false;
	}
}
