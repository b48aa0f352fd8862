// The app end to end: runs in the Web Worker (results appear, the page keeps
// drawing frames while a big file is parsed, cancel works), settings
// validation next to the field, the URL fragment restores the view after a
// reload, Compare, downloads, no request to another host, no console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { serve, launch, newPage, screenshot, seeds, root, waitDone, loadExample, bigWorkload, cli } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

const SEED000 = 'simai_llama65b_tp8_pp4_vpp8.txt';
const SEED001 = 'simai_405b_tp8_pp16_ga16_sp.txt';

/** A page that also records every request to a host other than the site's. */
async function open(url = site.url) {
  const { page, errors } = await newPage(browser.context);
  const foreign = [];
  const origin = new URL(site.url).origin;
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')) foreign.push(u);
  });
  await page.goto(url);
  // The app has started once its example gallery is rendered.
  await page.getByTestId('example').first().waitFor();
  return { page, errors, foreign };
}

/** The page's iteration time in ns (the `data-ns` attribute). */
async function iterationNs(page) {
  return Number(await page.getByTestId('iteration-time').getAttribute('data-ns'));
}

async function figure(page, key) {
  return page.locator(`[data-testid="figure"][data-key="${key}"]`).getAttribute('data-value');
}

test('an example simulates in the worker (event mode) and equals the CLI; chart, table, file card', async () => {
  const { page, errors, foreign } = await open();
  const t0 = Date.now();
  await page.getByTestId('example').filter({ hasText: SEED001 }).click();
  await page.locator('[data-testid="results"]').waitFor();
  console.log(`# figure: seed 001, click to first result: ${Date.now() - t0} ms`);
  await waitDone(page);
  const results = page.getByTestId('results');
  assert.equal(await results.getAttribute('data-kind'), 'event');
  // The page's defaults are the CLI's.
  const want = cli([path.join(seeds, SEED001)]);
  assert.equal(await iterationNs(page), want.iteration_time_ns);
  assert.equal(await figure(page, 'compute'), String(want.compute_ns));
  assert.equal(await figure(page, 'bubble'), String(want.bubble_ns));
  assert.match(await page.getByTestId('iteration-time').textContent(), /\d/);
  const card = page.locator(`[data-testid="file-card"][data-file="${SEED001}"]`);
  assert.equal(await card.getByTestId('format').textContent(), 'simai-workload');
  assert.equal(await card.getByTestId('world').textContent(), '1024');
  // Settings pre-filled from the header.
  assert.equal(await page.getByTestId('setting-world').inputValue(), '1024');
  assert.equal(await page.getByTestId('setting-tp').inputValue(), '8');
  assert.equal(await page.getByTestId('setting-pp').inputValue(), '16');
  assert.equal(await page.getByTestId('setting-micro_batches').inputValue(), '16');
  // The charts canvas has pixels that are not white.
  const inked = await page.getByTestId('charts').evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 200) n++; return n;
  });
  assert.ok(inked > 1000, `chart drawn (${inked} dark pixels)`);
  // The per-stage table sorts by a clicked header (descending on the second click).
  const table = page.getByTestId('table').last();
  const header = table.getByTestId('sort').filter({ hasText: /^compute/ });
  await header.click();
  await header.click();
  assert.equal(await table.locator('th[aria-sort="descending"]').count(), 1);
  assert.equal(await table.locator('tbody tr').count(), 16);
  await page.setViewportSize({ width: 1280, height: 720 });
  await screenshot(page, 'app-seed001-1280x720');
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.deepEqual(errors, []);
  assert.deepEqual(foreign, []);
});

test('seed 000: SimAI mode shows the reference total; event mode equals the CLI', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  const want = cli([path.join(seeds, SEED000)]);
  assert.equal(await iterationNs(page), want.iteration_time_ns);
  // The page's defaults with NVLink 360 GB/s are SimAI's reference flags for
  // r000 (-g 512 -nv 360 -nic 48.5 -n_p_s 8 -g_p_s 8).
  await page.getByTestId('setting-nvlink_gbps').fill('360');
  await page.getByTestId('mode').selectOption('simai');
  await page.locator('[data-testid="results"][data-kind="simai"]').waitFor();
  await waitDone(page);
  assert.equal(Math.floor(await iterationNs(page) / 1000), 534975);
  assert.match(await page.getByTestId('iteration-time').textContent(), /534\.9/);
  await screenshot(page, 'app-seed000-simai');
  assert.deepEqual(errors, []);
});

