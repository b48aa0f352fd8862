// The timeline canvas end to end (issue 7), on the real app page (dist/):
// load the seed-000 example, simulate, and the `timeline` canvas appears;
// its pixels are not blank, a Ctrl+wheel event narrows `view-range`, hovering a
// drawn span shows the tooltip naming that span (the same span a click
// there selects), a drag pans; the keyboard moves the selection; a
// settings edit keeps a zoomed view. Screenshots go to
// target/e2e/timeline-*.png.
//
// To exercise the same checks on the benchmark page instead
// (target/bench-dist, seed 000 simulated in the page), run with
// TIMELINE_E2E_PAGE=bench.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, screenshot, dist, root, waitDone } from './harness.js';

/** Zoom with the wheel (Perfetto's convention, the page's: Ctrl+wheel
 * zooms; the plain wheel scrolls). */
async function zoomWheel(page, dy) {
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, dy);
  await page.keyboard.up('Control');
}


const onBench = process.env.TIMELINE_E2E_PAGE === 'bench';
const siteDir = onBench ? path.join(root, 'target', 'bench-dist') : dist;
const SEED = 'simai_llama65b_tp8_pp4_vpp8.txt';

const skip = fs.existsSync(path.join(siteDir, 'index.html')) ? false : `${path.relative(root, siteDir)}/ is not built`;

let site; let browser;
before(async () => { if (!skip) { site = await serve(siteDir); browser = await launch(); } });
after(async () => { if (!skip) { await browser.close(); site.server.close(); } });

/** Open the page and get a drawn timeline (example + simulate on the app). */
async function openTimeline(page) {
  if (onBench) {
    await page.goto(`${site.url}?seed=000`);
  } else {
    await page.goto(site.url);
    await page.getByTestId('example').filter({ hasText: SEED }).first().click();
    await page.getByTestId('simulate').click();
  }
  const canvas = page.getByTestId('timeline');
  await canvas.waitFor({ state: 'visible', timeout: 30000 });
  if (!onBench) {
    // Loading the example starts a run and Simulate another: the first
    // run's timeline may show while the second runs. Wait until the panel
    // draws the last run's (no aria-busy), so no new data replaces the
    // timeline (and clears the hover) in the middle of a test.
    await page.waitForFunction(() => {
      const p = document.querySelector('[data-testid=timeline-panel]');
      return p && !p.hasAttribute('aria-busy') && document.querySelector('[data-testid=timeline]');
    }, null, { timeout: 30000 });
  }
  await canvas.scrollIntoViewIfNeeded();
  return canvas;
}

/** Coloured (non-grey) pixels of the canvas's plot area, and one of them
 * (CSS px relative to the canvas) in the middle of a horizontal run of a
 * span: the rows of the activation memory lanes (`data-memory-rows`, CSS px
 * `top-bottom` pairs) are left out. */
function samplePixels(canvas) {
  return canvas.evaluate((c) => {
    const ctx = c.getContext('2d');
    const dpr = c.width / c.clientWidth;
    const left = Number(c.dataset.plotLeft || 180);
    const top = Number(c.dataset.rulerHeight || 24);
    const x0 = Math.ceil(left * dpr); const y0 = Math.ceil(top * dpr);
    const w = c.width - x0 - Math.ceil(12 * dpr); const h = c.height - y0;
    const d = ctx.getImageData(x0, y0, w, h).data;
    const memory = (c.dataset.memoryRows || '').split(',').filter((r) => r)
      .map((r) => r.split('-').map((v) => Number(v) * dpr));
    const inMemory = (y) => memory.some(([a, b]) => y0 + y >= a - 1 && y0 + y <= b + 1);
    const coloured = (i) => {
      const r = d[i]; const g = d[i + 1]; const b = d[i + 2];
      return Math.max(r, g, b) - Math.min(r, g, b) > 40;
    };
    let count = 0; let best = null; let bestRun = 0;
    for (let y = 0; y < h; y += 1) {
      if (inMemory(y)) continue;
      let run = 0;
      for (let x = 0; x < w; x += 1) {
        if (coloured((y * w + x) * 4)) {
          count += 1; run += 1;
          if (run > bestRun) { bestRun = run; best = { x: (x0 + x - run / 2) / dpr, y: (y0 + y) / dpr }; }
        } else run = 0;
      }
    }
    return { count, area: w * h, point: best, run: bestRun / dpr };
  });
}

