// Memory benchmark of a large PyTorch profiler (Kineto) job in the browser
// (issue 15: "an 8-rank 400 MB generated job analysed in the browser
// without the tab exceeding 1 GB"). The repository's generator
// (`kineto_gen`, release build) writes 8 rank traces of one data-parallel
// job (rank 5 slowed by 30 %) totalling at least `--total-mb` MB (default
// 400, decimal MB) under target/bench-kineto/; the 8 files, backed by the
// files on disk as a real drop's are (a file input holds them), are
// dropped on the built page (dist/) in one drop event. The script waits
// until the run is done and the Kineto analysis panel is shown and prints:
// - the wall time from the drop to the analysis shown, the time the
//   worker's first pass (the per-file summaries: the run bar's per-file
//   parse progress; it includes reading the files after the first) took
//   and its rate, and the time of the rest
//   (the run's own parse, analysis and replay, preparing and drawing);
// - the tab's memory before the drop, at its peak while it ran (sampled
//   every 100 ms) and at the end (after a forced garbage collection, CDP
//   HeapProfiler.collectGarbage): the page's JS heap used (CDP
//   Performance.getMetrics JSHeapUsedSize), the page's wasm memory (the
//   WebAssembly.Memory of the page's module) and each Web Worker's wasm
//   memory (asked of the worker itself; wasm memory never shrinks, so its
//   final size is its peak);
//   the page keeps each dropped file as the browser's File (a Blob) and
//   posts that handle; the worker reads one file at a time in 8 MiB
//   slices (each a JS buffer it copies into its wasm memory and hands back
//   to the page, garbage once read, freed when a collector runs: they show
//   only in the renderer's figures), parses it and drops its bytes;
// - the renderer process's own memory, which holds all of these and the
//   rest (the workers' JS heaps, array buffers in transit, DOM, canvas):
//   its private resident memory (/proc RssAnon, what Chromium's task
//   manager calls the memory footprint) and its resident memory (VmRSS,
//   which also counts shared library pages), both sampled every 100 ms
//   (the kernel's own high-water mark, VmHWM, is updated lazily and can
//   miss the peak). The peak varies between runs with when the garbage
//   collectors of the page and the worker free the files' transient
//   buffers (set BENCH_TRACE=1 to print every sample). The tab's renderer
//   is the largest renderer process of the browser this script starts (an
//   idle spare renderer, if any, is listed beside it).
// Figures only: no assertion on size or time (Linux: /proc is read).
//
// Usage: trunk build --release && node tests/e2e/bench-kineto-memory.mjs [--total-mb 400]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, root, waitDone, rendererProcesses } from './harness.js';

const MiB = 1 << 20;
const mib = (b) => `${(b / MiB).toFixed(1)} MiB`;
const WORLD = 8;
const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const totalBytes = arg('--total-mb', 400) * 1e6;

/** Generate the job: per-rank size asked of the generator, raised until
 * the set reaches `totalBytes` (the generator's `--bytes` is approximate). */