/** The figures both modes show, as the CLI's `--json` names them. */
async function pageFigures(page) {
  const out = { iteration_time_ns: await iterationNs(page) };
  for (const k of ['compute', 'bubble']) out[`${k}_ns`] = Number(await figure(page, k));
  out.exposed_comm_ns = {};
  // A dense job shows no expert groups (EP, DP_EP): they count as 0 there.
  for (const g of ['TP', 'EP', 'DP', 'DP_EP', 'PP']) {
    const shown = await page.locator(`[data-testid="figure"][data-key="comm.${g}"]`).count();
    if (!shown) assert.ok(g === 'EP' || g === 'DP_EP', `comm.${g} is shown`);
    out.exposed_comm_ns[g.toLowerCase()] = shown ? Number(await figure(page, `comm.${g}`)) : 0;
  }
  return out;
}

function cliFigures(want) {
  const e = want.exposed_comm_ns;
  return {
    iteration_time_ns: want.iteration_time_ns, compute_ns: want.compute_ns, bubble_ns: want.bubble_ns,
    exposed_comm_ns: { tp: e.tp, ep: e.ep, dp: e.dp, dp_ep: e.dp_ep, pp: e.pp },
  };
}

/** Switch the mode and wait for that mode's result of the newest run. */
async function switchMode(page, mode) {
  await page.getByTestId('mode').selectOption(mode);
  await page.locator(`[data-testid="results"][data-kind="${mode}"]`).waitFor();
  await waitDone(page);
}

test('with no flags and an untouched page, page and CLI agree: every example (event mode), the SimAI ones (SimAI mode)', async () => {
  const { page, errors } = await open();
  const names = await page.getByTestId('example').locator('.example-name').allTextContents();
  assert.equal(names.length, 5);
  // The form opens with the core's defaults: H100's NVLink, CX7's NIC.
  assert.equal(await page.getByTestId('setting-nvlink_gbps').inputValue(), '370.8');
  assert.equal(await page.getByTestId('setting-gpu').inputValue(), 'H100');
  assert.equal(await page.getByTestId('setting-nic_gbps').inputValue(), '48.5');
  for (const name of names) {
    const file = path.join(root, 'www', 'examples', name);
    await loadExample(page, name);
    assert.equal(await page.getByTestId('results').getAttribute('data-kind'), 'event');
    const want = cli([file]);
    assert.deepEqual(await pageFigures(page), cliFigures(want), `${name}: event mode`);
    assert.equal(await figure(page, 'simai_bubble'), String(want.simai_bubble_ns), name);
    if (name.startsWith('simai_')) {
      await switchMode(page, 'simai');
      assert.deepEqual(await pageFigures(page), cliFigures(cli(['--mode', 'simai', file])), `${name}: SimAI mode`);
      await switchMode(page, 'event');
    }
    await page.getByRole('button', { name: `Remove ${name}` }).click();
  }
  assert.deepEqual(errors, []);
});

test('every figure says what it means; a measured run says what "measured" covers', async () => {
  const { page, errors } = await open();
  await loadExample(page, 'optimus_prime_llama1b_pp8_train.log');
  const tiles = page.getByTestId('figure');
  const n = await tiles.count();
  // (A dense job has no expert-parallel figures.)
  assert.ok(n >= 7, `${n} figures`);
  for (let i = 0; i < n; i++) {
    const title = await tiles.nth(i).getAttribute('title');
    assert.ok(title && title.length > 20, `${await tiles.nth(i).getAttribute('data-key')}: ${title}`);
  }
  assert.match(await page.locator('.headline').getAttribute('title'), /one training iteration/);
  // The disclosure lists the same definitions, the critical path too.
  const list = page.getByTestId('definitions');
  await list.locator('summary').click();
  assert.equal(await list.getByTestId('definition').count(), n + 2);
  assert.match(await list.locator('[data-key="critical_path"]').textContent(), /sets the iteration time/);
  assert.match(await page.getByTestId('measured-covers').textContent(), /forward passes only/);
  await screenshot(page, 'app-definitions-optimus');
  assert.deepEqual(errors, []);
});

