// Real-browser tests of the operator's console and the spectators' page (issue 18), in
// Debian's headless Chromium driven by playwright-core, against the real relay
// (`dgt-relay demo`, simulated boards on pseudo-terminals) that run.sh starts. Every action
// is clicked in the console; what it did is then read from the relay's own API.
//
// The feed contract is checked here too: every websocket frame the relay sends during these
// tests (a whole subscriber and one subscribed to a single board) and every JSON answer the
// pages and the test get are validated against host/schema/*.schema.json.
//
// run.sh passes RELAY_URL, RELAY_TOKEN (the admin token it gave the relay) and TRF_FILE (a
// FIDE TRF report whose round 1 pairs the boards). Screenshots go to ARTIFACTS.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { sleep, until as untilEvery } from './wait.mjs';
import Ajv2020Module from 'ajv/dist/2020.js';

/** Polls `fn` until it returns a truthy value or `ms` pass (every 100 ms by default). */
const until = (what, ms, fn, every = 100) => untilEvery(what, ms, fn, every);

const HERE = path.dirname(fileURLToPath(import.meta.url));
const RELAY_URL = (process.env.RELAY_URL || '').replace(/\/$/, '');
const TOKEN = process.env.RELAY_TOKEN || '';
const TRF_FILE = process.env.TRF_FILE || path.join(HERE, '../../host/tests/data/bbp-issue7.trf');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS || path.join(HERE, 'artifacts');
const SCHEMA_DIR = path.join(HERE, '../../host/schema');
const DESKTOP = { width: 1400, height: 1000 };
const PHONE = { width: 390, height: 844 };

if (!RELAY_URL || !TOKEN) throw new Error('RELAY_URL and RELAY_TOKEN are not set: run tests/browser/run.sh');
fs.mkdirSync(ARTIFACTS, { recursive: true });

/** GET a relay route as JSON (with the admin token for /api/admin routes). */
async function api(route) {
  const headers = route.startsWith('/api/admin') ? { authorization: `Bearer ${TOKEN}` } : {};
  const r = await fetch(RELAY_URL + route, { headers });
  assert.equal(r.status, 200, `GET ${route}`);
  const body = await r.json();
  answers.push({ method: 'GET', url: RELAY_URL + route, status: r.status, body });
  return body;
}

/** JSON answers seen (from the test and the pages), for the contract check. */
const answers = [];

/** A raw feed connection that keeps every frame it gets. `boards`: subscribe to those only. */
function recordFeed(boards) {
  const frames = [];
  const ws = new WebSocket(RELAY_URL.replace(/^http/, 'ws') + '/ws');
  ws.addEventListener('open', () => {
    if (boards) ws.send(JSON.stringify({ type: 'subscribe', boards }));
  });
  ws.addEventListener('message', (ev) => frames.push(JSON.parse(ev.data)));
  return { frames, close: () => ws.close() };
}
let feedAll;
let feedOne;

const adminBoard = async (n) => (await api('/api/admin/boards')).boards.find((b) => b.board === n);

/** The piece placement of a FEN as 64 letters ('.' for empty), a1..h8. */
function placement(fen) {
  const out = new Array(64).fill('.');
  fen.split(' ')[0].split('/').forEach((row, r) => {
    let f = 0;
    for (const ch of row) {
      if (/[1-8]/.test(ch)) f += Number(ch);
      else out[(7 - r) * 8 + f++] = ch;
    }
  });
  return out.join('');
}

/** The placement a rendered board shows, a1..h8. */
const rendered = (page, selector) =>
  page.$eval(selector, (board) => {
    const out = new Array(64).fill('.');
    for (const cell of board.querySelectorAll('.sq')) {
      const sq = cell.dataset.sq;
      out[(sq.charCodeAt(1) - 49) * 8 + (sq.charCodeAt(0) - 97)] = cell.dataset.piece || '.';
    }
    return out.join('');
  });

let browser;
let userDataDir;

before(async () => {
  feedAll = recordFeed(null);
  feedOne = recordFeed([3]);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dgt-relay-console-'));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
    viewport: DESKTOP,
  });
});

after(async () => {
  feedAll.close();
  feedOne.close();
  if (browser) await browser.close();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
});