/** Wait until the timeline canvas has drawn coloured spans (and, given
 * `runs`, shows those run labels). */
async function waitDrawn(page, runs = null) {
  await page.waitForFunction((want) => {
    const c = document.querySelector('[data-testid=timeline]');
    if (!c || !c.width || (want !== null && c.dataset.runs !== want)) return false;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 40) n += 1;
    }
    return n > 2000;
  }, runs, { timeout: 20000 });
}

const viewRange = (page) => page.getByTestId('view-range')
  .evaluate((e) => [Number(e.dataset.startNs), Number(e.dataset.endNs)]);

test('the timeline draws, zooms with the wheel, shows a tooltip on hover and pans by dragging',
  { skip }, async () => {
    const { page, errors } = await newPage(browser.context);
    const canvas = await openTimeline(page);
    // Not blank: wait for a frame with coloured spans.
    await waitDrawn(page);
    const px = await samplePixels(canvas);
    assert.ok(px.count > px.area / 50, `coloured pixels ${px.count} of ${px.area}`);
    await screenshot(page, 'timeline-fit');

    const box = await canvas.boundingBox();
    const plotLeft = box.x + 180;
    const plotW = box.width - 190;
    const [s0, e0] = await viewRange(page);
    assert.equal(s0, 0);
    assert.ok(e0 > 0);

    // Wheel up at the middle of the plot: the range narrows around it.
    await page.mouse.move(plotLeft + plotW / 2, box.y + 40);
    await zoomWheel(page, -400);
    await page.waitForFunction(([a, b]) => {
      const e = document.querySelector('[data-testid=view-range]');
      return Number(e.dataset.endNs) - Number(e.dataset.startNs) < b - a;
    }, [s0, e0]);
    const [s1, e1] = await viewRange(page);
    assert.ok(e1 - s1 < (e0 - s0) / 2, `${s1}..${e1}`);
    assert.ok(s1 > s0 && e1 < e0);

    // Hover a drawn span: the tooltip names it.
    const px2 = await samplePixels(canvas);
    assert.ok(px2.point, 'a coloured pixel to hover');
    await page.mouse.move(box.x + px2.point.x, box.y + px2.point.y);
    const tip = page.getByTestId('tooltip');
    await tip.waitFor({ state: 'visible', timeout: 5000 });
    const name = (await tip.locator('.ts-tl-name').textContent()).trim();
    assert.ok(name.length > 0, 'the tooltip has a name');
    const text = await tip.textContent();
    for (const field of ['kind', 'lane', 'layer', 'micro-batch', 'start', 'duration', 'bytes', 'bandwidth']) {
      assert.ok(text.includes(field), `tooltip lacks ${field}: ${text}`);
    }
    // The tooltip names the span under the pointer: clicking there selects
    // a span (lane and index on the details panel) whose name, start and
    // duration are the tooltip's. Read before the screenshot: a full-page
    // screenshot resizes the viewport, and the synthetic pointer move after
    // that relayout may leave the span.
    const field = async (loc, key) => loc.locator('dt', { hasText: new RegExp(`^${key}$`) })
      .locator('xpath=following-sibling::dd[1]').textContent();
    const tipStart = await field(tip, 'start');
    const tipDuration = await field(tip, 'duration');
    await screenshot(page, 'timeline-hover');
    await page.mouse.down(); await page.mouse.up();
    const details = page.getByTestId('timeline-details');
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-details]').dataset.lane !== undefined);
    assert.equal((await details.locator('.ts-tl-name').textContent()).trim(), name);
    assert.equal(await field(details, 'start'), tipStart);
    assert.equal(await field(details, 'duration'), tipDuration);
    await page.keyboard.press('Escape');

    // Drag left by 200 px: later times, same width.
    const x0 = plotLeft + plotW / 2; const y0 = box.y + 60;
    await page.mouse.move(x0, y0);
    await page.mouse.down();
    for (let i = 1; i <= 10; i += 1) await page.mouse.move(x0 - 20 * i, y0);
    await page.mouse.up();
    await page.waitForFunction((a) => Number(document.querySelector('[data-testid=view-range]').dataset.startNs) !== a, s1);
    const [s2, e2] = await viewRange(page);
    assert.ok(s2 > s1, `drag moved ${s1} -> ${s2}`);
    assert.ok(Math.abs((e2 - s2) - (e1 - s1)) <= 2, 'the width is kept');
    const expected = 200 * (e1 - s1) / plotW;
    assert.ok(Math.abs((s2 - s1) - expected) / expected < 0.05, `moved ${s2 - s1} ns, expected about ${expected}`);
    await screenshot(page, 'timeline-panned');

    // A drag right after a wheel zoom pans, every time (it once failed in
    // about 1 run of 3): 12 rounds of zoom then drag, each must move. Zoom
    // in and out and drag left and right in turn, so the view never reaches
    // an end of the iteration (where a pan has no room).
    for (let round = 0; round < 12; round += 1) {
      const [a0, b0] = await viewRange(page);
      await page.mouse.move(plotLeft + plotW / 2, y0);
      await zoomWheel(page, round % 2 === 0 ? -120 : 120);
      await page.waitForFunction(([a, b]) => {
        const e = document.querySelector('[data-testid=view-range]');
        return Number(e.dataset.startNs) !== a || Number(e.dataset.endNs) !== b;
      }, [a0, b0]);
      const [a1] = await viewRange(page);
      const step = round % 4 < 2 ? -20 : 20; // left: later times; right: earlier
      await page.mouse.down();
      for (let i = 1; i <= 5; i += 1) await page.mouse.move(plotLeft + plotW / 2 + step * i, y0);
      await page.mouse.up();
      await page.waitForFunction((a) => Number(document.querySelector('[data-testid=view-range]').dataset.startNs) !== a, a1, { timeout: 3000 })
        .catch(() => {});
      const [a2] = await viewRange(page);
      assert.ok(step < 0 ? a2 > a1 : a2 < a1, `round ${round}: the drag after a zoom panned (${a1} -> ${a2})`);
    }
    assert.deepEqual(errors, []);
  });