test('the drop zone names every input format the page reads', async () => {
  const { page, errors } = await open();
  const text = await page.locator('.dropzone-formats').textContent();
  for (const f of ['SimAI', 'NeuSight', 'Echo', 'Optimus-Prime', 'Kineto', 'Chakra', 'comm_groups.json', 'config.json']) {
    assert.ok(text.includes(f), `${f} missing from: ${text}`);
  }
  assert.deepEqual(errors, []);
});

test('every bundled example simulates', async () => {
  const { page, errors } = await open();
  const names = await page.getByTestId('example').locator('.example-name').allTextContents();
  assert.equal(names.length, 5);
  for (const name of names) {
    await loadExample(page, name);
    const ns = await iterationNs(page);
    assert.ok(ns > 0, `${name}: iteration time ${ns}`);
    await screenshot(page, `app-example-${name.replace(/\.[a-z]+$/, '')}`);
    await page.getByRole('button', { name: `Remove ${name}` }).click();
  }
  assert.deepEqual(errors, []);
});

test('a malformed file shows an error naming its line and still gives a result', async () => {
  const { page, errors } = await open();
  const bad = path.join(root, 'target', 'e2e-bad-record.txt');
  const lines = fs.readFileSync(path.join(seeds, SEED000), 'utf8').split('\n');
  lines[4] = 'attention_norm -1 3422000 ALLREDUCE 33554432 3000000 NONE';
  fs.writeFileSync(bad, lines.join('\n'));
  await page.getByTestId('file-input').setInputFiles(bad);
  const err = page.locator('[data-testid="file-card"][data-file="e2e-bad-record.txt"] [data-testid="error"]');
  await err.first().waitFor();
  const text = await err.first().textContent();
  assert.match(text, /line 5/);
  assert.match(text, /expected 12 fields, found 7/);
  // The offending line is quoted.
  assert.match(text, /attention_norm -1 3422000 ALLREDUCE 33554432 3000000 NONE/);
  // One bad record does not lose the file: a result, with a warning naming
  // the skipped record.
  await page.getByTestId('iteration-time').waitFor();
  assert.match(await page.getByTestId('iteration-time').textContent(), /\d/);
  const warning = page.getByTestId('warning').filter({ hasText: '1 record skipped (line 5); the result leaves it out' });
  await warning.first().waitFor();
  assert.match(await warning.first().textContent(), /e2e-bad-record\.txt/);
  await screenshot(page, 'app-malformed');
  assert.deepEqual(errors, []);
});

