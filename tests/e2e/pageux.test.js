// The page as people meet it (issue 29), end to end at 1440x900 and
// 1280x720: the timeline keeps Perfetto's conventions (the plain wheel
// scrolls the lanes, then the page, and never zooms; Ctrl+wheel zooms;
// Shift+wheel pans; the hint line says so); a run the user asked for (an
// example, Simulate, a sweep row) brings its result on screen, a settings
// edit does not move the page; the Configure column folds. Screenshots go to
// target/e2e/pageux-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, screenshot, loadExample, waitDone, shots, dropFiles, settled, cli, root } from './harness.js';

/** 16 pipeline stages: more lanes than the lane canvas shows at once. */
const SEED = 'simai_405b_tp8_pp16_ga16_sp.txt';
const SIZES = [[1440, 900], [1280, 720]];

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

async function open(width, height) {
  const { page, errors } = await newPage(browser.context);
  await page.setViewportSize({ width, height });
  await page.goto(site.url);
  return { page, errors };
}

const viewRange = (page) => page.getByTestId('view-range')
  .evaluate((e) => [Number(e.dataset.startNs), Number(e.dataset.endNs)]);
const lanes = (page) => page.getByTestId('timeline')
  .evaluate((e) => ({ y: Number(e.dataset.scrollY), max: Number(e.dataset.scrollMax) }));
const pageY = (page) => page.evaluate(() => window.scrollY);
const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

for (const [width, height] of SIZES) {
  test(`${width}x${height}: the wheel over the timeline scrolls lanes then the page; Ctrl+wheel zooms; Shift+wheel pans`, async () => {
    const { page, errors } = await open(width, height);
    await loadExample(page, SEED);
    const canvas = page.getByTestId('timeline');
    await canvas.waitFor({ state: 'visible' });
    await screenshot(page, `pageux-wheel-before-${width}x${height}`);
    // The hint line names the conventions.
    const hint = await page.locator('.ts-tl-hint').textContent();
    assert.match(hint, /wheel: scroll/);
    assert.match(hint, /Ctrl\+wheel \/ W S: zoom/);
    assert.match(hint, /Shift\+wheel: pan/);

    // Put the canvas's top near the top of the viewport.
    await page.evaluate(() => {
      const c = document.querySelector('[data-testid=timeline]');
      window.scrollTo(0, c.getBoundingClientRect().top + window.scrollY - 80);
    });
    await frame(page);
    const box = await canvas.boundingBox();
    const x = box.x + 180 + (box.width - 190) / 2;
    const y = box.y + Math.min(box.height / 2, 150);
    await page.mouse.move(x, y);
    const r0 = await viewRange(page);
    const l0 = await lanes(page);
    const p0 = await pageY(page);

    // Plain wheel down: the lanes scroll while they can (the page stays),
    // then the page scrolls; the time range never changes.
    let sawLanes = false;
    for (let i = 0; i < 40; i += 1) {
      const before = await lanes(page);
      const py = await pageY(page);
      await page.mouse.wheel(0, 100);
      await frame(page);
      const after = await lanes(page);
      if (after.y > before.y) {
        sawLanes = true;
        assert.equal(await pageY(page), py, 'the page stays while the lanes scroll');
      }
      if (await pageY(page) > p0) break;
    }
    assert.ok(await pageY(page) > p0, 'the plain wheel scrolled the page past the timeline');
    const l1 = await lanes(page);
    assert.ok(l0.max > 0, 'this example has more lanes than shown at once');
    assert.ok(sawLanes, `the lanes (${l0.max} px more) scrolled with the plain wheel`);
    assert.ok(l1.y >= l1.max - 1, 'the page scrolls once the lanes are at their bottom');
    assert.deepEqual(await viewRange(page), r0, 'the plain wheel does not zoom');

    // Ctrl+wheel over the canvas zooms (and does not scroll the page).
    await page.evaluate((y0) => window.scrollTo(0, y0), p0);
    await frame(page);
    await page.mouse.move(x, y);
    const p1 = await pageY(page);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -400);
    await page.keyboard.up('Control');
    await page.waitForFunction(([a, b]) => {
      const e = document.querySelector('[data-testid=view-range]');
      return Number(e.dataset.endNs) - Number(e.dataset.startNs) < b - a;
    }, r0);
    const r1 = await viewRange(page);
    assert.ok(r1[1] - r1[0] < (r0[1] - r0[0]) / 2, 'Ctrl+wheel zoomed in');
    assert.equal(await pageY(page), p1, 'Ctrl+wheel does not scroll the page');

    // Shift+wheel pans: same width, later start.
    await page.keyboard.down('Shift');
    await page.mouse.wheel(0, 100);
    await page.keyboard.up('Shift');
    await page.waitForFunction((a) => Number(document.querySelector('[data-testid=view-range]').dataset.startNs) !== a, r1[0]);
    const r2 = await viewRange(page);
    assert.ok(r2[0] > r1[0], `Shift+wheel panned ${r1[0]} -> ${r2[0]}`);
    assert.ok(Math.abs((r2[1] - r2[0]) - (r1[1] - r1[0])) <= 2, 'the width is kept');
    await screenshot(page, `pageux-wheel-after-${width}x${height}`);
    assert.deepEqual(errors, []);
    await page.close();
  });
}

