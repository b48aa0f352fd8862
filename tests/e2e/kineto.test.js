// PyTorch profiler (Kineto) traces end to end (issue 15): eight rank files
// of a generated data-parallel job with rank 5 slowed by 30 % (the
// repository's generator, `cargo run -p trainscope-tests --bin kineto_gen`,
// writes them under target/e2e-kineto/) are dropped on the page together:
// eight file cards read as kineto-trace, the timeline draws eight rank
// groups (measured and simulated), and the analysis panel names rank 5 as
// the straggler, the last to arrive at the gradient all-reduces, with the
// per-rank breakdown of the core's analysis. Screenshots go to
// target/e2e/kineto-*.png. The same files chosen from disk (each stays the
// browser's File until the worker reads it): the first run reads them, a
// re-run with a changed setting reads nothing again (the worker kept
// them) and keeps the analysis. A single large generated trace (48 MiB)
// shows its own parse progress in the run bar (bytes read of the file),
// and the page's wasm memory stays below half its size (the page never
// copies a dropped file).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, screenshot, dist, root, waitDone, dropFiles } from './harness.js';

const skip = fs.existsSync(path.join(dist, 'index.html')) ? false : 'dist/ is not built';
const WORLD = 8;
const SLOW = 5;

let site; let browser; let files; let paths;
before(async () => {
  if (skip) return;
  const dir = path.join(root, 'target', 'e2e-kineto');
  fs.rmSync(dir, { recursive: true, force: true });
  const out = execFileSync('cargo', ['run', '--locked', '--quiet', '-p', 'trainscope-tests', '--bin', 'kineto_gen', '--',
    dir, '--world', String(WORLD), '--layers', '6', '--seed', '3', '--slow-rank', `${SLOW}:30`],
  { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  paths = out.trim().split('\n');
  files = paths.map((p) => ({ name: path.basename(p), bytes: fs.readFileSync(p) }));
  site = await serve(dist);
  browser = await launch();
});
after(async () => { if (!skip) { await browser.close(); site.server.close(); } });

test('eight Kineto rank files dropped: eight rank groups, the straggler named', { skip }, async () => {
  assert.equal(files.length, WORLD);
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await dropFiles(page, files);
  await page.locator('[data-testid="file-card"]').nth(WORLD - 1).waitFor();
  await waitDone(page, { timeout: 60000 });
  const formats = await page.locator('[data-testid="file-card"] [data-testid="format"]').allTextContents();
  assert.deepEqual(formats.map((f) => f.trim()), Array(WORLD).fill('kineto-trace'));

  // The timeline: one group per rank in the measured and the simulated run.
  const canvas = page.getByTestId('timeline');
  await page.waitForFunction(() => {
    const c = document.querySelector('[data-testid=timeline]');
    return c && c.dataset.runs && c.dataset.runs.includes('measured') && c.dataset.groups;
  }, null, { timeout: 30000 });
  const runs = (await canvas.getAttribute('data-runs')).split(',');
  const groups = (await canvas.getAttribute('data-groups')).split('|');
  const measuredSection = runs.indexOf('measured');
  const simulatedSection = runs.indexOf('simulated');
  assert.ok(measuredSection >= 0 && simulatedSection >= 0, `runs: ${runs}`);
  const of = (s) => groups.filter((g) => g.startsWith(`${s}:`)).map((g) => g.slice(String(s).length + 1));
  const measured = of(measuredSection);
  const simulated = of(simulatedSection);
  assert.equal(measured.length, WORLD, `measured groups: ${measured}`);
  assert.equal(simulated.length, WORLD, `simulated groups: ${simulated}`);
  for (let r = 0; r < WORLD; r += 1) {
    assert.ok(measured.some((g) => g.startsWith(`rank ${r} `) || g === `rank ${r}`), `rank ${r} in ${measured}`);
  }

  // The analysis: the straggler is the slowed rank, by compute and by
  // arrival at the gradient all-reduces.
  const panel = page.getByTestId('kineto-analysis');
  await panel.waitFor();
  const straggler = panel.getByTestId('straggler');
  assert.equal(await straggler.getAttribute('data-rank'), String(SLOW));
  assert.match(await straggler.textContent(), new RegExp(`rank ${SLOW}\\b`));
  assert.ok(Number(await straggler.getAttribute('data-excess-ns')) > 0);
  const rows = panel.getByTestId('analysis-rank');
  assert.equal(await rows.count(), WORLD);
  const compute = await rows.evaluateAll((trs) => trs.map((tr) => [Number(tr.dataset.rank), Number(tr.dataset.computeNs)]));
  const longest = compute.reduce((a, b) => (b[1] > a[1] ? b : a));
  assert.equal(longest[0], SLOW, `compute per rank: ${compute}`);
  for (const [, ns] of compute) assert.ok(ns > 0);
  const lasts = await panel.getByTestId('analysis-collective')
    .evaluateAll((trs) => trs.map((tr) => [tr.cells[1].textContent, Number(tr.dataset.lastRank), Number(tr.dataset.waitNs)]));
  const allReduces = lasts.filter(([name]) => name.includes('AllReduce'));
  assert.ok(allReduces.length > 0, `collectives: ${lasts}`);
  for (const [, last, wait] of allReduces) {
    assert.equal(last, SLOW, `all-reduce last arrivals: ${lasts}`);
    assert.ok(wait > 0);
  }
  assert.ok(await panel.getByTestId('analysis-kernel').count() > 0);

  await panel.scrollIntoViewIfNeeded();
  await screenshot(page, 'kineto-8-ranks');
  await panel.screenshot({ path: path.join(root, 'target', 'e2e', 'kineto-analysis.png') });
  await canvas.scrollIntoViewIfNeeded();
  await canvas.screenshot({ path: path.join(root, 'target', 'e2e', 'kineto-timeline.png') });
  assert.deepEqual(errors, []);
});

/** Record the run bar's labels from now on (`window.labels`). */
async function recordLabels(page) {
  await page.evaluate(() => {
    window.labels = [];
    new MutationObserver(() => {
      const l = document.querySelector('.run-bar .run-label')?.textContent;
      if (l && window.labels[window.labels.length - 1] !== l) window.labels.push(l);
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
}

test('rank files chosen from disk: read once by the worker, a re-run with a changed setting reads nothing again', { skip }, async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await recordLabels(page);
  await page.getByTestId('file-input').setInputFiles(paths);
  await page.locator('[data-testid="file-card"]').nth(WORLD - 1).waitFor();
  await waitDone(page, { timeout: 60000 });
  const panel = page.getByTestId('kineto-analysis');
  await panel.waitFor();
  const perRank = () => panel.getByTestId('analysis-rank')
    .evaluateAll((trs) => trs.map((tr) => [tr.dataset.rank, tr.dataset.computeNs, tr.dataset.communicationNs, tr.dataset.idleNs].join(' ')));
  const first = { labels: await page.evaluate(() => window.labels), ranks: await perRank(), ns: Number(await page.getByTestId('iteration-time').getAttribute('data-ns')) };
  // The first run read every file into the worker, one at a time.
  const reads = first.labels.filter((l) => /: Reading /.test(l));
  assert.equal(reads.length, WORLD, `labels: ${first.labels}`);
  for (const [i, p] of paths.entries()) {
    assert.ok(reads.some((l) => l.includes(`Reading ${path.basename(p)} (file ${i + 1} of ${WORLD})`)), `labels: ${reads}`);
  }
  assert.equal(await panel.getByTestId('straggler').getAttribute('data-rank'), String(SLOW));

  // A slower network: a re-run (after the edit's pause) from the bytes the
  // worker kept: no file read again, the analysis (the traces' facts) the
  // same, the replay's collectives slower.
  await page.evaluate(() => { window.labels = []; });
  await page.getByTestId('setting-latency_us').fill('2000');
  await page.waitForFunction(() => window.labels.some((l) => l.includes('Simulating')));
  await waitDone(page, { timeout: 60000 });
  await page.locator('[data-testid="results"]:not(.stale)').waitFor();
  const again = await page.evaluate(() => window.labels);
  assert.deepEqual(again.filter((l) => /Reading /.test(l)), [], `re-run labels: ${again}`);
  assert.deepEqual(await perRank(), first.ranks);
  assert.equal(await panel.getByTestId('straggler').getAttribute('data-rank'), String(SLOW));
  const ns = Number(await page.getByTestId('iteration-time').getAttribute('data-ns'));
  assert.ok(ns > first.ns, `iteration with 2000 µs latency ${ns} vs ${first.ns} ns`);
  const formats = await page.locator('[data-testid="file-card"] [data-testid="format"]').allTextContents();
  assert.deepEqual(formats.map((f) => f.trim()), Array(WORLD).fill('kineto-trace'));
  assert.deepEqual(errors, []);
});

test('a large Kineto file shows its own parse progress in the run bar', { skip }, async () => {
  const dir = path.join(root, 'target', 'e2e-kineto-big');
  fs.rmSync(dir, { recursive: true, force: true });
  const out = execFileSync('cargo', ['run', '--locked', '--quiet', '-p', 'trainscope-tests', '--bin', 'kineto_gen', '--',
    dir, '--world', '1', '--bytes', String(48 << 20)],
  { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const big = out.trim().split('\n')[0];
  const size = fs.statSync(big).size;
  assert.ok(size > 32 << 20, `generated ${size} bytes`);
  const { page, errors } = await newPage(browser.context);
  // The page's wasm memory (Trunk hands the module over when it starts).
  await page.addInitScript(() => {
    addEventListener('TrunkApplicationStarted', (e) => { window.__pageWasm = e.detail.wasm; });
  });
  await page.goto(site.url);
  // Record every state of the run bar while the file is read.
  await page.evaluate(() => {
    window.seen = [];
    new MutationObserver(() => {
      const p = document.querySelector('[data-testid=run-progress]');
      const l = document.querySelector('.run-bar .run-label');
      if (p && l) window.seen.push([p.dataset.parsedBytes ?? null, Number(p.value), Number(p.max), l.textContent]);
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  await page.getByTestId('file-input').setInputFiles(big);
  await waitDone(page, { timeout: 120000 });
  const seen = await page.evaluate(() => window.seen);
  const within = seen.filter(([b]) => b !== null);
  assert.ok(within.length >= 2, `progress within the file: ${JSON.stringify(seen.slice(0, 20))}`);
  const name = path.basename(big);
  for (const [b, value, max, label] of within) {
    assert.equal(Number(b), value);
    assert.ok(value <= max && max >= size * 0.99, `${value} of ${max}`);
    assert.match(label, new RegExp(`Parsing ${name.replace(/\./g, '\\.')} \\(file 1 of 1\\): [0-9.]+ [KMG]i?B of [0-9.]+ [KMG]i?B`));
  }
  const values = within.map(([, v]) => v);
  assert.ok(values.some((v, i) => i > 0 && v > values[0]), `the bar moves: ${values}`);
  assert.equal((await page.locator('[data-testid="file-card"] [data-testid="format"]').textContent()).trim(), 'kineto-trace');
  // The file stayed the browser's File on the page: the page's wasm memory
  // (which never shrinks) never held its bytes; the worker read them.
  const pageWasm = await page.evaluate(() => window.__pageWasm.memory.buffer.byteLength);
  assert.ok(pageWasm < size / 2, `page wasm memory ${pageWasm} bytes for a ${size}-byte file`);
  assert.deepEqual(errors, []);
});