test('the page keeps drawing frames while the worker parses a big file; cancel works', async () => {
  const big = bigWorkload(300000);
  const { page, errors } = await open();
  await page.getByTestId('mode').selectOption('simai');
  // Count animation frames while a run is in progress, and the longest gap.
  await page.evaluate(() => {
    window.__frames = { running: 0, maxGapMs: 0, last: 0 };
    const tick = (t) => {
      const s = document.querySelector('[data-testid="run-status"]')?.dataset.state;
      if (s === 'running') {
        const f = window.__frames;
        if (f.last) f.maxGapMs = Math.max(f.maxGapMs, t - f.last);
        f.running++; f.last = t;
      } else { window.__frames.last = 0; }
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  const t0 = Date.now();
  await page.getByTestId('file-input').setInputFiles(big);
  await waitDone(page);
  const frames = await page.evaluate(() => window.__frames);
  console.log(`# figure: 300k-record workload (${(fs.statSync(big).size / 1e6).toFixed(1)} MB) parsed in the worker in ${Date.now() - t0} ms; `
    + `${frames.running} frames drawn meanwhile, longest frame gap ${frames.maxGapMs.toFixed(0)} ms`);
  assert.ok(frames.running >= 3, `frames were drawn during the run (${frames.running})`);
  assert.match(await page.getByTestId('table-note').textContent(), /of 300\s?000 rows|of 300000 rows/);

  // Cancel: start again, cancel while running, then a fresh run completes.
  await page.getByTestId('simulate').click();
  await page.getByTestId('cancel').click();
  await page.locator('[data-testid="run-status"][data-state="cancelled"]').waitFor();
  await page.getByTestId('simulate').click();
  await waitDone(page);
  await screenshot(page, 'app-big-file');
  assert.deepEqual(errors, []);
});

test('an invalid setting is explained next to its field and blocks Simulate', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  const world = page.getByTestId('setting-world');
  await world.fill('500');
  const msg = page.locator('[data-testid="field-error"][data-field="world"]');
  await msg.waitFor();
  assert.match(await msg.textContent(), /500 is not divisible by TP × PP = 8 × 4 = 32/);
  assert.equal(await world.getAttribute('aria-invalid'), 'true');
  assert.ok(await page.getByTestId('simulate').isDisabled());
  // The message sits inside the field's own row.
  assert.equal(await page.locator('.setting[data-field="world"] [data-testid="field-error"]').count(), 1);
  // Overlap ratios are checked in SimAI mode.
  await page.getByTestId('mode').selectOption('simai');
  await page.getByTestId('setting-dp_overlap').fill('1.5');
  await page.locator('[data-testid="field-error"][data-field="dp_overlap"]').waitFor();
  await screenshot(page, 'app-settings-invalid');
  // Keyboard: Tab reaches the mode select and the Simulate button.
  await page.locator('body').focus();
  const reached = new Set();
  for (let i = 0; i < 80 && reached.size < 2; i++) {
    await page.keyboard.press('Tab');
    const id = await page.evaluate(() => document.activeElement?.dataset?.testid);
    if (id === 'mode' || id === 'file-input') reached.add(id);
  }
  assert.deepEqual([...reached].sort(), ['file-input', 'mode']);
  await world.fill('512');
  await page.getByTestId('setting-dp_overlap').fill('0.3');
  await page.locator('[data-testid="field-error"]').first().waitFor({ state: 'detached' });
  assert.ok(await page.getByTestId('simulate').isEnabled());
  assert.deepEqual(errors, []);
});

test('the URL fragment restores example and settings after a reload', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  await page.getByTestId('mode').selectOption('simai');
  await page.getByTestId('setting-dp_overlap').fill('0.3');
  await page.getByTestId('setting-gpus_per_node').fill('4');
  // Wait for the debounced run of the last edit, then read the fragment.
  await page.waitForFunction(() => location.hash.includes('gpus_per_node=4'));
  await page.locator('[data-testid="results"][data-kind="simai"]').waitFor();
  // The debounced run of the last edit has started and finished.
  await page.waitForFunction(() => !document.querySelector('.results.stale'));
  await waitDone(page);
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, new RegExp(`example=${SEED000.replace(/\./g, '\\.')}`));
  assert.match(hash, /mode=simai/);
  assert.match(hash, /dp_overlap=0\.3/);
  const before = await figure(page, 'compute');
  const beforeNs = await iterationNs(page);
  await page.reload();
  await page.locator(`[data-testid="file-card"][data-file="${SEED000}"] [data-testid="format"]`).waitFor();
  await waitDone(page);
  assert.equal(await page.getByTestId('mode').inputValue(), 'simai');
  assert.equal(await page.getByTestId('setting-dp_overlap').inputValue(), '0.3');
  assert.equal(await page.getByTestId('setting-gpus_per_node').inputValue(), '4');
  assert.equal(await page.getByTestId('setting-world').inputValue(), '512');
  assert.equal(await figure(page, 'compute'), before);
  assert.equal(await iterationNs(page), beforeNs);
  assert.equal(await page.evaluate(() => location.hash), hash);
  // A fresh tab with the link shows the same.
  const other = await open(site.url + hash);
  await waitDone(other.page);
  assert.equal(await figure(other.page, 'compute'), before);
  assert.equal(await other.page.getByTestId('setting-gpus_per_node').inputValue(), '4');
  await screenshot(other.page, 'app-restored-from-link');
  assert.deepEqual(errors, []);
  assert.deepEqual(other.errors, []);
});

