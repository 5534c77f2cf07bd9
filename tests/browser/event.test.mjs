// A whole 3-round event run from the operator's console alone (issue 28), in Debian's
// headless Chromium driven by playwright-core: a TRF report's pairings, each round started,
// played on simulated boards, its results set and the round finished, with no restart and
// no call outside the page. Each round goes to its own round id on a Lichess stand-in.
//
// The test starts its own relay (`dgt-relay demo --config`, RELAY_BIN from run.sh) with a
// `[lichess]` section pointing at a stand-in served here, which keeps every push by round id
// and answers as Lichess does (per game: its tags and move count).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { until as untilEvery } from './wait.mjs';

/** Polls `fn` until it returns a truthy value or `ms` pass (every 200 ms by default). */
const until = (what, ms, fn, every = 200) => untilEvery(what, ms, fn, every);

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = process.env.RELAY_BIN || path.join(HERE, '../../target/debug/dgt-relay');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS || path.join(HERE, 'artifacts');
const SPEED = process.env.EVENT_SPEED || '6';
const TOKEN = `event-test-${Math.random().toString(16).slice(2)}-token`;
const LICHESS_TOKEN = 'lip_event_standin';
const LICHESS = { 1: 'RoundOne', 2: 'RoundTwo', 3: 'RoundThr' };
const BOARDS = 4;

fs.mkdirSync(ARTIFACTS, { recursive: true });

// ------------------------------------------------------------------------------------------
// The report: 8 players, 3 rounds, 4 boards a round.

const PLAYERS = [
  [1, 'GM', 'Alpha, Anna', 2700, 'NOR', 1000001],
  [2, 'IM', 'Bravo, Ben', 2500, 'ENG', 1000002],
  [3, '', 'Charlie, Cleo', 2300, 'FRA', 1000003],
  [4, 'FM', 'Delta, Dan', 2250, 'GER', 1000004],
  [5, '', 'Echo, Eva', 2100, 'ESP', 1000005],
  [6, '', 'Foxtrot, Finn', 2000, 'ITA', 1000006],
  [7, 'WGM', 'Golf, Gina', 1950, 'USA', 1000007],
  [8, '', 'Hotel, Hugo', 1900, 'NED', 1000008],
];
// Per round: [white, black, white's result].
const PAIRS = [
  [[1, 5, '1'], [6, 2, '0'], [3, 7, '='], [8, 4, '0']],
  [[2, 1, '0'], [4, 3, '1'], [5, 6, '='], [7, 8, '1']],
  [[1, 4, ' '], [3, 2, ' '], [6, 7, ' '], [8, 5, ' ']],
];
const OTHER = { 1: '0', 0: '1', '=': '=', ' ': ' ' };

function trfReport() {
  const lines = ['012 Console Club Open', '022 Testville', '042 2026/11/27', '052 2026/11/29'];
  for (const [rank, title, name, rating, fed, id] of PLAYERS) {
    let l = `001 ${String(rank).padStart(4)} m${title.padEnd(3)} ${name.padEnd(33)} ${String(rating).padStart(4)} ${fed.padEnd(3)} ${String(id).padStart(11)} 1990/01/01  0.0 ${String(rank).padStart(4)}`;
    for (const round of PAIRS) {
      const [w, b, r] = round.find(([w, b]) => w === rank || b === rank);
      const block = w === rank ? `${String(b).padStart(4)} w ${r}` : `${String(w).padStart(4)} b ${OTHER[r]}`;
      l += `  ${block}`;
    }
    lines.push(l);
  }
  // CR LF line ends, as Windows pairing programs write them.
  return lines.join('\r\n') + '\r\n';
}

