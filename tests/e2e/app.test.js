// The app end to end: runs in the Web Worker (results appear, the page keeps
// drawing frames while a big file is parsed, cancel works), settings
// validation next to the field, the URL fragment restores the view after a
// reload, Compare, downloads, no request to another host, no console errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { serve, launch, newPage, screenshot, seeds, root } from './harness.js';

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
  return { page, errors, foreign };
}

async function loadExample(page, name) {
  await page.getByTestId('example').filter({ hasText: name }).click();
  await waitDone(page);
}

/** Wait until the newest run has finished. */
async function waitDone(page) {
  await page.locator('[data-testid="run-status"][data-state="done"]').waitFor();
}

async function figure(page, key) {
  return page.locator(`[data-testid="figure"][data-key="${key}"]`).getAttribute('data-value');
}

/** A large SimAI workload: seed 000's header and records repeated. */
function bigWorkload(records) {
  const lines = fs.readFileSync(path.join(seeds, SEED000), 'utf8').split('\n');
  const body = lines.slice(2).filter((l) => l.trim() !== '');
  const out = [lines[0], String(records)];
  for (let i = 0; out.length < records + 2; i++) out.push(body[i % body.length]);
  const file = path.join(root, 'target', `e2e-big-${records}.txt`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, out.join('\n') + '\n');
  return file;
}

test('an example runs in the worker: summary, chart, table, file card; first-result time', async () => {
  const { page, errors, foreign } = await open();
  const t0 = Date.now();
  await page.getByTestId('example').filter({ hasText: SEED001 }).click();
  await page.locator('[data-testid="results"]').waitFor();
  console.log(`# figure: seed 001, click to first result: ${Date.now() - t0} ms`);
  await waitDone(page);
  const results = page.getByTestId('results');
  assert.equal(await results.getAttribute('data-kind'), 'declared');
  // 16 x (attention_column+row, mlp_column+row) x 8 ... : a real sum, checked against the file.
  const text = fs.readFileSync(path.join(seeds, SEED001), 'utf8').split('\n').slice(2);
  let fwd = 0;
  for (const l of text) {
    const f = l.trim().split(/\s+/);
    if (f.length === 12) { const v = Number(f[2]); fwd += v === 1 ? 0 : v; }
  }
  assert.equal(await figure(page, 'compute.fwd'), String(fwd));
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
  // The table sorts by a clicked header (descending on the second click).
  const table = page.getByTestId('table');
  const fwdHeader = table.getByTestId('sort').filter({ hasText: 'fwd compute' });
  await fwdHeader.click();
  await fwdHeader.click();
  assert.equal(await table.locator('th[aria-sort="descending"]').count(), 1);
  const firstRowFwd = await table.locator('tbody tr').first().locator('td').nth(3).textContent();
  const secondRowFwd = await table.locator('tbody tr').nth(1).locator('td').nth(3).textContent();
  assert.ok(firstRowFwd.length > 0 && secondRowFwd.length > 0);
  await page.setViewportSize({ width: 1280, height: 720 });
  await screenshot(page, 'app-seed001-1280x720');
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.deepEqual(errors, []);
  assert.deepEqual(foreign, []);
});

test('the page keeps drawing frames while the worker parses a big file; cancel works', async () => {
  const big = bigWorkload(300000);
  const { page, errors } = await open();
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
  await waitDone(page);
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, new RegExp(`example=${SEED000.replace(/\./g, '\\.')}`));
  assert.match(hash, /mode=simai/);
  assert.match(hash, /dp_overlap=0\.3/);
  const before = await figure(page, 'compute');
  await page.reload();
  await page.locator(`[data-testid="file-card"][data-file="${SEED000}"] [data-testid="format"]`).waitFor();
  await waitDone(page);
  assert.equal(await page.getByTestId('mode').inputValue(), 'simai');
  assert.equal(await page.getByTestId('setting-dp_overlap').inputValue(), '0.3');
  assert.equal(await page.getByTestId('setting-gpus_per_node').inputValue(), '4');
  assert.equal(await page.getByTestId('setting-world').inputValue(), '512');
  assert.equal(await figure(page, 'compute'), before);
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

test('downloads: summary JSON, CSV and the charts PNG', async () => {
  const { page, errors } = await open();
  await loadExample(page, SEED000);
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-summary-json').click()]);
  assert.equal(json.suggestedFilename(), 'simai_llama65b_tp8_pp4_vpp8.summary.json');
  const summary = JSON.parse(fs.readFileSync(await json.path(), 'utf8'));
  assert.equal(summary.schema, 'trainscope.workload-summary/1');
  assert.equal(summary.records, 33);
  assert.equal(String(summary.compute_ns.total), await figure(page, 'compute'));
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
  const lines = fs.readFileSync(await csv.path(), 'utf8').trim().split('\n');
  assert.equal(lines.length, 34);
  assert.match(lines[0], /^#,line,layer,fwd compute/);
  const [png] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-png').click()]);
  assert.equal(png.suggestedFilename(), 'trainscope-charts.png');
  const bytes = fs.readFileSync(await png.path());
  assert.deepEqual([...bytes.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  assert.deepEqual(errors, []);
});

test('the worker runs from a sub-path of a static host', async () => {
  const sub = await serve(undefined, '/deep/sub/path/');
  try {
    const { page, errors } = await newPage(browser.context);
    await page.goto(sub.url);
    await page.getByTestId('example').filter({ hasText: SEED000 }).click();
    await waitDone(page);
    assert.equal(await page.getByTestId('results').getAttribute('data-kind'), 'declared');
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
  assert.equal(times.length, 3);
});