/** Whether the element named by `testid` lies wholly inside the viewport. */
const inViewport = (page, testid) => page.getByTestId(testid).first().evaluate((e) => {
  const r = e.getBoundingClientRect();
  return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;
});

/** A full-viewport (not full-page) screenshot: what the user sees. */
async function viewShot(page, name) {
  fs.mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

for (const [width, height] of SIZES) {
  test(`${width}x${height}: after an example or Simulate the result is on screen; a settings edit leaves the page still; Configure folds`, async () => {
    const { page, errors } = await open(width, height);
    await page.evaluate(() => window.scrollTo(0, 0));
    await loadExample(page, 'simai_llama65b_tp8_pp4_vpp8.txt');
    await page.getByTestId('iteration-time').waitFor();
    assert.ok(await inViewport(page, 'iteration-time'), 'the iteration time is in view after an example');
    await viewShot(page, `pageux-result-in-view-${width}x${height}`);

    // Back to the top, Simulate (in the Configure column): the result comes into view again.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.getByTestId('simulate').click();
    await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: 'Run 2 done' }).waitFor();
    assert.ok(await inViewport(page, 'iteration-time'), 'the iteration time is in view after Simulate');

    // A settings edit re-runs where the user is: no jump.
    await page.getByTestId('setting-micro_batches').scrollIntoViewIfNeeded();
    const y0 = await page.evaluate(() => window.scrollY);
    await page.getByTestId('setting-micro_batches').fill('2');
    await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: 'Run 3 done' }).waitFor();
    assert.equal(await page.evaluate(() => window.scrollY), y0, 'a settings edit does not scroll');

    // Fold the Configure column: the results get (almost) the page's width.
    const w0 = (await page.getByTestId('results').boundingBox()).width;
    await page.getByTestId('config-toggle').click();
    assert.equal(await page.getByTestId('config-toggle').getAttribute('aria-expanded'), 'false');
    assert.equal(await page.getByTestId('setting-micro_batches').count(), 0);
    const w1 = (await page.getByTestId('results').boundingBox()).width;
    assert.ok(w1 > w0 + 250, `the results widen when Configure folds (${w0} -> ${w1} px)`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await viewShot(page, `pageux-config-folded-${width}x${height}`);
    await page.getByTestId('config-toggle').click();
    assert.equal(await page.getByTestId('setting-micro_batches').inputValue(), '2', 'the settings are kept');
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('1280x720: a clicked sweep row\'s result is scrolled into view', async () => {
  const { page, errors } = await open(1280, 720);
  await page.getByTestId('job-model').selectOption('llama3-8b');
  await page.getByTestId('job-gbs').fill('16');
  await waitDone(page);
  const view = page.getByTestId('sweep-view');
  await view.getByTestId('sweep-toggle').click();
  // Each bound's default is shown whole under its box, not cut off.
  const hints = await view.getByTestId('sweep-bound-hint').evaluateAll((hs) => hs.map((h) => [h.textContent, h.scrollWidth <= h.clientWidth + 1]));
  assert.ok(hints.length >= 9);
  for (const [text, whole] of hints) assert.ok(whole, `hint "${text}" is cut off`);
  await view.scrollIntoViewIfNeeded();
  await viewShot(page, 'pageux-sweep-form-1280x720');
  for (const [k, v] of Object.entries({ world: '8', tp: '2,4', pp: '1,2', mbs: '1', recompute: 'selective', schedule: '1f1b,gpipe' })) {
    await page.getByTestId(`sweep-${k}`).fill(v);
  }
  await page.getByTestId('sweep-run').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="sweep-table"]')?.dataset.partial === 'false',
    null, { timeout: 120000 });
  // Round ticks on both axes, and the table's times in the winner line's unit.
  for (const id of ['sweep-x-tick', 'sweep-y-tick']) {
    const ticks = (await view.getByTestId(id).allTextContents()).map(Number);
    assert.ok(ticks.length >= 3, id);
    const step = ticks[1] - ticks[0];
    const mag = 10 ** Math.floor(Math.log10(step));
    assert.ok([1, 2, 5, 10].some((f) => Math.abs(step - f * mag) < 1e-9 * mag), `${id} step ${step}`);
    ticks.forEach((t, i) => assert.ok(Math.abs(t - ticks[0] - i * step) < 1e-6 * Math.max(1, step), `${id} evenly spaced`));
  }
  assert.match(await view.getByTestId('sweep-explain').textContent(), / ms -> [\d.]+ ms/);
  assert.match(await page.locator('[data-testid="sweep-table"] tbody tr').first().innerText(), /\d+\.\d ms/);
  await view.getByTestId('sweep-plot').scrollIntoViewIfNeeded();
  await viewShot(page, 'pageux-sweep-plot-1280x720');
  const runs = Number((await page.getByTestId('run-status').textContent()).match(/Run (\d+)/)[1]);
  await page.locator('[data-testid="sweep-table"] tbody tr').nth(1).click();
  await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: `Run ${runs + 1} done` }).waitFor();
  assert.ok(await inViewport(page, 'iteration-time'), 'the picked row\'s iteration time is in view');
  await viewShot(page, 'pageux-sweep-pick-in-view-1280x720');
  assert.deepEqual(errors, []);
  await page.close();
});