// A short game, so that each round's boards come to their next game within a minute or so.
const OPERA = ['Morphy, Paul', 'Duke Karl / Count Isouard', '1-0', '1. e4 e5 2. Nf3 d6 3. d4 Bg4 4. dxe5 Bxf3 5. Qxf3 dxe5 6. Bc4 Nf6 7. Qb3 Qe7 8. Nc3 c6 9. Bg5 b5 10. Nxb5 cxb5 11. Bxb5+ Nbd7 12. O-O-O Rd8 13. Rxd7 Rxd7 14. Rd1 Qe6 15. Bxd7+ Nxd7 16. Qb8+ Nxb8 17. Rd8# 1-0'];
// One game of the same length on every board: the boards come to their next game together,
// after the operator has started the next round (a board's second game in a round would go
// to the round after it).
const GAMES = [OPERA, OPERA, OPERA, OPERA];
const gamesPgn = () => GAMES.map(([w, b, r, moves]) => `[Event "?"]\n[Site "?"]\n[Date "????.??.??"]\n[Round "?"]\n[White "${w}"]\n[Black "${b}"]\n[Result "${r}"]\n\n${moves}\n\n`).join('');

// ------------------------------------------------------------------------------------------
// The Lichess stand-in: POST /api/broadcast/round/{id}/push with the token.