test('a measured Echo run shows measured and simulated timelines on one axis; Optimus-Prime and NeuSight draw',
  { skip: skip || onBench }, async () => {
    const { page, errors } = await newPage(browser.context);
    await page.goto(site.url);
    await page.getByTestId('example').filter({ hasText: 'echo_megatron_trace' }).click();
    await waitDone(page);
    const select = page.getByTestId('timeline-view');
    assert.equal(await select.inputValue(), 'measured-vs-simulated');
    await waitDrawn(page, 'measured,simulated');
    await page.getByTestId('timeline').scrollIntoViewIfNeeded();
    await screenshot(page, 'timeline-measured-vs-simulated');
    await select.selectOption('measured');
    await waitDrawn(page, 'measured');
    await select.selectOption('simulated');
    await waitDrawn(page, 'simulated');
    for (const example of ['optimus_prime', 'neusight']) {
      await page.getByRole('button', { name: 'Clear all' }).click();
      await page.getByTestId('example').filter({ hasText: example }).click();
      await waitDone(page);
      const runs = await page.getByTestId('timeline').getAttribute('data-runs', { timeout: 20000 });
      assert.ok(runs === 'simulated' || runs === 'measured,simulated', `${example}: ${runs}`);
      await waitDrawn(page, runs);
      await page.getByTestId('timeline').scrollIntoViewIfNeeded();
      await screenshot(page, `timeline-${example}`);
    }
    assert.deepEqual(errors, []);
  });