/** A new tab that records its errors and every URL it requests. */
async function newPage() {
  const page = await browser.newPage();
  page.errors = [];
  page.urls = [];
  page.on('pageerror', (e) => page.errors.push(String(e)));
  page.on('console', (m) => {
    // Chromium logs every 4xx answer; the refusals the tests provoke are checked on the page.
    if (m.type() === 'error' && !/status of (401|422)/.test(m.text())) page.errors.push(m.text());
  });
  page.on('request', (r) => page.urls.push(r.url()));
  // The console asks before it changes a game: every question is kept and answered yes.
  page.dialogs = [];
  page.on('dialog', (d) => {
    page.dialogs.push(d.message());
    d.accept();
  });
  page.on('response', async (r) => {
    if (!/\/(api|health)/.test(new URL(r.url()).pathname)) return;
    if (!(r.headers()['content-type'] || '').startsWith('application/json')) return;
    const body = await r.json().catch(() => undefined);
    if (body !== undefined) answers.push({ method: r.request().method(), url: r.url(), status: r.status(), body });
  });
  return page;
}

async function shots(page, name) {
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await sleep(300); // one layout pass at the new width
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}-phone.png`), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await page.setViewportSize(DESKTOP);
  return overflow;
}

/** The console, signed in, with every board of the relay in its table. */
async function signedIn() {
  const page = await newPage();
  await page.goto(`${RELAY_URL}/console/`);
  await page.fill('#token', TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');
  const boards = (await api('/api/admin/boards')).boards;
  await until('every board in the table', 10000, async () => (await page.$$('#boards-body tr')).length === boards.length);
  return page;
}

async function openBoard(page, n) {
  await page.click(`#boards-body tr[data-board="${n}"] td.num`);
  await page.waitForSelector(`#detail[data-board="${n}"]:not([hidden])`);
}

async function answer(page, selector) {
  return until(`an answer in ${selector}`, 10000, async () => {
    const t = await page.textContent(selector);
    return t && t !== '…' ? t : null;
  });
}

// ------------------------------------------------------------------------------------------
// The console.