test('every example: a second example replaces the first, and its link gives the same result; measured inputs pre-fill the form', async () => {
  const { page, errors } = await open();
  const names = (await page.locator('[data-testid="example"] .example-name').allTextContents()).map((t) => t.trim());
  assert.equal(names.length, 5, `examples: ${names}`);
  for (const name of names) {
    await loadExample(page, name);
    await page.locator('[data-testid="results"] .subtitle', { hasText: name }).waitFor();
    await waitDone(page);
    // Only this example is loaded (it replaced the previous one).
    assert.deepEqual(await page.locator('[data-testid="file-card"]').evaluateAll((cs) => cs.map((c) => c.dataset.file)), [name]);
    await page.waitForFunction((n) => location.hash.includes(`example=${encodeURIComponent(n)}`), name);
    const ns = await iterationNs(page);
    const link = await page.evaluate(() => location.href);
    const other = await open(link);
    await other.page.locator('[data-testid="results"] .subtitle', { hasText: name }).waitFor();
    await waitDone(other.page);
    assert.equal(await iterationNs(other.page), ns, `${name}: the link reproduces the result`);
    assert.deepEqual(other.errors, []);
    await other.page.close();
    if (name.startsWith('echo_')) {
      // TP 2, PP 4, world 8 from the trace, shown as such.
      for (const [key, value] of [['tp', '2'], ['pp', '4'], ['world', '8']]) {
        assert.equal(await page.getByTestId(`setting-${key}`).inputValue(), value, key);
        await page.locator(`.setting[data-field="${key}"] .from-file`).waitFor();
      }
    }
    if (name.startsWith('optimus_')) {
      assert.equal(await page.getByTestId('setting-pp').inputValue(), '8');
      assert.equal(await page.getByTestId('setting-micro_batches').inputValue(), '32');
    }
  }
  assert.deepEqual(errors, []);
});

test('Compare: pin A, change the files, see B with differences', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  const a = await figure(page, 'compute');
  await page.getByTestId('compare-pin').click();
  await page.getByTestId('compare').waitFor();
  await page.getByRole('button', { name: `Remove ${SEED000}` }).click();
  await loadExample(page, SEED001);
  const b = await figure(page, 'compute');
  assert.notEqual(a, b);
  const row = page.locator('[data-testid="compare-row"][data-key="compute"]');
  await row.waitFor();
  const delta = await row.getByTestId('compare-delta').textContent();
  const pct = await row.getByTestId('compare-pct').textContent();
  assert.match(delta, Number(b) > Number(a) ? /^\+/ : /^−/);
  const want = ((Number(b) - Number(a)) / Number(a)) * 100;
  assert.equal(pct, `${want >= 0 ? '+' : '−'}${Math.abs(want).toFixed(1)} %`);
  assert.match(await page.getByTestId('compare-changes').textContent(), /files/);
  await screenshot(page, 'app-compare');
  await page.getByTestId('compare-unpin').click();
  await page.getByTestId('compare').waitFor({ state: 'detached' });
  assert.deepEqual(errors, []);
});

