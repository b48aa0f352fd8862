// Interaction latency benchmark (issue 16): how long one zoom or pan takes
// to reach the screen on a large simulated run, next to the same input on a
// blank page (the floor: Playwright's input round trip plus two animation
// frames). The run is a generated SimAI workload of 16 stages x 64
// micro-batches with 120 layers per block (the case the issue reports),
// simulated by the page's worker from the built site in dist/. Each of N
// interactions (wheel zoom in/out, drag pan left/right, in turn) is timed
// from sending the input to the second animation frame after it; prints
// median, 90th percentile and worst for both pages, all interactions and
// the wheels and drags apart. Figures only: no assertion on time.
//
// The run's span count is taken from the CLI on the same file
// (`simulate --spans-csv`, the page's timeline is the same model).
//
// Usage: trunk build --release && node tests/e2e/bench-interaction.mjs [--rounds 30] [--micro-batches 64]
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { serve, launch, root, waitDone } from './harness.js';

/** Zoom with the wheel (Perfetto's convention, the page's: Ctrl+wheel
 * zooms; the plain wheel scrolls). */
async function zoomWheel(page, dy) {
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, dy);
  await page.keyboard.up('Control');
}


const args = process.argv.slice(2);
const flag = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) || dflt : dflt;
};
const rounds = flag('--rounds', 30);
const microBatches = flag('--micro-batches', 64);

/** 16 stages x `microBatches` micro-batches, each block an embedding row
 * and 120 layer rows (attention and MLP rows of seed 000's shape). */
function workload() {
  const header = `HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 16 vpp: 1 ga: ${microBatches} all_gpus: 1024 pp_comm: 1048576`;
  const rows = [];
  for (let mb = 0; mb < microBatches; mb += 1) {
    rows.push('embedding_layer\t-1\t2000\tNONE\t0\t1000\tNONE\t0\t1000\tNONE\t0\t100');
    for (let l = 0; l < 60; l += 1) {
      rows.push('attention_column\t-1\t40000\tALLREDUCE\t16777216\t40000\tNONE\t0\t40000\tNONE\t0\t100');
      rows.push('mlp_column\t-1\t60000\tALLREDUCE\t16777216\t60000\tNONE\t0\t60000\tNONE\t0\t100');
    }
  }
  const file = path.join(root, 'target', `e2e-interaction-16x${microBatches}x120.txt`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, [header, String(rows.length), ...rows].join('\n') + '\n');
  return file;
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { median: at(0.5), p90: at(0.9), worst: s[s.length - 1] };
};
const twoFrames = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/** Time `rounds` interactions at (x, y) of `page`; `range` (optional)
 * reads the view after each one, and the set of views seen is returned
 * (a wheel-in then wheel-out cycle may end where it started, so the check
 * that interactions move the view looks at every step, not the last). */
async function interact(page, x, y, range) {
  const times = [];
  const byKind = { wheel: [], drag: [] };
  const views = new Set();
  for (let i = 0; i < rounds; i += 1) {
    const kind = i % 4;
    const t0 = performance.now();
    await page.mouse.move(x, y);
    if (kind === 0) await zoomWheel(page, -240);
    else if (kind === 2) await zoomWheel(page, 240);
    else {
      await page.mouse.down();
      for (let s = 1; s <= 4; s += 1) await page.mouse.move(x + (kind === 1 ? -30 : 30) * s, y);
      await page.mouse.up();
    }
    await twoFrames(page);
    times.push(performance.now() - t0);
    byKind[kind % 2 === 0 ? 'wheel' : 'drag'].push(times[times.length - 1]);
    if (range) views.add(await range());
  }
  return { times, views, byKind };
}

/** Spans of the simulated timeline: the CLI's `--spans-csv` rows. */
function spanCount(file) {
  const bin = ['release', 'debug'].map((d) => path.join(root, 'target', d, 'trainscope')).find((b) => fs.existsSync(b));
  if (!bin) return 'unknown (no trainscope binary built)';
  const csv = path.join(root, 'target', 'bench', 'interaction-spans.csv');
  fs.mkdirSync(path.dirname(csv), { recursive: true });
  execFileSync(bin, ['simulate', file, '--spans-csv', csv], { stdio: 'ignore' });
  const lines = fs.readFileSync(csv, 'utf8').split('\n').filter((l) => l.length > 0).length;
  fs.rmSync(csv);
  return String(lines - 1);
}

const { server, url } = await serve();
const browser = await launch();
try {
  // Blank page: the floor.
  const blank = await browser.context.newPage();
  await blank.setContent('<html><body style="margin:0;width:1280px;height:800px"></body></html>');
  const blankRun = await interact(blank, 640, 400);
  const floor = stats(blankRun.times);
  await blank.close();

  const page = await browser.context.newPage();
  await page.goto(url);
  const file = workload();
  const spans = spanCount(file);
  await page.getByTestId('file-input').setInputFiles([file]);
  await waitDone(page, { timeout: 300000 });
  await page.getByTestId('timeline').waitFor({ timeout: 120000 });
  await page.waitForFunction(() => {
    const c = document.querySelector('[data-testid=timeline]');
    return c && c.width > 0;
  }, null, { timeout: 120000 });
  await page.getByTestId('timeline').scrollIntoViewIfNeeded();
  const range = () => page.getByTestId('view-range').evaluate((e) => `${e.dataset.startNs}..${e.dataset.endNs}`);
  const before = await range();
  const box = await page.getByTestId('timeline').boundingBox();
  const groups = await page.locator('[data-testid=run-status]').getAttribute('data-state');
  fs.mkdirSync(path.join(root, 'target', 'bench'), { recursive: true });
  await page.screenshot({ path: path.join(root, 'target', 'bench', `interaction-16x${microBatches}x120.png`) });
  const measured = await interact(page, box.x + 180 + (box.width - 190) / 2, box.y + 60, range);
  const run = stats(measured.times);
  measured.views.delete(before);
  if (measured.views.size === 0) throw new Error(`the interactions did not move the view (${before})`);
  const f = (x) => x.toFixed(1);
  console.log(`interaction to screen (${rounds} rounds: wheel in, drag left, wheel out, drag right):`);
  console.log(`  blank page (floor):           median ${f(floor.median)} ms, p90 ${f(floor.p90)} ms, worst ${f(floor.worst)} ms`);
  console.log(`  16 stages x ${microBatches} mb x 120 layers, ${spans} spans (run ${groups}): median ${f(run.median)} ms, p90 ${f(run.p90)} ms, worst ${f(run.worst)} ms`);
  // The wheels and the drags apart (a drag sends four moves and waits for
  // each: its floor is higher), each against the blank page's same input.
  for (const kind of ['wheel', 'drag']) {
    const b = stats(blankRun.byKind[kind]);
    const r = stats(measured.byKind[kind]);
    console.log(`  ${kind}s: blank median ${f(b.median)} ms; run median ${f(r.median)} ms (${f(r.median - b.median)} ms over), p90 ${f(r.p90)} ms, worst ${f(r.worst)} ms`);
  }
} finally {
  await browser.close();
  server.close();
}
