// The schedule lab end to end: on the bundled LLaMA-65B example (PP 4) with
// 8 micro-batches and 4 virtual stages, "Compare schedules" fills a table
// with one row per schedule; picking each schedule in the select shows its
// result (the iteration time of its row), its timeline and the activation
// memory chart, one step chart per stage; clicking a row runs that
// schedule; "pin as A" on the 1F1B row then a click on ZB-V draws both
// timelines on one time axis. Each schedule's timeline has one activation
// memory lane per stage (`data-memory-lanes` on the canvas; hovering one shows
// its value), and under the table every schedule's timeline is stacked on one
// time axis (`schedule-compare-timelines`, `data-count`). With the file's one
// micro-batch, ZB-H1 runs (m < p degenerates gracefully) and the schedules whose conditions
// fail are listed with the core's reason instead of a row. Screenshot:
// target/e2e/schedules-compare.png, target/e2e/schedules-pinned-pair.png,
// target/e2e/schedules-stacked.png (the stacked view alone),
// target/e2e/schedules-memory-lanes.png (the run's timeline with its lanes),
// target/e2e/schedules-job-memory-lanes.png (a described job's, in bytes).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, waitDone, screenshot, shots, settled, describeLlama8b } from './harness.js';

const SEED = 'simai_llama65b_tp8_pp4_vpp8.txt';
const SCHEDULES = ['gpipe', '1f1b', 'interleaved', 'zb-h1', 'zb-h2', 'zbv', 'dualpipev'];

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

/** [`settled`] with the minute a schedule comparison may take. */
const settledSlow = (page) => settled(page, { timeout: 60000 });

/** The timeline canvas `testid` has drawn coloured spans. */
async function waitDrawn(page, testid = 'timeline') {
  await page.waitForFunction((id) => {
    const c = document.querySelector(`[data-testid=${id}]`);
    if (!c || !c.width) return false;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 40) n += 1;
    }
    return n > 2000;
  }, testid, { timeout: 20000 });
}

/** A screenshot of one element (legible at its own size). */
async function shoot(locator, name) {
  fs.mkdirSync(shots, { recursive: true });
  await locator.screenshot({ path: path.join(shots, `${name}.png`) });
}

async function loadSeed(page) {
  await page.goto(site.url);
  await page.getByTestId('example').filter({ hasText: SEED }).click();
  await waitDone(page);
}

