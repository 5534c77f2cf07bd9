// Real-browser layout tests of the spectators' page at a laptop's 1366x768 and a phone's
// 390x844 (issue 31), in Debian's headless Chromium driven by playwright-core, against the
// demo run.sh starts (RELAY_URL, RELAY_TOKEN).
//
// At both sizes: one game shows both players, their clocks, the step buttons and the result
// inside the window without scrolling; the grid's cards use the width and show full names;
// an unknown round or board says so; the move list ends with the result, and a forfeit shows
// no move. Screenshots of each size go to the artifacts, and to docs/ (the README shows
// them) with UPDATE_DOCS=1; docs/spectator-*.png were made so against `dgt-relay demo` with its
// embedded games (titles and federations), not the ../shared corpus run.sh prefers.
//
// The result checks set a result on the demo's last board through the admin API and clear
// it after, so the console test that follows finds the games as they were.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { until as untilEvery } from './wait.mjs';

/** Polls `fn` until it returns a truthy value or `ms` pass (every 100 ms by default). */
const until = (what, ms, fn, every = 100) => untilEvery(what, ms, fn, every);

const HERE = path.dirname(fileURLToPath(import.meta.url));
const RELAY_URL = (process.env.RELAY_URL || '').replace(/\/$/, '');
const TOKEN = process.env.RELAY_TOKEN || '';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.ARTIFACTS || path.join(HERE, 'artifacts');
const DOCS = process.env.UPDATE_DOCS === '1' ? path.join(HERE, '..', '..', 'docs') : ARTIFACTS;
const SIZES = [
  { name: 'laptop', width: 1366, height: 768 },
  { name: 'phone', width: 390, height: 844 },
];

if (!RELAY_URL || !TOKEN) throw new Error('RELAY_URL and RELAY_TOKEN are not set: run tests/browser/run.sh');
fs.mkdirSync(ARTIFACTS, { recursive: true });