/** Per-figure rule of the colours: [the delta text, the verdict] for every
 * compare row that has a difference. */
const diffRows = (page, scope) => page.locator(`${scope} [data-testid="compare-row"]`).evaluateAll((rows) => rows
  .map((r) => ({
    key: r.dataset.key,
    delta: r.querySelector('[data-testid=compare-delta]').textContent,
    pct: r.querySelector('[data-testid=compare-pct]').textContent,
    verdict: r.querySelector('[data-testid=compare-delta]').dataset.verdict,
    color: getComputedStyle(r.querySelector('[data-testid=compare-delta]')).color,
  }))
  .filter((r) => r.delta !== '—'));

const COLOURS = { better: 'rgb(0, 102, 74)', worse: 'rgb(176, 0, 32)', fair: 'rgb(138, 90, 0)' };

test('1440x900: measured vs simulated is coloured by the size of the error, not its sign', async () => {
  const { page, errors } = await open(1440, 900);
  await loadExample(page, 'optimus_prime_llama1b_pp8_train.log');
  const rows = await diffRows(page, '.measured');
  assert.ok(rows.length > 0, 'measured figures to compare');
  for (const r of rows) {
    const m = r.pct.match(/^([+−]?)([\d.]+) %$/);
    if (!m) continue;
    const err = Number(m[2]);
    const want = err <= 10 ? 'better' : err <= 25 ? 'fair' : 'worse';
    assert.equal(r.verdict, want, `${r.key}: ${r.pct} off the measurement`);
    assert.equal(r.color, COLOURS[want], `${r.key}: colour`);
  }
  assert.match(await page.getByTestId('measured-legend').textContent(), /green within 10 %.*amber within 25 %.*red further off/);
  await page.locator('.measured').scrollIntoViewIfNeeded();
  await viewShot(page, 'pageux-measured-colours-1440x900');
  assert.deepEqual(errors, []);
  await page.close();
});

