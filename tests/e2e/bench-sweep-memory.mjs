// Memory benchmark of the configuration search (issue 13: "10 000
// candidates in memory under 50 MB in the browser"). Runs, from the built
// site in dist/ in headless Chromium, a sweep of llama3-8b (global batch
// 1024) on 8, 16, ..., 1024 H100s with micro-batch sizes 1,2,4,8,16 and the
// default list of every other dimension (TP, PP, virtual stages, recompute,
// schedule): more than 13 000 candidates, more than 10 000 of them
// simulated rows (the exact counts are printed). When every worker is
// done (the rows merged into the final report), it forces a garbage
// collection (CDP HeapProfiler.collectGarbage) and prints:
// - the page's JS heap (CDP Performance.getMetrics JSHeapUsedSize) and DOM
//   node count, before the sweep and after it;
// - the page's wasm memory (the WebAssembly.Memory of the page's module,
//   its buffer's byteLength), before and after: the rows live there (the
//   job panel's job is llama3-8b on 128 GPUs, DP 128, whose own timeline is
//   small: the page's memory before the sweep is mostly the app);
// - each Web Worker's wasm memory (asked of the worker itself: its
//   wasm-bindgen module's memory), the sweep's pool and the page's run worker.
// Figures only: no assertion on size or time.
//
// Usage: trunk build --release && node tests/e2e/bench-sweep-memory.mjs
import { serve, launch, waitDone, watchLongTasks, longTasksSeen } from './harness.js';

const MiB = 1 << 20;
const mib = (b) => `${(b / MiB).toFixed(1)} MiB`;
const BOUNDS = { world: '8,16,32,64,128,256,512,1024', mbs: '1,2,4,8,16' };

/** JS heap used and DOM nodes after a forced garbage collection. */
async function heap(cdp) {
  await cdp.send('HeapProfiler.collectGarbage');
  const { metrics } = await cdp.send('Performance.getMetrics');
  const get = (name) => metrics.find((m) => m.name === name)?.value ?? NaN;
  return { js: get('JSHeapUsedSize'), nodes: get('Nodes') };
}

const pageWasm = (page) => page.evaluate(() => window.__pageWasm.memory.buffer.byteLength);

const { server, url } = await serve();
const browser = await launch();
try {
  const page = await browser.context.newPage();
  // The page's wasm exports (Trunk's start event carries them).
  await page.addInitScript(() => {
    addEventListener('TrunkApplicationStarted', (e) => { window.__pageWasm = e.detail.wasm; });
  });
  await page.goto(url);
  await page.getByTestId('job-model').selectOption('llama3-8b');
  // The job panel's own run (the page holds its timeline): 128 GPUs, 8
  // micro-batches each, so the page's memory before the sweep is small and
  // what the sweep adds shows.
  await page.getByTestId('job-dp').fill('128');
  await waitDone(page, { timeout: 120000 });
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.getByTestId('sweep-toggle').click();
  for (const [k, v] of Object.entries(BOUNDS)) await page.getByTestId(`sweep-${k}`).fill(v);
  const before = { ...(await heap(cdp)), wasm: await pageWasm(page) };
  await watchLongTasks(page);
  const t0 = Date.now();
  await page.getByTestId('sweep-run').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="sweep-table"]')?.dataset.partial === 'false',
    null, { timeout: 1800000, polling: 1000 });
  const seconds = (Date.now() - t0) / 1000;
  const progress = page.getByTestId('sweep-progress');
  const candidates = Number(await progress.getAttribute('data-total'));
  const rows = Number(await page.getByTestId('sweep-table').getAttribute('data-rows'));
  const after = { ...(await heap(cdp)), wasm: await pageWasm(page) };
  const workers = [];
  for (const w of page.workers()) {
    workers.push(await w.evaluate(async () => (await wasm_bindgen()).memory.buffer.byteLength));
  }
  const longTasks = await longTasksSeen(page);
  console.log(`sweep: llama3-8b, global batch 1024, worlds ${BOUNDS.world}, micro-batch ${BOUNDS.mbs} (default bounds otherwise)`);
  console.log(`  ${candidates} candidates, ${rows} rows, ${seconds.toFixed(0)} s in ${page.workers().length} workers (incl. the page's run worker)`);
  console.log(`  page JS heap (after GC):  before ${mib(before.js)}, after ${mib(after.js)}  (DOM nodes ${before.nodes} -> ${after.nodes})`);
  console.log(`  page wasm memory:         before ${mib(before.wasm)}, after ${mib(after.wasm)}`);
  console.log(`  page total (JS heap + wasm) after: ${mib(after.js + after.wasm)} (the sweep added ${mib(after.js + after.wasm - before.js - before.wasm)})`);
  console.log(`  workers' wasm memory:     ${workers.map(mib).join(', ')}`);
  console.log(`  main-thread tasks over 50 ms while it ran: ${longTasks.length}${longTasks.length ? `, longest ${Math.max(...longTasks).toFixed(0)} ms` : ''}`);
} finally {
  await browser.close();
  server.close();
}