async function api(method, route, body) {
  const res = await fetch(RELAY_URL + route, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${method} ${route}: ${text}`);
  return text ? JSON.parse(text) : null;
}

let browser;

before(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  if (browser) await browser.close();
});

async function pageAt(size) {
  const context = await browser.newContext({ viewport: { width: size.width, height: size.height }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.errors = errors;
  page.closeAll = () => context.close();
  return page;
}

/** Saves a screenshot in the artifacts (and docs/ with UPDATE_DOCS=1). */
async function screenshot(page, name) {
  const shot = path.join(DOCS, name);
  await page.screenshot({ path: shot });
  if (DOCS !== ARTIFACTS) fs.copyFileSync(shot, path.join(ARTIFACTS, name));
}

/** The boards the relay has, with their round; the demo's are paired from its games. */
async function boards() {
  const res = await fetch(`${RELAY_URL}/api/boards`);
  return res.json();
}

/** Elements outside the window (or scrolled out of it): [selector, rect] for each. */
const outside = (page, selectors) =>
  page.evaluate((sels) => {
    const out = [];
    for (const s of sels) {
      const nodes = [...document.querySelectorAll(s)].filter((n) => n.offsetParent !== null);
      if (!nodes.length) out.push([s, 'missing']);
      for (const n of nodes) {
        const r = n.getBoundingClientRect();
        if (r.top < 0 || r.left < 0 || r.bottom > innerHeight + 0.5 || r.right > innerWidth + 0.5 || r.height === 0) {
          out.push([s, { top: r.top, left: r.left, bottom: r.bottom, right: r.right, innerWidth, innerHeight }]);
        }
      }
    }
    return out;
  }, selectors);

for (const size of SIZES) {
  test(`${size.name} ${size.width}x${size.height}: one game fits the window with both players, clocks, buttons and result`, async () => {
    const list = await until('boards with players', 30000, async () => {
      const b = await boards();
      return b.length && b.every((x) => x.pairing && x.pairing.white.name) ? b : null;
    });
    const first = list[0];
    const page = await pageAt(size);
    try {
      await page.goto(`${RELAY_URL}/live/#round=${first.round}&board=${first.board}`);
      await page.waitForSelector('.game-board .board .sq[data-piece]');
      // Both clocks show a time once the feed has the clock.
      await until('both clocks', 20000, () =>
        page.$$eval('.game-board .clk[data-side]', (c) => c.length === 2 && c.every((x) => /\d:\d\d/.test(x.textContent))),
      );
      const off = await outside(page, [
        '.game-board .big-bar',
        '.game-board .board',
        '.game-board .clk[data-side="white"]',
        '.game-board .clk[data-side="black"]',
        '.controls button.prev',
        '.controls button.next',
        '.controls button.flip',
        '.result-line',
      ]);
      assert.deepEqual(off, [], `outside the ${size.width}x${size.height} window`);
      const geometry = await page.evaluate(() => {
        const b = document.querySelector('.game-board .board').getBoundingClientRect();
        return { w: b.width, h: b.height, scrollY, names: [...document.querySelectorAll('.game-board .pname')].map((n) => n.textContent) };
      });
      assert.equal(geometry.scrollY, 0);
      assert.ok(Math.abs(geometry.w - geometry.h) < 2, `the board is square: ${JSON.stringify(geometry)}`);
      // As big as the window allows: most of the height on a laptop, the width on a phone.
      const want = size.name === 'laptop' ? 0.55 * size.height : 0.9 * size.width;
      assert.ok(geometry.w >= want, `board ${geometry.w}px, at least ${want}px expected`);
      assert.ok(geometry.names.every((n) => n && n !== 'White' && n !== 'Black'), geometry.names.join(' / '));
      assert.deepEqual(page.errors, []);
      await screenshot(page, `spectator-${size.name}-game.png`);
    } finally {
      await page.closeAll();
    }
  });

  test(`${size.name} ${size.width}x${size.height}: the grid's cards use the width and show full names`, async () => {
    const list = await boards();
    const page = await pageAt(size);
    try {
      await page.goto(`${RELAY_URL}/live/`);
      await until('every board on the grid', 20000, async () => (await page.$$('#grid .tile')).length >= list.length);
      await until('the players', 20000, () => page.$$eval('#grid .tile .pname', (n) => n.every((x) => x.textContent && !/^(White|Black)$/.test(x.textContent))));
      const cards = await page.evaluate(() => {
        const grid = document.getElementById('grid').getBoundingClientRect();
        const tiles = [...document.querySelectorAll('#grid .tile')].map((t) => t.getBoundingClientRect());
        const top = Math.min(...tiles.map((t) => t.top));
        const row = tiles.filter((t) => Math.abs(t.top - top) < 2);
        const names = [...document.querySelectorAll('#grid .tile .pname')].map((n) => ({
          text: n.textContent,
          cut: n.scrollWidth > n.clientWidth + 1 || n.scrollHeight > n.clientHeight + 1,
          size: [n.scrollWidth, n.clientWidth, n.scrollHeight, n.clientHeight],
        }));
        return { gridLeft: grid.left, gridRight: grid.right, rowLeft: Math.min(...row.map((t) => t.left)), rowRight: Math.max(...row.map((t) => t.right)), perRow: row.length, count: tiles.length, width: tiles[0].width, names };
      });
      await screenshot(page, `spectator-${size.name}-grid.png`);
      // The first row runs the grid's width when there are cards enough to fill it.
      if (cards.count > cards.perRow) {
        assert.ok(cards.rowRight >= cards.gridRight - 2, `the first row ends at ${cards.rowRight} of ${cards.gridRight}`);
      }
      assert.ok(cards.width >= (size.name === 'laptop' ? 230 : 160), `cards ${cards.width}px wide`);
      const cut = cards.names.filter((n) => n.cut).map((n) => `${n.text} ${n.size}`);
      assert.deepEqual(cut, [], 'names cut short on the cards');
      const off = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth);
      assert.equal(off, false, 'the page scrolls sideways');
      assert.deepEqual(page.errors, []);
    } finally {
      await page.closeAll();
    }
  });
}