test('1280x720: Compare A vs B colours each change by whether it is better for that figure', async () => {
  const { page, errors } = await open(1280, 720);
  await page.getByTestId('job-model').selectOption('llama3-8b');
  await page.getByTestId('job-gbs').fill('16');
  await waitDone(page);
  await page.getByTestId('compare-pin').click();
  await page.getByTestId('compare').waitFor();
  const runs = Number((await page.getByTestId('run-status').textContent()).match(/Run (\d+)/)[1]);
  await page.getByTestId('job-gbs').fill('64');
  await page.locator('[data-testid="run-status"][data-state="done"]', { hasText: `Run ${runs + 1} done` }).waitFor();
  await page.locator('[data-testid="compare-row"][data-key="iteration_time"]').waitFor();
  const rows = await diffRows(page, '[data-testid=compare]');
  const seen = new Set();
  for (const r of rows) {
    const up = r.delta.startsWith('+');
    const down = r.delta.startsWith('−');
    if (!up && !down) { assert.equal(r.verdict, 'same', `${r.key}: no change`); continue; }
    // Time and memory down is good; MFU (pts), TFLOP/s and tokens/s up is good.
    let higherBetter;
    if (/(TFLOP\/s|tokens\/s)$/.test(r.delta) || (r.key === 'mfu')) higherBetter = true;
    else if (/(s|B)$/.test(r.delta)) higherBetter = false;
    else continue;
    const want = up === higherBetter ? 'better' : 'worse';
    assert.equal(r.verdict, want, `${r.key}: ${r.delta}`);
    assert.equal(r.color, COLOURS[want], `${r.key}: colour`);
    seen.add(want);
  }
  assert.ok(rows.some((r) => r.key === 'iteration_time' && r.verdict === 'worse'), 'a longer iteration is worse');
  assert.ok(seen.size >= 1);
  await page.getByTestId('compare').scrollIntoViewIfNeeded();
  await viewShot(page, 'pageux-compare-colours-1280x720');
  assert.deepEqual(errors, []);
  await page.close();
});

test('1440x900: the sweep table says "Rows 1–50 of N" and pages through every row', async () => {
  const { page, errors } = await open(1440, 900);
  await page.getByTestId('job-model').selectOption('llama3-8b');
  await page.getByTestId('job-gbs').fill('64');
  await waitDone(page);
  await page.getByTestId('sweep-toggle').click();
  for (const [k, v] of Object.entries({ world: '16', mbs: '1,2' })) await page.getByTestId(`sweep-${k}`).fill(v);
  await page.getByTestId('sweep-run').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="sweep-table"]')?.dataset.partial === 'false',
    null, { timeout: 240000 });
  const total = Number(await page.getByTestId('sweep-table').getAttribute('data-rows'));
  assert.ok(total > 50, `${total} rows: more than one page`);
  const label = page.getByTestId('sweep-page');
  assert.equal((await label.textContent()).trim(), `Rows 1–50 of ${total}`);
  const configs = async () => page.locator('[data-testid="sweep-table"] tbody tr')
    .evaluateAll((rows) => rows.map((r) => [r.cells[0].textContent, r.dataset.config]));
  const first = await configs();
  assert.equal(first.length, 50);
  await page.getByTestId('sweep-next').click();
  const second = await configs();
  assert.equal(second[0][0], '51', 'the second page starts at rank 51');
  assert.equal(second.length, Math.min(50, total - 50));
  assert.equal((await label.textContent()).trim(), `Rows 51–${50 + second.length} of ${total}`);
  assert.ok(!second.some(([, c]) => first.some(([, f]) => f === c)), 'no row on both pages');
  await page.getByTestId('sweep-view').scrollIntoViewIfNeeded();
  await screenshot(page, 'pageux-sweep-page-2');
  await page.getByTestId('sweep-prev').click();
  assert.deepEqual(await configs(), first);
  // The whole table fits the page's width at 1440 px (the pin column too).
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
  assert.deepEqual(errors, []);
  await page.close();
});