test('downloads: Chrome trace, summary JSON, spans CSV and the charts PNG', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  const ns = await iterationNs(page);
  const [trace] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-chrome-trace').click()]);
  assert.equal(trace.suggestedFilename(), 'simai_llama65b_tp8_pp4_vpp8.trace.json');
  const events = JSON.parse(fs.readFileSync(await trace.path(), 'utf8')).traceEvents;
  const spans = events.filter((e) => e.ph === 'X');
  assert.ok(spans.length > 100);
  // ts and dur are microseconds: the last span ends at the iteration time.
  const end = Math.max(...spans.map((e) => e.ts + e.dur));
  assert.ok(Math.abs(end - ns / 1000) < 1, `trace ends at ${end} us, iteration ${ns / 1000} us`);
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-summary-json').click()]);
  const summary = JSON.parse(fs.readFileSync(await json.path(), 'utf8'));
  assert.equal(summary.iteration_time_ns, ns);
  assert.equal(String(summary.compute_ns), await figure(page, 'compute'));
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
  const lines = fs.readFileSync(await csv.path(), 'utf8').trim().split('\n');
  assert.equal(lines.length, spans.length + 1);
  const [png] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-png').click()]);
  assert.equal(png.suggestedFilename(), 'trainscope-charts.png');
  const bytes = fs.readFileSync(await png.path());
  assert.deepEqual([...bytes.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  // SimAI mode with SimAI's reference flags (-nv 360): the CSV is SimAI's
  // EndToEnd layout, equal to its r000 output.
  await page.getByTestId('setting-nvlink_gbps').fill('360');
  await page.getByTestId('mode').selectOption('simai');
  await page.locator('[data-testid="results"][data-kind="simai"]').waitFor();
  await waitDone(page);
  const [simai] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
  const got = fs.readFileSync(await simai.path(), 'utf8').split('\n');
  const ref = fs.readFileSync(path.join(root, 'tests/fixtures/simai/expected/r000-EndToEnd.csv'), 'utf8').split('\n');
  assert.equal(got[1].split(',').slice(1).join(','), ref[1].split(',').slice(1).join(','));
  assert.deepEqual(got.slice(2, 10), ref.slice(2, 10));
  assert.deepEqual(errors, []);
});

test('the worker runs from a sub-path of a static host', async () => {
  const sub = await serve(undefined, '/deep/sub/path/');
  try {
    const { page, errors } = await newPage(browser.context);
    await page.goto(sub.url);
    await page.getByTestId('example').filter({ hasText: SEED000 }).click();
    await waitDone(page);
    assert.equal(await page.getByTestId('results').getAttribute('data-kind'), 'event');
    assert.deepEqual(errors, []);
  } finally { sub.server.close(); }
});

test('figure: page load to first result for seed 001 (a link with the example)', async () => {
  const times = [];
  for (let i = 0; i < 3; i++) {
    const { page, errors } = await open(`${site.url}#example=${SEED001}`);
    const ms = await page.waitForFunction(
      () => document.querySelector('[data-testid="results"]') && performance.now(),
      undefined, { polling: 'raf' });
    times.push(Math.round(await ms.jsonValue()));
    assert.deepEqual(errors, []);
    await page.close();
  }
  times.sort((a, b) => a - b);
  console.log(`# figure: navigation start to first result, seed 001: median ${times[1]} ms (runs: ${times.join(', ')})`);
  // A first visit: a fresh browser profile each time (no HTTP or compiled-wasm cache).
  const cold = [];
  for (let i = 0; i < 3; i++) {
    const fresh = await launch();
    try {
      const { page, errors } = await newPage(fresh.context);
      await page.goto(`${site.url}#example=${SEED001}`);
      const ms = await page.waitForFunction(
        () => document.querySelector('[data-testid="results"]') && performance.now(),
        undefined, { polling: 'raf' });
      cold.push(Math.round(await ms.jsonValue()));
      assert.deepEqual(errors, []);
    } finally { await fresh.close(); }
  }
  cold.sort((a, b) => a - b);
  console.log(`# figure: first visit (fresh profile) to first result, seed 001: runs ${cold.join(', ')} ms`);
  assert.equal(cold.length, 3);
});

test('figure: SimAI-mode computation of seed 001 in the browser (settings change to result)', async () => {
  const { page, errors } = await open(`${site.url}#example=${SEED001}&mode=simai`);
  await page.locator('[data-testid="results"][data-kind="simai"]').waitFor();
  await waitDone(page);
  const times = [];
  for (const dp of ['0.1', '0.2', '0.3', '0.4', '0.5']) {
    await page.getByTestId('setting-dp_overlap').fill(dp);
    // The Simulate button runs at once (no debounce): time it to the new result.
    const t0 = await page.evaluate(() => performance.now());
    await page.getByTestId('simulate').click();
    await page.waitForFunction((want) => {
      const s = document.querySelector('[data-testid="run-status"]');
      return s && s.dataset.state === 'done' && location.hash.includes(`dp_overlap=${want}`);
    }, dp, { polling: 'raf' });
    times.push(Math.round(await page.evaluate(() => performance.now()) - t0));
  }
  times.sort((a, b) => a - b);
  console.log(`# figure: SimAI mode, seed 001, Simulate click to result in the browser: median ${times[2]} ms (runs: ${times.join(', ')})`);
  assert.deepEqual(errors, []);
});