test('an unknown round or board says there is none', async () => {
  const [first] = await boards();
  const page = await pageAt(SIZES[0]);
  try {
    await page.goto(`${RELAY_URL}/live/#round=9999`);
    await until('no such round', 10000, () => page.$eval('#empty', (n) => !n.hidden && /No such round/.test(n.textContent)));
    assert.equal(await page.$$eval('#rounds .round.current', (n) => n.length), 0, 'round 9999 is not offered');
    await page.goto(`${RELAY_URL}/live/#round=${first.round}&board=9999`);
    await until('no such game', 10000, () => page.$eval('#game .notice', (n) => !n.hidden && /No such game/.test(n.textContent)));
    assert.equal(await page.$$eval('#game .game-board', (n) => n.filter((x) => x.offsetParent !== null).length), 0);
  } finally {
    await page.closeAll();
  }
});

test("the move list ends with the result; a forfeit shows no move, at both sizes", async () => {
  const list = await boards();
  const last = list[list.length - 1];
  await until('a move on the last board', 60000, async () => {
    const b = (await boards()).find((x) => x.board === last.board);
    return b && b.moves && b.moves.length > 0;
  });
  try {
    for (const size of SIZES) {
      const page = await pageAt(size);
      try {
        await api('POST', `/api/admin/boards/${last.board}/result`, { result: '1/2-0' });
        await page.goto(`${RELAY_URL}/live/#round=${last.round}&board=${last.board}`);
        await until('the score after the last move', 10000, () =>
          page.$eval('table.moves tbody tr:last-child', (tr) => tr.classList.contains('result-row') && tr.textContent.trim() === '½-0'),
        );
        assert.ok((await page.$$('table.moves td[data-ply]')).length > 0);
        assert.equal(await page.$eval('.result-line', (n) => n.textContent), '½-0');
        assert.deepEqual(await outside(page, ['.result-line']), []);
        await api('POST', `/api/admin/boards/${last.board}/result`, { result: '-+' });
        await until('a forfeit without moves', 10000, () =>
          page.$eval('.result-line', (n) => n.textContent === '0-1 · not played (forfeit)'),
        );
        await until('no move listed', 10000, async () => (await page.$$('table.moves td[data-ply]')).length === 0);
        assert.equal(await page.$eval('table.moves tbody tr:last-child', (tr) => tr.textContent.trim()), '0-1 · not played (forfeit)');
        await page.screenshot({ path: path.join(ARTIFACTS, `forfeit-${size.name}.png`) });
        assert.deepEqual(page.errors, []);
      } finally {
        await page.closeAll();
      }
    }
  } finally {
    await api('POST', `/api/admin/boards/${last.board}/result`, { result: null });
  }
});

test('a team match shows its score from the games of the round', async () => {
  const list = await boards();
  const [b1, b2] = list;
  const round = b1.round;
  const player = (name, team, federation) => ({ name, team, federation });
  await api('POST', '/api/admin/pairings', {
    round,
    boards: [
      { board: b1.board, white: player('Carlsen, Magnus', 'Norway', 'NOR'), black: player('Gukesh, D', 'India', 'IND') },
      { board: b2.board, white: player('Erigaisi, Arjun', 'India', 'IND'), black: player('Tari, Aryan', 'Norway', 'NOR') },
    ],
  });
  const page = await pageAt(SIZES[1]);
  try {
    await page.goto(`${RELAY_URL}/live/#round=${round}`);
    // Before any result: the match, 0 – 0.
    await until('the match', 10000, () => page.$eval('#matches', (n) => n.textContent === 'India0 – 0Norway'));
    await api('POST', `/api/admin/boards/${b1.board}/result`, { result: '1-0' });
    await api('POST', `/api/admin/boards/${b2.board}/result`, { result: '1/2-1/2' });
    await until('the score', 10000, () => page.$eval('#matches', (n) => n.textContent === 'India½ – 1½Norway'));
    assert.deepEqual(await outside(page, ['#matches .match']), []);
    // Flags drawn from the federation code, by the browser's own fonts.
    const flags = await page.$$eval(`#grid .tile[data-board="${b1.board}"] .flag`, (n) => n.map((x) => [x.dataset.fed, x.textContent]));
    assert.deepEqual(flags.sort(), [['IND', '\u{1f1ee}\u{1f1f3}'], ['NOR', '\u{1f1f3}\u{1f1f4}']]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'team-match-phone.png') });
    assert.deepEqual(page.errors, []);
  } finally {
    await page.closeAll();
    for (const b of [b1, b2]) await api('POST', `/api/admin/boards/${b.board}/result`, { result: null });
  }
});