test('compare every schedule, pick each one and see its timeline and memory chart, click a row, pin a pair', async () => {
  const { page, errors } = await newPage(browser.context);
  await loadSeed(page);
  await page.getByTestId('setting-micro_batches').fill('8');
  await page.getByTestId('setting-virtual_stages').fill('4');
  await settledSlow(page);
  await page.getByTestId('schedule-compare-run').click();
  const table = page.getByTestId('schedule-compare-table');
  await table.waitFor({ timeout: 60000 });
  await settledSlow(page);
  const rows = await table.locator('tr[data-schedule]').evaluateAll((trs) => trs.map((tr) => ({
    schedule: tr.dataset.schedule,
    ns: Number(tr.querySelector('td').dataset.ns),
    speedup: Number(tr.querySelector('[data-testid=schedule-speedup]').dataset.value),
  })));
  assert.deepEqual(rows.map((r) => r.schedule), SCHEDULES);
  assert.equal(await page.getByTestId('schedule-compare-refused').count(), 0);
  const base = rows.find((r) => r.schedule === '1f1b').ns;
  for (const r of rows) {
    assert.ok(r.ns > 0, `${r.schedule} has an iteration time`);
    assert.ok(Math.abs(r.speedup * r.ns - base) < 1, `${r.schedule}: speed-up = 1F1B / its time`);
  }

  // Every schedule's timeline stacked under the table on one time axis.
  const stacked = page.getByTestId('schedule-compare-timelines');
  await page.waitForFunction(() => document.querySelector('[data-testid="schedule-compare-timelines"]')?.dataset.count === '7',
    null, { timeout: 20000 });
  const sc = page.getByTestId('schedule-timeline');
  assert.equal(await sc.getAttribute('data-runs'),
    'gpipe,1f1b,interleaved (vpp 4),zb-h1,zb-h2,zbv,dualpipev');
  assert.equal(Number(await sc.getAttribute('data-counters')), 7 * 4, 'a memory lane per stage per schedule');
  assert.equal(Number(await sc.getAttribute('data-memory-lanes')), 0, 'collapsed: one row per stage');
  const [sStart, sEnd] = await page.getByTestId('schedule-view-range')
    .evaluate((e) => [Number(e.dataset.startNs), Number(e.dataset.endNs)]);
  assert.equal(sStart, 0);
  assert.ok(sEnd >= Math.max(...rows.map((r) => r.ns)), 'the shared axis covers the slowest schedule');
  await sc.scrollIntoViewIfNeeded();
  await waitDrawn(page, 'schedule-timeline');
  await shoot(stacked, 'schedules-stacked');
  // A click on a stage's name expands it: its memory lane shows.
  const box = await sc.boundingBox();
  const rulerH = Number(await sc.getAttribute('data-ruler-height'));
  await page.mouse.click(box.x + 40, box.y + rulerH + 22 + 10);
  await page.waitForFunction(() => document.querySelector('[data-testid=schedule-timeline]')?.dataset.memoryLanes === '1');

  for (const r of rows) {
    await page.getByTestId('setting-schedule').selectOption(r.schedule);
    await settledSlow(page);
    assert.equal(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')), r.ns,
      `${r.schedule}: the run shows its row's iteration time`);
    assert.equal(await table.locator('tr.current').getAttribute('data-schedule'), r.schedule);
    await waitDrawn(page);
    // The timeline has a memory lane per stage.
    assert.equal(Number(await page.getByTestId('timeline').getAttribute('data-memory-lanes')), 4,
      `${r.schedule}: one memory lane per stage in the timeline`);
    const chart = page.getByTestId('activation-memory-chart');
    assert.equal(await chart.getAttribute('data-unit'), 'micro-batches');
    const peaks = await chart.locator('svg[data-stage]').evaluateAll((s) => s.map((e) => Number(e.dataset.peak)));
    assert.equal(peaks.length, 4, `${r.schedule}: one memory chart per stage`);
    assert.ok(peaks.every((p) => p > 0), `${r.schedule}: every stage holds activations`);
    if (r.schedule === '1f1b') assert.deepEqual(peaks, [4, 3, 2, 1]);
    if (r.schedule === 'gpipe') assert.deepEqual(peaks, [8, 8, 8, 8]);
  }

  // A row click runs that schedule.
  await table.locator('tr[data-schedule="zb-h1"]').click();
  await settledSlow(page);
  assert.equal(await page.getByTestId('setting-schedule').inputValue(), 'zb-h1');
  assert.equal(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')),
    rows.find((r) => r.schedule === 'zb-h1').ns);
  await waitDrawn(page);
  // Hovering stage 0's memory lane shows its value.
  const tl = page.getByTestId('timeline');
  await tl.scrollIntoViewIfNeeded();
  const laneY = Number(await tl.getAttribute('data-memory-first-y'));
  const tlBox = await tl.boundingBox();
  await page.mouse.move(tlBox.x + Number(await tl.getAttribute('data-plot-left')) + 120, tlBox.y + laneY);
  const tip = page.getByTestId('tooltip');
  await tip.waitFor();
  assert.equal(await tip.getAttribute('data-counter'), 'stage 0 / activation memory');
  assert.match(await tip.innerText(), /micro-batch/);
  await shoot(page.locator('.ts-timeline').last(), 'schedules-memory-lanes');
  await page.mouse.move(0, 0);
  await table.scrollIntoViewIfNeeded();
  await screenshot(page, 'schedules-compare');

  // Pin 1F1B as A, click ZB-V: both timelines on one time axis.
  await table.locator('tr[data-schedule="1f1b"] [data-testid=schedule-compare-pin]').click();
  await settledSlow(page);
  assert.equal(await page.getByTestId('setting-schedule').inputValue(), '1f1b');
  await table.locator('tr[data-schedule="zbv"]').click();
  await page.getByTestId('compare-row').first().waitFor();
  await settledSlow(page);
  assert.equal(await page.getByTestId('timeline-view').inputValue(), 'a-vs-b');
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline]')?.dataset.runs === 'A (pinned),B (this run)');
  await waitDrawn(page);
  const [start, end] = await page.getByTestId('view-range').evaluate((e) => [Number(e.dataset.startNs), Number(e.dataset.endNs)]);
  const one = rows.find((r) => r.schedule === '1f1b').ns;
  assert.equal(start, 0);
  assert.ok(end >= one, `the shared axis ${end} covers A's (1F1B) ${one} ns`);
  await page.getByTestId('timeline').scrollIntoViewIfNeeded();
  await screenshot(page, 'schedules-pinned-pair');
  assert.deepEqual(errors, []);
});