for (const [width, height] of SIZES) {
  test(`${width}x${height}: one settings model: a described job's GPU, layout and interleaved schedule show in Configure, read-only and labelled, and run as the CLI's`, async () => {
    const { page, errors } = await open(width, height);
    await page.getByTestId('job-model').selectOption('llama3-8b');
    await page.getByTestId('job-gpu').selectOption('A100-80G');
    for (const [k, v] of [['tp', '2'], ['pp', '4'], ['dp', '2'], ['gbs', '32'], ['vpp', '2']]) {
      await page.getByTestId(`job-${k}`).fill(v);
    }
    await settled(page);
    // Configure shows the job's values, not stale ones, labelled, and not
    // as tab stops: its layout, its GPU (the one GPU choice on the page)
    // and the interleaved schedule its virtual stages select.
    for (const [key, want, from] of [['world', '16', /from the job/], ['tp', '2', /from the job/], ['pp', '4', /from the job/],
      ['virtual_stages', '2', /from the job/], ['micro_batches', '16', /from the job/],
      ['gpu', 'A100-80G', /the job's GPU/], ['schedule', 'Interleaved 1F1B', /from the job's 2 virtual stages/]]) {
      const input = page.getByTestId(`setting-${key}`);
      assert.equal(await input.inputValue(), want, key);
      assert.ok(await input.evaluate((e) => e.readOnly), `${key} is read-only`);
      assert.equal(await input.getAttribute('tabindex'), '-1');
      assert.match(await page.locator(`.setting[data-field="${key}"] [data-testid=from-job]`).textContent(), from);
    }
    // The NVLink bandwidth is the job's GPU's (A100: 240 GB/s), said so,
    // and still editable (as --nvlink-gbps wins over --gpu-type).
    const nvlink = page.getByTestId('setting-nvlink_gbps');
    assert.equal(await nvlink.inputValue(), '240');
    assert.ok(!(await nvlink.evaluate((e) => e.readOnly)));
    assert.match(await page.getByTestId('from-job-gpu').textContent(), /the job's A100-80G/);
    assert.equal(await page.getByTestId('field-error').count(), 0);
    assert.doesNotMatch(await page.getByTestId('run-status').textContent(), /failed/);
    // What Configure shows is what ran: the CLI's numbers for the same job.
    const want = cli(['--model', 'llama3-8b', '--gpu-type', 'A100-80G', '--tp', '2', '--pp', '4', '--dp', '2',
      '--global-batch-size', '32', '--vpp', '2']);
    assert.equal(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')), want.iteration_time_ns);
    await page.locator('aside.config').scrollIntoViewIfNeeded();
    await viewShot(page, `pageux-job-in-configure-${width}x${height}`);

    // No dead end: without virtual stages, the interleaved schedule picked
    // in Configure is an error at the schedule (editable), not at the
    // read-only virtual stages; picking another schedule clears it.
    await page.getByTestId('job-vpp').fill('1');
    await settled(page);
    const schedule = page.getByTestId('setting-schedule');
    await schedule.selectOption('interleaved');
    const err = page.locator('[data-testid=field-error]');
    assert.equal(await err.count(), 1);
    assert.equal(await err.getAttribute('data-field'), 'schedule');
    assert.match(await err.textContent(), /set the job's virtual stages in Describe a job, or pick another schedule/);
    assert.ok(await schedule.isEditable(), 'the field in error can be changed');
    await page.locator('aside.config').scrollIntoViewIfNeeded();
    await viewShot(page, `pageux-job-schedule-error-${width}x${height}`);
    await schedule.selectOption('1f1b');
    assert.equal(await err.count(), 0);
    assert.ok(await page.getByTestId('simulate').isEnabled(), 'Simulate enabled again');
    assert.deepEqual(errors, []);
    await page.close();
  });
}

test('1280x720: Compare schedules counts each stage\'s whole memory, marks the schedules that do not fit the GPU, and keeps its speed-up and pin columns on screen', async () => {
  const { page, errors } = await open(1280, 720);
  await page.getByTestId('job-model').selectOption('llama3-8b');
  for (const [k, v] of [['pp', '8'], ['dp', '2'], ['gbs', '128']]) await page.getByTestId(`job-${k}`).fill(v);
  await settled(page, { timeout: 60000 });
  await page.getByTestId('schedule-compare-run').click();
  const table = page.getByTestId('schedule-compare-table');
  await table.waitFor({ timeout: 120000 });
  await settled(page, { timeout: 120000 });
  // The core's memory model per stage, the CLI's: GPipe holds all 64
  // micro-batches' activations and does not fit an 80 GB GPU; 1F1B does.
  const memory = (s) => table.locator(`tr[data-schedule="${s}"] [data-testid=schedule-memory]`);
  const want = (s) => cli(['--model', 'llama3-8b', '--pp', '8', '--dp', '2', '--global-batch-size', '128', '--schedule', s]).memory;
  for (const s of ['gpipe', '1f1b']) {
    const w = want(s);
    assert.deepEqual((await memory(s).getAttribute('data-bytes')).split(',').map(Number), w.per_stage.map((x) => x.peak_bytes), s);
    assert.equal(await memory(s).getAttribute('data-fits'), String(w.fits), s);
  }
  assert.equal(await memory('gpipe').getAttribute('data-fits'), 'false');
  assert.match(await table.locator('tr[data-schedule="gpipe"]').getAttribute('class'), /no-fit/);
  assert.equal(await table.locator('tr[data-schedule="gpipe"] [data-testid=schedule-no-fit]').count(), 1);
  assert.equal(await table.locator('tr[data-schedule="1f1b"] [data-testid=schedule-no-fit]').count(), 0);
  // Eight stages show as their largest, the title lists them all.
  assert.match(await memory('gpipe').innerText(), /^max [\d.]+ GiB \(stage \d\)/);
  assert.match(await memory('gpipe').getAttribute('title'), /stage 0 first: .* · .* · .* · .* · .* · .* · .* · .*GiB/);
  // No horizontal scroll: the speed-up and the pin button are on screen.
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the page does not scroll sideways');
  assert.ok(await page.locator('.schedule-table-wrap').evaluate((e) => e.scrollWidth <= e.clientWidth), 'the table does not scroll sideways');
  for (const id of ['schedule-speedup', 'schedule-compare-pin']) {
    const box = await table.getByTestId(id).first().boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 1280, `${id} is within the 1280 px width`);
  }
  // Times on one line: each bubble and time cell's text is one line box.
  const lines = await table.locator('td.num').evaluateAll((cells) => cells.map((c) => {
    const r = document.createRange(); r.selectNodeContents(c);
    return [c.textContent, new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size];
  }));
  assert.ok(lines.length >= 18, `${lines.length} cells`);
  for (const [text, n] of lines) assert.equal(n, 1, `"${text}" wraps over ${n} lines`);
  await table.scrollIntoViewIfNeeded();
  await viewShot(page, 'pageux-schedules-memory-1280x720');
  assert.deepEqual(errors, []);
  await page.close();
});

test('1280x720: a dropped config.json starts from the fewest GPUs it fits on, says so, and runs as the CLI', async () => {
  const { page, errors } = await open(1280, 720);
  const file = path.join(root, 'tests', 'fixtures', 'hf', 'llama3_8b.json');
  await page.getByTestId('file-input').setInputFiles(file);
  const note = page.getByTestId('job-start-note');
  await note.waitFor({ timeout: 60000 });
  await settled(page, { timeout: 60000 });
  const m = (await note.textContent()).match(/^Starting layout: TP (\d+) · PP (\d+) · DP (\d+) on (\d+) × H100-SXM, the fewest GPUs/);
  assert.ok(m, await note.textContent());
  const [tp, pp, dp, world] = m.slice(1).map(Number);
  assert.equal(tp * pp * dp, world);
  assert.ok(world > 1, 'Llama 3 8B with Adam does not fit one 80 GB GPU');
  // The panel holds that layout, and its memory fits.
  assert.equal(await page.getByTestId('job-tp').inputValue(), String(tp));
  assert.equal(await page.getByTestId('job-pp').inputValue(), String(pp));
  assert.equal(await page.getByTestId('job-dp').inputValue(), String(dp));
  assert.doesNotMatch(await page.locator('.results').first().innerText(), /does not fit/);
  // The page's CLI line gives the page's numbers.
  const line = (await page.getByTestId('job-cli').textContent()).trim().split(/\s+/);
  assert.deepEqual(line.slice(0, 2), ['trainscope', 'simulate']);
  const args = line.slice(2).map((a) => (a === 'llama3_8b.json' ? file : a));
  const want = cli(args);
  assert.equal(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')), want.iteration_time_ns);
  assert.ok(want.memory.fits);
  await page.getByTestId('job-panel').scrollIntoViewIfNeeded();
  await viewShot(page, 'pageux-config-start-layout-1280x720');
  assert.deepEqual(errors, []);
  await page.close();
});

test('1280x720: a run with no result says "Run N failed", not "done"', async () => {
  const { page, errors } = await open(1280, 720);
  await dropFiles(page, [{ name: 'empty.txt', bytes: '' }]);
  await page.locator('[data-testid="file-card"][data-file="empty.txt"]').waitFor();
  await waitDone(page);
  const status = (await page.getByTestId('run-status').textContent()).trim();
  assert.match(status, /^Run \d+ failed: each file.s card under Files says why$/);
  // The card says what is wrong in plain words.
  assert.match(await page.locator('[data-testid="file-card"][data-file="empty.txt"] [data-testid=error]').first().textContent(), /the file `empty\.txt` is empty/);
  assert.match(await page.locator(".results.empty").textContent(), /each file.s card under Files, below, says what is wrong/);
  await viewShot(page, 'pageux-run-failed-1280x720');
  // Console errors: none expected from an empty file.
  assert.deepEqual(errors, []);
  await page.close();
});

for (const [width, height] of SIZES) {
  test(`${width}x${height}: the results and the timeline take the width; the Configure column stays beside them instead of leaving a gutter`, async () => {
    const { page, errors } = await open(width, height);
    await loadExample(page, SEED);
    const canvas = page.getByTestId('timeline');
    await canvas.waitFor({ state: 'visible' });
    await page.evaluate(() => {
      const c = document.querySelector('[data-testid=timeline]');
      window.scrollTo(0, c.getBoundingClientRect().top + window.scrollY - 120);
    });
    await frame(page);
    const box = await canvas.boundingBox();
    const results = await page.getByTestId('results').boundingBox();
    // The Configure column is on screen beside the timeline (not an empty
    // column scrolled away above it).
    const config = await page.getByTestId('config-column').evaluate((e) => {
      const r = e.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, right: r.right };
    });
    await viewShot(page, `pageux-layout-${width}x${height}`);
    console.log(`${width}x${height}: timeline ${Math.round(box.width)} px, results ${Math.round(results.width)} px, config right ${Math.round(config.right)} px`);
    assert.ok(config.top <= 8 && config.bottom >= height - 8, `config column ${config.top}..${config.bottom}`);
    // The main column: the viewport less the page padding, the column and the gap.
    assert.ok(box.width >= width - config.right - 80, `timeline ${box.width} px of ${width}`);
    // 1280 px: the column narrows to 296 px (the timeline had ~860 px
    // beside the 340 px column; measured 902 px after).
    if (width === 1280) assert.ok(box.width >= 890, `timeline ${box.width} px of ${width}`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no sideways scroll');
    // Every control of the Configure form lies inside its column (at 1280 px
    // the form was once wider than the 296 px column and its inputs were cut).
    const clipped = await page.getByTestId('config-column').evaluate((col) => {
      const right = col.getBoundingClientRect().right;
      const cut = [...col.querySelectorAll('input, select, button')]
        .filter((e) => e.getBoundingClientRect().right > right + 0.5)
        .map((e) => e.name || e.dataset.testid || e.textContent);
      return { cut, scroll: col.scrollWidth, client: col.clientWidth };
    });
    assert.deepEqual(clipped.cut, [], `controls cut at the column's edge: ${clipped.cut.join(', ')}`);
    assert.ok(clipped.scroll <= clipped.client, `Configure ${clipped.scroll} px wide in a ${clipped.client} px column`);
    assert.deepEqual(errors, []);
    await page.close();
  });
}