test('console: a wrong token is refused; the right one is kept in the tab, never in a URL', async (t) => {
  const page = await newPage();
  t.after(() => page.close());
  await page.goto(`${RELAY_URL}/console/`);
  assert.equal(await page.isVisible('#app'), false, 'nothing shown before signing in');
  await page.fill('#token', 'not-the-token-0000000000');
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#login-error:has-text("Wrong token")');
  await page.fill('#token', TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');
  const stored = await page.evaluate(() => ({ session: Object.values(sessionStorage), local: Object.keys(localStorage).length, url: location.href }));
  assert.deepEqual(stored.session, [TOKEN], 'the token is in sessionStorage');
  assert.equal(stored.local, 0, 'nothing in localStorage');
  assert.ok(!page.urls.some((u) => u.includes(TOKEN)), 'no request URL carries the token');
  // A reload in the same tab stays signed in.
  await page.reload();
  await page.waitForSelector('#app:not([hidden])');
  // The table has every board, with its serial and port as the admin API gives them.
  const boards = (await api('/api/admin/boards')).boards;
  await until('every board in the table', 10000, async () => (await page.$$('#boards-body tr')).length === boards.length);
  for (const b of boards) {
    await until(`board ${b.board}'s serial and port`, 10000, async () => {
      const row = `#boards-body tr[data-board="${b.board}"]`;
      return (await page.textContent(`${row} td.serial`)) === b.serial && (await page.textContent(`${row} td.port`)) === b.port;
    });
  }
  await page.click('#sign-out');
  await page.waitForSelector('#login:not([hidden])');
  assert.deepEqual(await page.evaluate(() => Object.keys(sessionStorage)), [], 'signing out forgets the token');
  assert.deepEqual(page.errors, []);
});

test('console: set a result, flip a board, correct a move after a legality check', async (t) => {
  const page = await signedIn();
  t.after(() => page.close());

  // Result on board 1: one it does not have yet.
  const before1 = await adminBoard(1);
  const result = before1.result === '1-0' ? '0-1' : '1-0';
  await openBoard(page, 1);
  assert.equal(await page.inputValue('#result-select'), '', 'no result is chosen by default');
  await page.selectOption('#result-select', result);
  await page.click('#set-result');
  assert.match(await answer(page, '#action-answer'), new RegExp(`Result ${result} set`));
  assert.match(page.dialogs.at(-1), new RegExp(`^Set the result ${result} of board 1 \\(.+ – .+, \\d+ moves?\\)\\?$`));
  await until('the relay to have the result', 5000, async () => (await adminBoard(1)).result === result);
  await until('the result in the table', 5000, async () => (await page.textContent('#boards-body tr[data-board="1"] td.result')) === result);

  // Flip a board with moves (a board on the start position shows the relay its orientation
  // by itself). Boards 1, 3 and 5 are kept for the other checks.
  const all = (await api('/api/admin/boards')).boards;
  const flip = all.filter((b) => ![1, 3, 5].includes(b.board) && b.moves.length > 0).sort((a, b) => b.moves.length - a.moves.length)[0];
  assert.ok(flip, 'a board with moves to flip');
  assert.equal(flip.flipped, false);
  await openBoard(page, flip.board);
  await page.click('#flip');
  assert.match(await answer(page, '#action-answer'), /Flipped/);
  assert.match(page.dialogs.at(-1), new RegExp(`^Flip .* board ${flip.board} \\(.+, \\d+ moves?\\)\\?$`));
  await until(`the relay to have board ${flip.board} flipped`, 5000, async () => (await adminBoard(flip.board)).flipped === true);

  // Correct board 3 from ply 1: an illegal move is refused by the relay's check and cannot
  // be sent; a legal one is shown in SAN, sent, and the relay has it.
  await openBoard(page, 3);
  const first = (await adminBoard(3)).moves[0];
  const right = first && first.uci === 'd2d4' ? 'e2e4' : 'd2d4';
  await page.click('#pick-moves li[data-ply="1"]');
  await page.fill('#correct-moves', 'e2e5');
  await page.click('#check-correction');
  await page.waitForSelector('#check-out[data-ok="false"]');
  assert.match(await page.textContent('#check-out'), /422: e2e5 is not legal at ply 1/);
  assert.equal(await page.isDisabled('#send-correction'), true, 'an illegal correction cannot be sent');
  await page.fill('#correct-moves', right);
  await page.click('#check-correction');
  await page.waitForSelector('#check-out[data-ok="true"]');
  assert.match(await page.textContent('#check-out'), new RegExp(`1\\. ${right === 'd2d4' ? 'd4' : 'e4'}`));
  assert.equal((await adminBoard(3)).moves[0]?.uci, first?.uci, 'the check changed nothing');
  const moveCount = (await adminBoard(3)).moves.length;
  assert.match(await page.textContent('#check-out .removes'), moveCount > 1 ? new RegExp(`replaces plies 1-\\d+ \\(\\d+ confirmed moves\\) with 1: \\d+ moves? fewer`) : /replaces ply 1/);
  await page.click('#send-correction');
  assert.match(await answer(page, '#action-answer'), /Corrected from ply 1/);
  assert.match(page.dialogs.at(-1), /^Correct \(It replaces pl/);
  const corrected = await until('the corrected game', 5000, async () => {
    const b = await adminBoard(3);
    return b.moves[0]?.uci === right ? b : null;
  });
  assert.equal(corrected.moves.length, 1, 'the moves after it are gone');
  // Undo puts the replaced line back; the correction is then made again, so that the
  // board's real moves disagree with it for the next test.
  await page.click('#undo-correction');
  await page.waitForSelector('#action-answer:has-text("Correction undone")');
  assert.match(page.dialogs.at(-1), /^Undo the correction .* board 3 \(/);
  await until('the old line back', 5000, async () => (await adminBoard(3)).moves[0]?.uci === first?.uci);
  await page.click('#pick-moves li[data-ply="1"]');
  await page.fill('#correct-moves', right);
  await page.click('#check-correction');
  await page.waitForSelector('#check-out[data-ok="true"]');
  await page.click('#send-correction');
  await until('the correction made again', 5000, async () => (await adminBoard(3)).moves[0]?.uci === right);
  await shots(page, 'console-board');
  assert.deepEqual(page.errors, []);
});

test('console: the alert the correction raised has its time, shows its squares, and is acknowledged', async (t) => {
  const page = await signedIn();
  t.after(() => page.close());
  // Board 3 still shows the game's real moves, not the corrected line: a position mismatch.
  const alert = await until('a position mismatch on board 3', 20000, async () =>
    (await adminBoard(3)).alerts.find((a) => a.code === 'position_mismatch' && !a.acked_at && !a.cleared_by),
  );
  const li = `#alert-list li[data-id="${alert.id}"]`;
  await page.waitForSelector(li);
  assert.equal(await page.getAttribute(li, 'data-board'), '3');
  const shown = await page.textContent(`${li} time`);
  const expected = await page.evaluate((at) => new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }), alert.at);
  assert.equal(shown, expected, 'the wall-clock time, in the browser time zone');
  await until('the mismatch squares in the table', 10000, async () => {
    const latest = (await adminBoard(3)).alerts.filter((a) => a.code === 'position_mismatch' && !a.cleared_by).pop();
    return latest && (await page.textContent('#boards-body tr[data-board="3"] td.mismatch')) === latest.squares.join(' ');
  });
  await page.click(`${li} button.ack`);
  await page.waitForSelector(li, { state: 'detached' }); // "open only" hides it
  const acked = (await adminBoard(3)).alerts.find((a) => a.id === alert.id);
  assert.ok(acked.acked_at >= alert.at, 'the relay keeps the acknowledgement');
  await page.uncheck('#open-only');
  await page.waitForSelector(`${li}[data-state="acknowledged"]`);
  // A second console sees it acknowledged too.
  const other = await signedIn();
  t.after(() => other.close());
  await other.uncheck('#open-only');
  await other.waitForSelector(`${li}[data-state="acknowledged"]`);
  assert.deepEqual(page.errors, []);
});

test('console: pairings from a TRF report, then edited by hand', async (t) => {
  const page = await signedIn();
  t.after(() => page.close());
  await page.setInputFiles('#trf-file', TRF_FILE);
  await page.fill('#trf-round', '1');
  await page.click('#trf-form button[type=submit]');
  assert.match(await answer(page, '#trf-answer'), /Round 1 loaded from .*: \d+ boards paired/);
  await until('the report\'s players on board 1', 10000, async () => (await api('/api/boards/1')).pairing.white.name === 'Test0031 Player0031');
  // By hand: board 4's White gets a title, a rating and a federation.
  await page.click('#pairings-reload');
  const row = '#pairings-body tr[data-board="4"]';
  await page.waitForSelector(row);
  await page.fill(`${row} .p-white-title`, 'GM');
  await page.fill(`${row} .p-white-elo`, '2801');
  await page.fill(`${row} .p-white-federation`, 'nor');
  await page.click('#pairings-form button[type=submit]');
  assert.match(await answer(page, '#pairings-answer'), /saved/);
  await until('board 4\'s White with title, rating and federation', 5000, async () => {
    const white = (await api('/api/boards/4')).pairing.white;
    return JSON.stringify([white.title, white.elo, white.federation]) === '["GM",2801,"NOR"]';
  });
  // A refusal is shown as the relay gives it.
  await page.fill(`${row} .p-white-federation`, 'NORWAY');
  await page.click('#pairings-form button[type=submit]');
  assert.match(await answer(page, '#pairings-answer'), /422: board 4: federation "NORWAY"/);
  const overflow = await shots(page, 'console');
  report('console_phone_overflow_px', overflow);
  assert.deepEqual(page.errors, []);
});

// ------------------------------------------------------------------------------------------
// The spectators' page.

test('spectators: no serial, path or alert; players with title, rating and federation; result badges', async (t) => {
  const page = await newPage();
  t.after(() => page.close());
  await page.goto(`${RELAY_URL}/live/`);
  await page.waitForSelector('body[data-conn="live"]');
  const boards = (await api('/api/admin/boards')).boards;
  await until('every board as a tile', 10000, async () => (await page.$$('#grid .tile')).length === boards.length);
  await until('board 4\'s player with title, rating, federation', 10000, async () => {
    const text = await page.textContent('.tile[data-board="4"]');
    return text.includes('GM Test') && text.includes('2801 NOR');
  });
  const one = await adminBoard(1);
  await until('board 1\'s result badge', 10000, async () => (await page.textContent('.tile[data-board="1"] .badge.result')) === one.result);
  const text = await page.textContent('body');
  const html = await page.content();
  for (const b of boards) {
    assert.ok(!text.includes(b.serial), `serial ${b.serial} is not shown`);
    assert.ok(!html.includes(b.port), `port ${b.port} is not in the page`);
  }
  assert.ok(!/\/dev\//.test(html), 'no device path');
  assert.equal(await page.$('.alert, #alert-list, .sq.mismatch'), null, 'no alert, no mismatch squares');
  assert.ok(!text.includes('cannot be explained'), 'no alert text (board 3 has a mismatch)');
  assert.ok(!page.urls.some((u) => u.includes('/api/admin')), 'no admin route is called');
  const overflow = await shots(page, 'live-grid');
  report('live_phone_overflow_px', overflow);
  assert.ok(overflow <= 0, `the grid fits a phone's width (${overflow} px too wide)`);
  assert.deepEqual(page.errors, []);
});

test('spectators: step through a game (buttons and arrow keys) and flip the board', async (t) => {
  const page = await newPage();
  t.after(() => page.close());
  const n = 5;
  const game = await until('board 5 with 3 moves', 30000, async () => {
    const g = await api(`/api/games/1/${n}`);
    return g.moves.length >= 3 ? g : null;
  });
  const fenAt = (ply) => game.moves.find((m) => m.ply === ply).fen;
  await page.goto(`${RELAY_URL}/live/`);
  await page.click(`.tile[data-board="${n}"]`);
  await page.waitForSelector(`#game[data-board="${n}"] table.moves td[data-ply]`);
  // Home: the start position; → twice: after ply 2; ← once: after ply 1.
  await page.keyboard.press('Home');
  await page.waitForSelector('#game[data-ply="0"][data-following="false"]');
  assert.equal(await rendered(page, '#game .board'), placement(game.start_fen || 'rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1'));
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('#game[data-ply="2"]');
  await until('the position after ply 2', 5000, async () => (await rendered(page, '#game .board')) === placement(fenAt(2)));
  await page.keyboard.press('ArrowLeft');
  await page.waitForSelector('#game[data-ply="1"]');
  await until('the position after ply 1', 5000, async () => (await rendered(page, '#game .board')) === placement(fenAt(1)));
  assert.equal(await page.getAttribute('#game td.current', 'data-ply'), '1', 'the move list marks the ply shown');
  // The buttons and the move list do the same.
  await page.click('#game button.next');
  await page.waitForSelector('#game[data-ply="2"]');
  await page.click('#game td[data-ply="3"]');
  await page.waitForSelector('#game[data-ply="3"]');
  await until('the position after ply 3', 5000, async () => (await rendered(page, '#game .board')) === placement(fenAt(3)));
  // Flip: Black at the bottom (the first square drawn is h1), the position unchanged.
  const order = () => page.$$eval('#game .board .sq', (cells) => [cells[0].dataset.sq, cells[63].dataset.sq]);
  assert.deepEqual(await order(), ['a8', 'h1']);
  await page.click('#game button.flip');
  await page.waitForSelector('#game .board[data-flipped="true"]');
  assert.deepEqual(await order(), ['h1', 'a8']);
  assert.equal(await rendered(page, '#game .board'), placement(fenAt(3)));
  await page.keyboard.press('End');
  await page.waitForSelector('#game[data-following="true"]');
  const overflow = await shots(page, 'live-game');
  report('live_game_phone_overflow_px', overflow);
  assert.ok(overflow <= 0, `the game view fits a phone's width (${overflow} px too wide)`);
  assert.deepEqual(page.errors, []);
});

// ------------------------------------------------------------------------------------------
// The feed contract.

/** The api.schema.json definition for an answer, by route and status. */
function answerSchema(a) {
  const u = new URL(a.url);
  const p = u.pathname;
  if (a.status >= 400) return 'error';
  const routes = [
    ['GET', /^\/health$/, 'health'],
    ['GET', /^\/api\/push$/, 'push'],
    ['GET', /^\/api\/boards$/, 'boards'],
    ['GET', /^\/api\/boards\/\d+$/, 'board'],
    ['GET', /^\/api\/event$/, 'event'],
    ['GET', /^\/api\/rounds\/\d+$/, 'round'],
    ['GET', /^\/api\/games\/\d+\/\d+$/, 'game'],
    ['GET', /^\/api\/admin\/boards$/, 'admin_boards'],
    ['POST', /^\/api\/admin\/boards\/\d+\/correct$/, u.searchParams.get('dry_run') === '1' ? 'correct_dry_run' : 'ok'],
    ['POST', /^\/api\/admin\/alerts\/\d+\/ack$/, 'alert_ack'],
    ['GET', /^\/api\/admin\/rounds$/, 'rounds'],
    ['PUT', /^\/api\/admin\/rounds\/\d+$/, 'round_action'],
    ['POST', /^\/api\/admin\/rounds\/\d+\/(start|finish)$/, 'round_action'],
    ['GET', /^\/api\/admin\/delay$/, 'delay'],
    ['PUT', /^\/api\/admin\/delay$/, 'delay'],
    ['POST', /^\/api\/admin\/pairings\/trf$/, 'trf'],
    ['POST', /^\/api\/admin\/pairings$/, 'pairings'],
    ['POST', /^\/api\/admin\//, 'ok'],
  ];
  const hit = routes.find(([m, re]) => m === a.method && re.test(p));
  return hit ? hit[2] : null;
}

test('contract: every feed frame and API answer seen matches host/schema; moves and alerts carry times', async () => {
  // What was seen, kept for whoever has to change the schema.
  fs.writeFileSync(path.join(ARTIFACTS, 'contract-seen.json'), JSON.stringify({ frames: feedAll.frames.concat(feedOne.frames), answers }));
  const Ajv2020 = Ajv2020Module.default || Ajv2020Module;
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  const feedSchema = JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, 'feed.schema.json'), 'utf8'));
  ajv.addSchema(feedSchema);
  ajv.addSchema(JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, 'api.schema.json'), 'utf8')));
  const frame = ajv.getSchema(feedSchema.$id);
  assert.equal(frame({ v: 1, type: 'move', seq: 1, board: 1, state: 'confirmed' }), false, 'the schema refuses a move without its move');
  await api('/health');
  await api('/api/push');
  await api('/api/rounds/1');
  await api('/api/boards');
  const types = new Set();
  for (const f of feedAll.frames.concat(feedOne.frames)) {
    assert.ok(frame(f), `${JSON.stringify(f).slice(0, 300)}: ${ajv.errorsText(frame.errors)}`);
    types.add(f.type);
    if (f.type === 'move') assert.ok(f.move.at > 0, 'a move has its time');
    if (f.type === 'alert') assert.ok(f.alert.at > 0 && f.alert.id > 0, 'an alert has its id and time');
  }
  for (const t of ['snapshot', 'move', 'clock', 'alert', 'alert_ack', 'board', 'result']) assert.ok(types.has(t), `a ${t} frame was seen and checked`);
  const checked = new Map();
  for (const a of answers) {
    const name = answerSchema(a);
    assert.ok(name, `no schema for ${a.method} ${a.url}`);
    const validate = ajv.getSchema(`urn:dgt-relay:schema:api#/$defs/${name}`);
    assert.ok(validate(a.body), `${a.method} ${a.url} (${name}): ${ajv.errorsText(validate.errors)}`);
    checked.set(name, (checked.get(name) || 0) + 1);
  }
  for (const name of ['health', 'push', 'boards', 'event', 'round', 'game', 'admin_boards', 'correct_dry_run', 'alert_ack', 'trf', 'pairings', 'ok', 'error']) {
    assert.ok(checked.has(name), `a ${name} answer was seen and checked`);
  }
  // A subscription to one board numbers its own deltas: from its snapshot on, without a gap.
  const one = feedOne.frames;
  const snap = one.findLastIndex((f) => f.type === 'snapshot');
  assert.ok(snap >= 0 && one[snap].boards.every((b) => b.board === 3), 'a snapshot of board 3 only');
  let seq = one[snap].seq;
  const deltas = one.slice(snap + 1).filter((f) => typeof f.seq === 'number');
  assert.ok(deltas.length > 0, 'board 3 had deltas');
  for (const d of deltas) {
    assert.equal(d.seq, ++seq, 'gap-free');
    assert.ok(d.board === 3 || d.board === null || d.type === 'board', `only board 3 (got ${d.type} of ${d.board})`);
  }
  report('contract', { frames: feedAll.frames.length + feedOne.frames.length, frame_types: [...types].sort(), answers: Object.fromEntries(checked) });
});

// ------------------------------------------------------------------------------------------

const figures = {};
function report(key, value) {
  figures[key] = value;
  fs.writeFileSync(path.join(ARTIFACTS, 'console-report.json'), JSON.stringify(figures, null, 2));
}