test('compare mode: the pinned run A and this run B share one time axis; keys zoom, pan and fit',
  { skip: skip || onBench }, async () => {
    const { page, errors } = await newPage(browser.context);
    await page.goto(site.url);
    await page.getByTestId('example').filter({ hasText: SEED }).click();
    await waitDone(page);
    await waitDrawn(page, 'simulated');
    assert.equal(await page.getByTestId('timeline-view').count(), 0, 'one run: nothing to choose');
    await page.getByTestId('compare-pin').click();
    const field = page.getByTestId('setting-micro_batches');
    await field.fill('4');
    await page.getByTestId('compare-row').first().waitFor();
    await waitDone(page);
    assert.equal(await page.getByTestId('timeline-view').inputValue(), 'a-vs-b');
    await waitDrawn(page, 'A (pinned),B (this run)');
    // The shared axis spans the longer run: B (4 micro-batches) is longer than A.
    const bNs = Number(await page.getByTestId('iteration-time').getAttribute('data-ns'));
    const [s0, e0] = await viewRange(page);
    assert.equal(s0, 0);
    assert.ok(e0 >= bNs, `the axis ${e0} covers B's ${bNs} ns`);
    await page.getByTestId('timeline').scrollIntoViewIfNeeded();
    await screenshot(page, 'timeline-a-vs-b');

    // Keyboard: W zooms in, D pans right, F fits again.
    await page.locator('.ts-timeline').focus();
    await page.keyboard.press('w');
    await page.waitForFunction((w) => {
      const e = document.querySelector('[data-testid=view-range]');
      return Number(e.dataset.endNs) - Number(e.dataset.startNs) < w;
    }, e0 - s0);
    const [s1, e1] = await viewRange(page);
    await page.keyboard.press('d');
    await page.waitForFunction((a) => Number(document.querySelector('[data-testid=view-range]').dataset.startNs) > a, s1);
    const [s2, e2] = await viewRange(page);
    assert.ok(Math.abs((e2 - s2) - (e1 - s1)) <= 2, 'panning keeps the width');
    await page.keyboard.press('f');
    await page.waitForFunction((e) => Number(document.querySelector('[data-testid=view-range]').dataset.endNs) === e, e0);
    assert.deepEqual(await viewRange(page), [s0, e0]);
    assert.deepEqual(errors, []);
  });

test('eight Echo rank files form one measured run: eight rank groups, measured and simulated',
  { skip: skip || onBench }, async () => {
    // The seed is rank 7 (stage 3) of a TP 2 x PP 4 job; ranks 0-6 are made
    // from it (rank r runs stage r / 2 in Megatron order).
    const seed = fs.readFileSync(path.join(root, 'tests', 'fixtures', 'seeds', 'echo_megatron_trace_rank7_tp2_pp4.txt'), 'utf8');
    const files = [...Array(8).keys()].map((r) => ({
      name: `wd8_tp2_pp4_numl4_bs2_rank${r}_job.txt`,
      mimeType: 'text/plain',
      buffer: Buffer.from(seed.replace(/^rank:7:/gm, `rank:${r}:`).replace(/stage_id=3/g, `stage_id=${r >> 1}`)),
    }));
    const { page, errors } = await newPage(browser.context);
    await page.goto(site.url);
    await page.getByTestId('file-input').setInputFiles(files);
    await waitDone(page);
    await waitDrawn(page, 'measured,simulated');
    const groups = (await page.getByTestId('timeline').getAttribute('data-groups')).split('|');
    const measured = groups.filter((g) => g.startsWith('0:')).map((g) => g.slice(2));
    const simulated = groups.filter((g) => g.startsWith('1:')).map((g) => g.slice(2));
    assert.equal(measured.length, 8, `measured groups: ${measured}`);
    assert.equal(simulated.length, 8, `simulated groups: ${simulated}`);
    for (let r = 0; r < 8; r += 1) {
      assert.ok(measured.some((g) => g.startsWith(`rank ${r} `)), `rank ${r} in ${measured}`);
    }
    const warnings = await page.getByTestId('warning').allTextContents();
    assert.ok(!warnings.some((w) => /missing/.test(w)), `no rank is missing: ${warnings}`);
    await page.getByTestId('timeline').scrollIntoViewIfNeeded();
    await screenshot(page, 'timeline-echo-8-ranks');
    assert.deepEqual(errors, []);
  });