function generate() {
  const dir = path.join(root, 'target', 'bench-kineto');
  let perRank = Math.ceil((totalBytes / WORLD) * 1.08);
  for (let attempt = 0; ; attempt += 1) {
    fs.rmSync(dir, { recursive: true, force: true });
    const out = execFileSync('cargo', ['run', '--release', '--locked', '--quiet', '-p', 'trainscope-tests', '--bin', 'kineto_gen', '--',
      dir, '--world', String(WORLD), '--bytes', String(perRank), '--seed', '3', '--slow-rank', '5:30'],
    { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const files = out.trim().split('\n');
    const size = files.reduce((s, f) => s + fs.statSync(f).size, 0);
    if (size >= totalBytes || attempt >= 4) return { files, size };
    perRank = Math.ceil(perRank * (totalBytes / size) * 1.01);
  }
}

/** A process's resident memory from /proc (bytes). */
function procMemory(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k) => Number((status.match(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm')) || [])[1] || 0) * 1024;
    return { rss: kb('VmRSS'), anon: kb('RssAnon'), swap: kb('VmSwap') };
  } catch {
    return null;
  }
}

const pageWasm = (page) => page.evaluate(() => window.__pageWasm?.memory.buffer.byteLength ?? NaN);

/** Each worker's wasm memory (bytes); a worker busy in wasm answers when it is free. */
async function workersWasm(page) {
  const out = [];
  for (const w of page.workers()) {
    out.push(await w.evaluate(async () => (await wasm_bindgen()).memory.buffer.byteLength).catch(() => NaN));
  }
  return out;
}

const { files, size } = generate();
console.log(`kineto: ${WORLD} rank traces, ${(size / 1e6).toFixed(1)} MB (${mib(size)}) in all: ${files.map((f) => `${(fs.statSync(f).size / 1e6).toFixed(1)}`).join(' + ')} MB`);

const { server, url } = await serve();
const browser = await launch();
try {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(() => {
    addEventListener('TrunkApplicationStarted', (e) => { window.__pageWasm = e.detail.wasm; });
  });
  await page.goto(url);
  await page.waitForFunction(() => window.__pageWasm !== undefined);
  // The worker is up once it answers with its wasm module.
  while (page.workers().length === 0) await new Promise((r) => setTimeout(r, 50));
  await workersWasm(page);
  const cdp = await browser.context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const jsHeap = async (gc) => {
    if (gc) await cdp.send('HeapProfiler.collectGarbage');
    const { metrics } = await cdp.send('Performance.getMetrics');
    return metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN;
  };
  const renderers = () => rendererProcesses(browser.userDataDir)
    .map((pid) => ({ pid, ...procMemory(pid) })).filter((p) => p.rss !== undefined)
    .sort((a, b) => b.anon - a.anon);

  const before = { js: await jsHeap(true), wasm: await pageWasm(page), workers: await workersWasm(page), renderers: renderers() };
  const tabPid = before.renderers[0]?.pid;

  // The files, disk-backed as a real drop's: through a file input of our own.
  await page.evaluate(() => {
    const input = document.createElement('input');
    input.type = 'file'; input.multiple = true; input.id = 'bench-files'; input.style.display = 'none';
    document.body.append(input);
  });
  await page.setInputFiles('#bench-files', files);
  // Record the run bar's states and when the analysis appears (page clock).
  await page.evaluate(() => {
    window.__seen = [];
    window.__analysisAt = null;
    new MutationObserver(() => {
      const p = document.querySelector('[data-testid=run-progress]');
      const l = document.querySelector('.run-bar .run-label');
      const label = l?.textContent ?? '';
      const last = window.__seen[window.__seen.length - 1];
      if (!last || last.label !== label) {
        window.__seen.push({ t: performance.now(), label, parsed: p?.dataset.parsedBytes ?? null });
      }
      if (window.__analysisAt === null && document.querySelector('[data-testid=kineto-analysis]')) {
        window.__analysisAt = performance.now();
      }
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });

  // Sample the tab's memory every 100 ms while it runs (node's clock: the
  // page's main thread may be busy; /proc never is).
  const peak = { anon: 0, rss: 0, js: 0, at: 0 };
  const t0 = Date.now();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const m = tabPid ? procMemory(tabPid) : null;
      if (m) {
        if (m.anon + m.swap > peak.anon) { peak.anon = m.anon + m.swap; peak.at = Date.now() - t0; }
        peak.rss = Math.max(peak.rss, m.rss);
        if (process.env.BENCH_TRACE) console.log(`    ${Date.now() - t0} ms: ${mib(m.anon)}`);
      }
      const js = await Promise.race([jsHeap(false), new Promise((r) => setTimeout(() => r(0), 100))]);
      peak.js = Math.max(peak.js, js);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  const dropAt = await page.evaluate(() => {
    const dt = new DataTransfer();
    for (const f of document.getElementById('bench-files').files) dt.items.add(f);
    const target = document.querySelector('.workspace') || document.body;
    for (const type of ['dragenter', 'dragover', 'drop']) {
      target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }
    return performance.now();
  });
  await page.getByTestId('kineto-analysis').waitFor({ timeout: 600000 });
  await waitDone(page, { timeout: 600000 });
  sampling = false;
  await sampler;
  const { seen, analysisAt } = await page.evaluate(() => ({ seen: window.__seen, analysisAt: window.__analysisAt }));
  const straggler = await page.getByTestId('straggler').getAttribute('data-rank').catch(() => null);
  const after = { js: await jsHeap(true), wasm: await pageWasm(page), workers: await workersWasm(page), renderers: renderers() };
  const tabAfter = after.renderers.find((r) => r.pid === tabPid) ?? after.renderers[0];

  // The first pass: from the first per-file parse progress to the last file read in full.
  const parsing = seen.filter((s) => s.parsed !== null);
  const firstParse = parsing[0];
  const lastParse = parsing[parsing.length - 1];
  // The run bar's label is "Run N: <step>".
  const simulating = seen.find((s) => s.label.includes(': Simulating'));
  const preparing = seen.find((s) => s.label.includes(': Preparing results'));
  const sec = (ms) => `${(ms / 1000).toFixed(1)} s`;
  console.log(`  drop to analysis shown: ${sec(analysisAt - dropAt)} (straggler named: rank ${straggler})`);
  if (firstParse && lastParse) {
    const ms = lastParse.t - firstParse.t;
    console.log(`  worker's first pass (file summaries, run bar's per-file parse progress): ${sec(ms)}, ${(size / 1e6 / (ms / 1000)).toFixed(0)} MB/s (before it, the drop, sending the files to the worker and reading the first: ${sec(firstParse.t - dropAt)})`);
  }
  if (simulating && preparing) {
    console.log(`  worker's "Simulating" step (the analysis and the replay of the parsed run): ${sec(preparing.t - simulating.t)}; from "Preparing results" to the analysis shown: ${sec(analysisAt - preparing.t)}`);
  }
  console.log(`  page JS heap:      before ${mib(before.js)}, peak sampled ${mib(peak.js)} (no GC), after ${mib(after.js)} (after GC)`);
  console.log(`  page wasm memory:  before ${mib(before.wasm)}, after ${mib(after.wasm)} (never shrinks: its peak)`);
  console.log(`  workers' wasm memory: before ${before.workers.map(mib).join(', ')}; after (their peaks) ${after.workers.map(mib).join(', ')}`);
  console.log(`  accounted (page JS heap + page wasm + workers' wasm): after ${mib(after.js + after.wasm + after.workers.reduce((a, b) => a + b, 0))}`);
  if (tabAfter) {
    console.log(`  renderer process ${tabPid} private resident (RssAnon+swap): before ${mib(before.renderers[0].anon + before.renderers[0].swap)}, peak sampled ${mib(peak.anon)} (${sec(peak.at)} after the drop was sent), after ${mib(tabAfter.anon + tabAfter.swap)}`);
    console.log(`  renderer process ${tabPid} resident (VmRSS, with shared pages): peak sampled ${mib(peak.rss)}, after ${mib(tabAfter.rss)}`);
    const others = after.renderers.filter((r) => r.pid !== tabPid);
    if (others.length) console.log(`  other renderer processes: ${others.map((r) => `${r.pid} ${mib(r.anon)}`).join(', ')}`);
  } else {
    console.log('  renderer process memory: not found (/proc not readable?)');
  }
  if (errors.length) console.log(`  page errors: ${errors.join('; ')}`);
} finally {
  await browser.close();
  server.close();
}