const pushes = new Map(); // round id -> the last PGN pushed there
function startStandIn() {
  const server = http.createServer((req, res) => {
    const m = /^\/api\/broadcast\/round\/([A-Za-z0-9]{8})\/push$/.exec(req.url);
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const json = (status, v) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      if (req.method !== 'POST' || !m) return json(404, { error: 'Not found' });
      if (req.headers.authorization !== `Bearer ${LICHESS_TOKEN}`) return json(401, { error: 'No such token' });
      pushes.set(m[1], body);
      json(200, { games: splitGames(body).map((g) => ({ tags: g.tags, moves: g.moves })) });
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** The games of a PGN text: tags and the number of moves. */
function splitGames(text) {
  const games = [];
  let g = null;
  for (const line of text.split('\n')) {
    const tag = /^\[(\w+) "(.*)"\]$/.exec(line);
    if (tag) {
      if (!g || g.done) games.push((g = { tags: {}, moves: 0, done: false }));
      g.tags[tag[1]] = tag[2];
    } else if (g && line.trim()) {
      g.done = true;
      const movetext = line.replace(/\{[^}]*\}/g, ' ');
      g.moves += movetext.split(/\s+/).filter((t) => t && !/^\d+\.+$/.test(t) && !/^(1-0|0-1|1\/2-1\/2|\*)$/.test(t)).length;
    }
  }
  return games;
}

// ------------------------------------------------------------------------------------------

let standin;
let relay;
let relayLog = '';
let url;
let browser;
let dir;

before(async () => {
  standin = await startStandIn();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dgt-relay-event-'));
  const port = await new Promise((resolve) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  url = `http://127.0.0.1:${port}`;
  fs.writeFileSync(path.join(dir, 'lichess-token'), `${LICHESS_TOKEN}\n`);
  fs.writeFileSync(path.join(dir, 'event.trf'), trfReport());
  fs.writeFileSync(path.join(dir, 'games.pgn'), gamesPgn());
  // Round 1's Lichess round in the configuration; rounds 2 and 3 get theirs in the console.
  fs.writeFileSync(
    path.join(dir, 'relay.toml'),
    [
      `token = "${TOKEN}"`,
      // A port with no device behind it: the console must show it.
      `ports = ["${path.join(dir, 'ttyUSB-unplugged')}"]`,
      '[lichess]',
      'round = "Default1"',
      `url = "http://127.0.0.1:${standin.address().port}"`,
      `token_file = "${path.join(dir, 'lichess-token')}"`,
      `rounds = { 1 = "${LICHESS[1]}" }`,
      '',
    ].join('\n'),
  );
  relay = spawn(BIN, ['demo', '--config', path.join(dir, 'relay.toml'), '--boards', String(BOARDS), '--speed', SPEED, '--games', path.join(dir, 'games.pgn'), '--listen', `127.0.0.1:${port}`, '--data', path.join(dir, 'data')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  relay.stdout.on('data', (c) => (relayLog += c));
  relay.stderr.on('data', (c) => (relayLog += c));
  await until('the relay to answer', 60000, async () => (await fetch(`${url}/health`)).ok, 300);
  dir && fs.mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
});

after(async () => {
  if (browser) await browser.close();
  if (relay && relay.exitCode === null && relay.signalCode === null) {
    relay.kill('SIGTERM');
    await new Promise((r) => relay.once('exit', r));
  }
  fs.writeFileSync(path.join(ARTIFACTS, 'event-relay.log'), relayLog);
  if (standin) standin.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Reads the relay's operator view, as the check of what the clicks did. */
async function adminBoards() {
  const r = await fetch(`${url}/api/admin/boards`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return (await r.json()).boards;
}

/** The round's games as "White - Black" (the pairing program orders the boards). */
function expectedGames(round) {
  const name = (rank) => PLAYERS.find((p) => p[0] === rank)[2];
  return PAIRS[round - 1].map(([w, b]) => `${name(w)} - ${name(b)}`).sort();
}

test('a 3-round event from the console alone: TRF, start, results, finish, next round, each round to its own Lichess round', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  const dialogs = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Every question the console asks is answered yes, and kept to be read.
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.accept();
  });
  await page.goto(`${url}/console/`);
  await page.fill('#token', TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');
  await until('every board in the table', 30000, async () => (await page.$$('#boards-body tr')).length === BOARDS);

  for (const round of [1, 2, 3]) {
    // The round's pairings from the report: the form shows its players whole.
    await page.setInputFiles('#trf-file', path.join(dir, 'event.trf'));
    await page.fill('#trf-round', String(round));
    await page.click('#trf-form button[type=submit]');
    await page.waitForSelector(`#trf-answer:has-text("Round ${round} loaded")`);
    assert.match(await page.textContent('#trf-answer'), /\(Console Club Open, 2026\/11\/27 to 2026\/11\/29\)/, "the report's event name and dates");
    const expected = expectedGames(round);
    const formGames = async () => {
      const out = [];
      for (let n = 1; n <= BOARDS; n++) {
        const row = `#pairings-body tr[data-board="${n}"]`;
        out.push(`${await page.inputValue(`${row} .p-white-name`)} - ${await page.inputValue(`${row} .p-black-name`)}`);
      }
      return out;
    };
    await until(`the form to show round ${round}'s players`, 10000, async () => JSON.stringify((await formGames()).sort()) === JSON.stringify(expected));
    const names = (await formGames()).map((g) => g.split(' - '));
    const rating = await page.inputValue('#pairings-body tr[data-board="1"] .p-white-elo');
    assert.ok(/^\d{4}$/.test(rating), `the rating is in the form (${rating})`);
    if (round > 1) {
      // The Lichess round of this round, set in the console, then the round started.
      const row = `#rounds-body tr[data-round="${round}"]`;
      await page.waitForSelector(row);
      await page.fill(`${row} .lichess-round`, LICHESS[round]);
      await page.click(`${row} .save-lichess`);
      await page.waitForSelector(`#rounds-answer:has-text("Lichess round ${LICHESS[round]}")`);
      await page.waitForSelector(`${row} .start-round`);
      await page.click(`${row} .start-round`);
      await page.waitForSelector(`#rounds-answer:has-text("Round ${round} started")`);
    }
    await page.waitForSelector(`#rounds-body tr[data-round="${round}"][data-state="live"]`);

    // Every board plays a game of this round with the report's players.
    await until(`round ${round}'s games on every board`, 180000, async () => {
      const boards = await adminBoards();
      return boards.length === BOARDS && boards.every((b) => b.round === round && b.moves.length >= 2);
    }, 500);
    const boards = await adminBoards();
    for (const b of boards) {
      assert.deepEqual([b.pairing.white.name, b.pairing.black.name], names[b.board - 1], `round ${round} board ${b.board}`);
    }
    await until(`the Round column to show ${round}`, 10000, async () =>
      (await page.$$eval('#boards-body td.round', (cells) => cells.map((c) => c.textContent))).every((t) => t === String(round)),
    );

    // Finishing with games in progress asks first (the question names them); declined here.
    if (boards.some((b) => !b.result)) {
      page.removeAllListeners('dialog');
      page.once('dialog', (d) => {
        dialogs.push(d.message());
        d.dismiss();
      });
      await page.click(`#rounds-body tr[data-round="${round}"] .finish-round`);
      await page.waitForSelector('#rounds-answer[data-ok="false"]');
      assert.match(dialogs[dialogs.length - 1], /without a result: board \d+ \(/);
      page.on('dialog', (d) => {
        dialogs.push(d.message());
        d.accept();
      });
    }
    // Results from the console, board by board: pick one (there is no default), confirm.
    for (const b of boards) {
      if (b.result) continue;
      await page.click(`#boards-body tr[data-board="${b.board}"] td.num`);
      await page.waitForSelector(`#detail[data-board="${b.board}"]:not([hidden])`);
      assert.equal(await page.inputValue('#result-select'), '', 'no result is chosen before the operator picks one');
      const result = ['1-0', '0-1', '1/2-1/2'][b.board % 3];
      await page.selectOption('#result-select', result);
      await page.click('#set-result');
      await page.waitForSelector(`#action-answer:has-text("Result ${result} set")`);
      assert.match(dialogs[dialogs.length - 1], new RegExp(`board ${b.board} \\((\\w+ )?${names[b.board - 1][0]} – (\\w+ )?${names[b.board - 1][1]}, \\d+ moves?\\)`));
    }
    await until(`every result of round ${round}`, 10000, async () => (await adminBoards()).every((b) => b.result));
    await page.click(`#rounds-body tr[data-round="${round}"] .finish-round`);
    await page.waitForSelector(`#rounds-answer:has-text("Round ${round} finished")`);
    await page.waitForSelector(`#rounds-body tr[data-round="${round}"][data-state="finished"]`);

    // The round reached its own Lichess round: its games, with their players and results.
    const games = await until(`round ${round}'s games with results on Lichess round ${LICHESS[round]}`, 20000, async () => {
      const text = pushes.get(LICHESS[round]);
      const g = text ? splitGames(text) : [];
      return g.length === BOARDS && g.every((x) => x.tags.Result !== '*') ? g : null;
    });
    for (const g of games) {
      assert.equal(g.tags.Round.split('.')[0], String(round), `Lichess round ${LICHESS[round]} holds round ${round} only`);
      const n = Number(g.tags.Board);
      assert.deepEqual([g.tags.White, g.tags.Black], names[n - 1]);
    }
    await page.screenshot({ path: path.join(ARTIFACTS, `event-round-${round}.png`), fullPage: true });
  }
  assert.ok(!pushes.has('Default1'), 'nothing went to the default round: every round had its own');
  const event = await (await fetch(`${url}/api/event`)).json();
  assert.equal(event.name, 'Console Club Open', "the report's event name (012) names the event");
  assert.deepEqual(errors, []);
});

test('with a broadcast delay the console stays live: the delay is shown and changed there', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${url}/console/`);
  await page.fill('#token', TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');
  await page.waitForSelector('body[data-delay="0"]');
  await page.fill('#delay-s', '15');
  await page.click('#delay-form button[type=submit]');
  await page.waitForSelector('#delay-answer:has-text("Delay set to 15 s")');
  await page.waitForSelector('body[data-delay="15"]');
  const r = await fetch(`${url}/api/admin/delay`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal((await r.json()).delay_s, 15);
  assert.match(await page.textContent('#delay-note'), /spectators see the games 15 s late; this console is live/);
  // Spectators fall behind; the console's table shows the moves the relay has now.
  const behind = await until('a board whose spectators are behind by two moves', 120000, async () => {
    const pub = (await (await fetch(`${url}/api/boards`)).json());
    const live = await adminBoards();
    return live.find((b) => {
      const p = pub.find((x) => x.board === b.board);
      return p && b.round === p.round && b.moves.length >= p.moves.length + 2;
    });
  }, 500);
  await until(`board ${behind.board}'s live move count in the console`, 10000, async () => {
    const now = (await adminBoards()).find((b) => b.board === behind.board);
    const shown = await page.textContent(`#boards-body tr[data-board="${behind.board}"] td.moves`);
    const pub = (await (await fetch(`${url}/api/boards`)).json()).find((b) => b.board === behind.board);
    return shown.split(' ')[0] === String(now.moves.length) && now.moves.length > pub.moves.length;
  }, 300);
  await page.screenshot({ path: path.join(ARTIFACTS, 'event-delay.png'), fullPage: true });
  // Back to no delay, from the console.
  await page.fill('#delay-s', '0');
  await page.click('#delay-form button[type=submit]');
  await page.waitForSelector('body[data-delay="0"]');
  assert.deepEqual(errors, []);
});

test('a configured port that cannot be opened is shown in the console, alerted, and /health is degraded', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${url}/console/`);
  await page.fill('#token', TOKEN);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#app:not([hidden])');
  const missing = path.join(dir, 'ttyUSB-unplugged');
  const li = await page.waitForSelector('#ports li[data-state="not_found"]');
  assert.match(await li.textContent(), new RegExp(`${missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} not found`));
  await page.waitForSelector('#ports li[data-state="active"]');
  assert.equal((await page.$$('#ports li[data-state="active"]')).length, BOARDS, 'the simulated boards\' ports are active');
  await page.waitForSelector('#alert-list li[data-code="port_unopenable"]');
  assert.match(await page.textContent('#alert-list li[data-code="port_unopenable"]'), /cannot be opened: it does not exist.*Plug the board in/);
  const health = await (await fetch(`${url}/health`)).json();
  assert.deepEqual([health.status, health.ports_down], ['degraded', 1]);
  assert.ok(!JSON.stringify(health).includes(missing), '/health shows no path');
  // Something that is no serial device appears at the path: another state, another alert.
  fs.writeFileSync(missing, '');
  await page.waitForSelector('#ports li[data-state="unopenable"]', { timeout: 20000 });
  await until('the alert for the new reason', 20000, async () =>
    (await page.$$eval('#alert-list li[data-code="port_unopenable"] .message', (ps) => ps.map((p) => p.textContent))).some((t) => /cannot be opened \(.*check that it is a serial port/.test(t)),
  );
  assert.equal((await (await fetch(`${url}/health`)).json()).status, 'degraded');
  await page.screenshot({ path: path.join(ARTIFACTS, 'event-ports.png'), fullPage: true });
  assert.deepEqual(errors, []);
});

test('after a stop the data folder is true: no game live in tournament.json, federations in index.json', async () => {
  relay.kill('SIGTERM');
  await new Promise((r) => relay.once('exit', r));
  const data = path.join(dir, 'data');
  const t = JSON.parse(fs.readFileSync(path.join(data, 'tournament.json'), 'utf8'));
  assert.equal(t.name, 'Console Club Open');
  assert.ok(t.rounds.length >= 3, JSON.stringify(t));
  assert.deepEqual(t.rounds.map((r) => r.live), t.rounds.map(() => 0), `nothing is live after the stop: ${JSON.stringify(t)}`);
  const index = JSON.parse(fs.readFileSync(path.join(data, 'round-2', 'index.json'), 'utf8'));
  const fed = new Map(PLAYERS.map(([, , name, , f]) => [name, f]));
  for (const p of index.pairings) {
    for (const side of ['white', 'black']) {
      const name = `${p[side].lname}, ${p[side].fname}`;
      assert.equal(p[side].federation, fed.get(name), `${name}'s federation in round-2/index.json`);
    }
  }
});