const selected = (page) => page.getByTestId('timeline-details')
  .evaluate((e) => (e.dataset.lane === undefined ? null : [Number(e.dataset.lane), Number(e.dataset.index)]));

test('the keyboard selects spans: arrows move along a lane and between lanes, Enter opens the details, Escape clears',
  { skip }, async () => {
    const { page, errors } = await newPage(browser.context);
    await openTimeline(page);
    await waitDrawn(page);
    assert.equal(await selected(page), null);
    const hint = await page.locator('.ts-tl-hint').textContent();
    for (const k of ['arrows', 'Enter', 'C:', 'Esc']) assert.ok(hint.includes(k), `hint lacks ${k}: ${hint}`);
    await page.locator('.ts-timeline').focus();
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-details]').dataset.lane !== undefined);
    const [lane, i0] = await selected(page);
    const name0 = (await page.getByTestId('timeline-details').locator('.ts-tl-name').textContent()).trim();
    assert.ok(name0.length > 0);
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((i) => Number(document.querySelector('[data-testid=timeline-details]').dataset.index) === i, i0 + 1);
    assert.deepEqual(await selected(page), [lane, i0 + 1]);
    await page.keyboard.press('ArrowLeft');
    await page.waitForFunction((i) => Number(document.querySelector('[data-testid=timeline-details]').dataset.index) === i, i0);
    await page.keyboard.press('ArrowDown');
    await page.waitForFunction((l) => Number(document.querySelector('[data-testid=timeline-details]').dataset.lane) !== l, lane);
    const [lane2] = await selected(page);
    assert.notEqual(lane2, lane);
    await page.keyboard.press('ArrowUp');
    await page.waitForFunction((l) => Number(document.querySelector('[data-testid=timeline-details]').dataset.lane) === l, lane);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.dataset?.testid === 'timeline-details');
    assert.ok((await page.getByTestId('timeline-details').textContent()).includes('Waited for'));
    await screenshot(page, 'timeline-keyboard');
    // C collapses the selected span's group (the canvas gets shorter).
    const h0 = await page.getByTestId('timeline').evaluate((c) => c.clientHeight);
    await page.keyboard.press('c');
    await page.waitForFunction((h) => document.querySelector('[data-testid=timeline]').clientHeight < h, h0);
    await page.keyboard.press('c');
    await page.waitForFunction((h) => document.querySelector('[data-testid=timeline]').clientHeight === h, h0);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => document.querySelector('[data-testid=timeline-details]').dataset.lane === undefined);
    assert.deepEqual(errors, []);
  });

test('a settings edit re-simulates the same job and keeps the zoomed view',
  { skip: skip || onBench }, async () => {
    const { page, errors } = await newPage(browser.context);
    const canvas = await openTimeline(page);
    await waitDone(page);
    await waitDrawn(page);
    const box = await canvas.boundingBox();
    await page.mouse.move(box.x + 180 + (box.width - 190) * 0.3, box.y + 40);
    await zoomWheel(page, -400);
    await page.waitForFunction(() => Number(document.querySelector('[data-testid=view-range]').dataset.startNs) > 0);
    const [s1, e1] = await viewRange(page);
    const ns0 = await page.getByTestId('iteration-time').getAttribute('data-ns');
    const field = page.getByTestId('setting-micro_batches');
    const mb = Number(await field.inputValue()) || 1;
    // More micro-batches: a longer iteration, so the window needs no clamp.
    await field.fill(String(mb * 2));
    await page.waitForFunction((old) => {
      const e = document.querySelector('[data-testid=iteration-time]');
      const st = document.querySelector('[data-testid=run-status]');
      return e && e.dataset.ns !== old && st && st.dataset.state === 'done';
    }, ns0, { timeout: 30000 });
    await waitDrawn(page);
    const ns1 = Number(await page.getByTestId('iteration-time').getAttribute('data-ns'));
    assert.ok(ns1 > Number(ns0), `the run got longer: ${ns0} -> ${ns1}`);
    assert.deepEqual(await viewRange(page), [s1, e1], 'the zoomed window is kept');
    await screenshot(page, 'timeline-after-settings-edit');
    assert.deepEqual(errors, []);
  });
