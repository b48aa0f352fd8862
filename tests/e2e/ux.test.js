// The page's interaction details end to end: a file dropped on the page
// (synthetic drag and drop) is parsed and simulated, also one dropped or
// chosen while the page is still starting (its wasm held back); the keyboard reaches
// the mode select and Simulate, and Enter/Space on Simulate runs; a long
// run shows its progress and can be cancelled, after which the result is
// marked stale and its downloads are disabled with a reason; downloads are
// enabled for a finished result and two quick clicks give two files; no
// console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { serve, launch, newPage, screenshot, seeds, waitDone, loadExample, bigWorkload, dropFiles } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

const SEED000 = 'simai_llama65b_tp8_pp4_vpp8.txt';
/** A big run may take long on a shared machine: wait, do not time it. */
const LONG = { timeout: 300000 };

async function open() {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  return { page, errors };
}

/** The download buttons the worker serves (not the charts PNG). */
const WORKER_DOWNLOADS = '[data-testid^="export-"]:not([data-testid="export-png"])';

test('a file dropped on the page gets a file card with its format and a result', async () => {
  const { page, errors } = await open();
  const bytes = fs.readFileSync(path.join(seeds, SEED000));
  await dropFiles(page, [{ name: SEED000, bytes }]);
  const card = page.locator(`[data-testid="file-card"][data-file="${SEED000}"]`);
  await card.waitFor();
  await waitDone(page);
  assert.equal((await card.getByTestId('format').textContent()).trim(), 'simai-workload');
  assert.ok(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')) > 0);
  // The drop overlay is gone once dropped.
  assert.equal(await page.locator('.drop-overlay').count(), 0);
  await screenshot(page, 'ux-dropped');
  assert.deepEqual(errors, []);
});

/** Open the page with its wasm held back until `release()`: the page is
 * still starting (its inline script and placeholder only) until then. */
async function openStarting() {
  const { page, errors } = await newPage(browser.context);
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  await page.route(/\.wasm$/, async (route) => { await gate; await route.continue(); });
  await page.goto(site.url, { waitUntil: 'commit', ready: false });
  await page.getByTestId('booting').waitFor();
  return { page, errors, release };
}

test('a file dropped while the page is starting is kept, then loaded and simulated once it is ready', async () => {
  const { page, errors, release } = await openStarting();
  // The placeholder shows from the first paint; the app has not mounted.
  assert.ok(await page.getByTestId('booting').isVisible(), 'a visible loading state');
  assert.equal(await page.evaluate(() => document.body.dataset.ready), undefined);
  const bytes = fs.readFileSync(path.join(seeds, SEED000));
  await dropFiles(page, [{ name: SEED000, bytes }]);
  // Not opened by the browser in place of the page; queued and said so.
  const queued = page.locator('#boot-queued');
  await queued.waitFor();
  assert.equal(await queued.textContent(), `1 file waiting: ${SEED000}`);
  assert.equal(await page.evaluate(() => document.body.dataset.ready), undefined, 'still starting');
  await screenshot(page, 'ux-dropped-while-starting');
  release();
  const card = page.locator(`[data-testid="file-card"][data-file="${SEED000}"]`);
  await card.waitFor({ timeout: 120000 });
  await waitDone(page, { timeout: 120000 });
  assert.equal(await page.evaluate(() => document.body.dataset.ready), '1');
  assert.equal(await page.getByTestId('booting').count(), 0, 'the placeholder is gone once ready');
  assert.equal((await card.getByTestId('format').textContent()).trim(), 'simai-workload');
  assert.equal(await page.locator('[data-testid="file-card"]').count(), 1, 'loaded once');
  assert.ok(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')) > 0);
  assert.deepEqual(errors, []);
});

test('a file chosen on the start-up placeholder is loaded once the page is ready', async () => {
  const { page, errors, release } = await openStarting();
  await page.locator('#boot-input').setInputFiles(path.join(seeds, SEED000));
  await page.locator('#boot-queued').waitFor();
  release();
  const card = page.locator(`[data-testid="file-card"][data-file="${SEED000}"]`);
  await card.waitFor({ timeout: 120000 });
  await waitDone(page, { timeout: 120000 });
  assert.equal((await card.getByTestId('format').textContent()).trim(), 'simai-workload');
  assert.deepEqual(errors, []);
});

test('the keyboard reaches the mode select and Simulate; Enter and Space run', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  await page.getByTestId('file-input').focus();
  const focused = () => page.evaluate(() => document.activeElement?.dataset?.testid ?? '');
  const reached = [];
  for (let i = 0; i < 120 && !reached.includes('simulate'); i++) {
    await page.keyboard.press('Tab');
    reached.push(await focused());
  }
  const mode = reached.indexOf('mode');
  const simulate = reached.indexOf('simulate');
  assert.ok(mode >= 0, `Tab reaches the mode select (${reached.join(' ')})`);
  assert.ok(simulate > mode, 'then the Simulate button');
  assert.equal(await focused(), 'simulate');
  const status = page.getByTestId('run-status');
  assert.match(await status.textContent(), /Run 1 done/);
  await page.keyboard.press('Enter');
  await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: 'Run 2 done' }).waitFor();
  assert.equal(await focused(), 'simulate');
  await page.keyboard.press('Space');
  await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: 'Run 3 done' }).waitFor();
  await screenshot(page, 'ux-keyboard');
  assert.deepEqual(errors, []);
});