test('with one micro-batch the schedules whose conditions fail are listed with the reason', async () => {
  const { page, errors } = await newPage(browser.context);
  await loadSeed(page);
  await page.getByTestId('schedule-compare-run').click();
  const table = page.getByTestId('schedule-compare-table');
  await table.waitFor({ timeout: 60000 });
  assert.deepEqual(await table.locator('tr[data-schedule]').evaluateAll((t) => t.map((e) => e.dataset.schedule)),
    ['gpipe', '1f1b', 'zb-h1']);
  const refused = page.getByTestId('schedule-compare-refused');
  assert.deepEqual(await refused.evaluateAll((l) => l.map((e) => e.dataset.schedule)),
    ['interleaved', 'zb-h2', 'zbv', 'dualpipev']);
  assert.match(await refused.nth(1).innerText(), /m >= 2p - 1/);
  assert.match(await refused.nth(2).innerText(), /m >= 2p/);
  // Another setting: the table compared other settings, so it goes.
  await page.getByTestId('setting-micro_batches').fill('8');
  await settledSlow(page);
  assert.equal(await table.count(), 0);
  assert.deepEqual(errors, []);
});

test('a described job compares its schedules in bytes, and its memory chart is in bytes', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeLlama8b(page);
  await settledSlow(page);
  const chart = page.getByTestId('activation-memory-chart');
  assert.equal(await chart.getAttribute('data-unit'), 'bytes');
  const peaks = await chart.locator('svg[data-stage]').evaluateAll((s) => s.map((e) => Number(e.dataset.peak)));
  assert.equal(peaks.length, 2);
  // Activations are part of each stage's peak memory (the browser test
  // checks them against the memory model byte for byte).
  const totals = await page.locator('[data-testid="job-memory-table"] [data-testid="job-memory-row"]')
    .evaluateAll((rows) => rows.map((r) => Number(r.dataset.peakBytes)));
  assert.equal(totals.length, 2);
  peaks.forEach((p, i) => assert.ok(p > 1e6 && p < totals[i], `stage ${i}: ${p} of ${totals[i]} bytes`));
  await page.getByTestId('schedule-compare-run').click();
  const compare = page.getByTestId('schedule-compare-table');
  await compare.waitFor({ timeout: 60000 });
  await settledSlow(page);
  const rows = await compare.locator('tr[data-schedule]').evaluateAll((t) => t.map((e) => e.dataset.schedule));
  assert.deepEqual(rows, ['gpipe', '1f1b', 'zb-h1', 'zb-h2', 'zbv', 'dualpipev']);
  assert.equal(await compare.locator('[data-testid=schedule-memory]').count(), 6);
  assert.deepEqual(await page.getByTestId('schedule-compare-refused').evaluateAll((l) => l.map((e) => e.dataset.schedule)),
    ['interleaved']);
  // Each row counts a stage's whole memory (the memory model), not its
  // activations only: the current run's (1F1B) row is its memory table's.
  const oneF = await compare.locator('tr[data-schedule="1f1b"] [data-testid=schedule-memory]')
    .evaluate((e) => e.dataset.bytes.split(',').map(Number));
  assert.deepEqual(oneF, totals);
  await compare.locator('tr[data-schedule="zbv"]').click();
  await settledSlow(page);
  assert.equal(await page.getByTestId('setting-schedule').inputValue(), 'zbv');
  assert.equal(await page.getByTestId('job-panel').getAttribute('data-active'), 'true');
  await waitDrawn(page);
  // The job's timeline has its two memory lanes, in bytes.
  const tl = page.getByTestId('timeline');
  assert.equal(Number(await tl.getAttribute('data-memory-lanes')), 2);
  await tl.scrollIntoViewIfNeeded();
  const box = await tl.boundingBox();
  await page.mouse.move(box.x + Number(await tl.getAttribute('data-plot-left')) + 200,
    box.y + Number(await tl.getAttribute('data-memory-first-y')));
  const tip = page.getByTestId('tooltip');
  await tip.waitFor();
  assert.match(await tip.innerText(), /peak\s+[\d.]+ (MiB|GiB)/);
  await shoot(page.locator('.ts-timeline').last(), 'schedules-job-memory-lanes');
  await page.mouse.move(0, 0);
  await chart.scrollIntoViewIfNeeded();
  await screenshot(page, 'schedules-job');
  assert.deepEqual(errors, []);
});