test('downloads: none enabled before a result, enabled after; two quick clicks give two files', async () => {
  const { page, errors } = await open();
  assert.equal(await page.locator(`${WORKER_DOWNLOADS}:enabled`).count(), 0);
  await loadExample(page, SEED000);
  const buttons = page.locator(WORKER_DOWNLOADS);
  assert.ok(await buttons.count() >= 2);
  assert.equal(await page.locator(`${WORKER_DOWNLOADS}:disabled`).count(), 0);
  const two = new Promise((resolve) => {
    const got = [];
    page.on('download', (d) => { got.push(d); if (got.length === 2) resolve(got); });
  });
  await page.getByTestId('export-summary-json').click();
  await page.getByTestId('export-csv').click();
  const names = (await two).map((d) => d.suggestedFilename()).sort();
  assert.equal(names.length, 2);
  assert.ok(names.some((n) => n.endsWith('.json')) && names.some((n) => n.endsWith('.csv')), names.join(', '));
  assert.equal(await page.getByTestId('error').count(), 0, 'no download failed');
  assert.deepEqual(errors, []);
});

test('a long run shows progress; cancel says so, marks the result stale and disables its downloads', async () => {
  const big = bigWorkload(300000);
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  await page.getByTestId('mode').selectOption('simai');
  await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: 'Run 2 done' }).waitFor();
  await page.getByTestId('file-input').setInputFiles(big);
  const running = page.locator('[data-testid="run-status"][data-state="running"]');
  await running.waitFor(LONG);
  assert.ok(await running.locator('progress').isVisible(), 'a progress bar while running');
  assert.match(await running.textContent(), /Run 3:/);
  // While it runs the older result is dimmed and cannot be downloaded.
  assert.equal(await page.locator('.results.stale').count(), 1);
  const csv = page.getByTestId('export-csv');
  assert.ok(await csv.isDisabled());
  assert.match(await csv.getAttribute('title'), /in progress/);
  await screenshot(page, 'ux-running');
  await page.getByTestId('cancel').click();
  const cancelled = page.locator('[data-testid="run-status"][data-state="cancelled"]');
  await cancelled.waitFor();
  assert.match(await cancelled.textContent(), /cancelled/);
  const note = page.getByTestId('stale-note');
  await note.waitFor();
  assert.match(await note.textContent(), /earlier run: press Simulate/);
  assert.equal(await page.locator('.results.stale').count(), 1);
  assert.ok(await csv.isDisabled());
  assert.match(await csv.getAttribute('title'), /cancelled/);
  const bigCard = page.locator(`[data-testid="file-card"][data-file="${path.basename(big)}"]`);
  assert.match(await bigCard.getByTestId('format-pending').textContent(), /not parsed \(run cancelled\)/);
  await screenshot(page, 'ux-cancelled');
  // Simulate again: the result is current, the note goes, downloads work.
  await page.getByTestId('simulate').click();
  await waitDone(page, LONG);
  await note.waitFor({ state: 'detached' });
  assert.equal(await page.locator('.results.stale').count(), 0);
  assert.ok(await csv.isEnabled());
  assert.equal((await bigCard.getByTestId('format').textContent()).trim(), 'simai-workload');
  await screenshot(page, 'ux-after-cancel');
  assert.deepEqual(errors, []);
});
