// Timeline canvas benchmark (issue 7). Serves the Trunk-built bench page
// (target/bench-dist, see the usage line below), loads a generated run of a
// million spans in headless Chromium, zooms and pans across it with real
// input events (wheel, drag, keys, overview drag, hover), and reports the
// median and worst frame times and the memory per span. Times come from
// the page: the component's own draw time (performance.now() around the
// draw call), the interval from each drawn frame's requestAnimationFrame
// timestamp to the next one (draw plus rasterising and compositing on the
// main thread), and per drawn frame the frame time max(draw, interval),
// no frame dropped. Runs
// twice: 1280x800 at device pixel ratio 1 (the goal) and 1920x1080 at
// ratio 2 (HiDPI, four times the pixels of a wider canvas). Also saves
// screenshots under target/bench/ (the million-span run at several zooms,
// seed 000 with a selection and the critical path, compare mode).
//
// Usage: trunk build www/bench/timeline.html --release --dist target/bench-dist
//        node tests/e2e/bench-timeline.mjs [--spans 1000000] [--no-shots] [--no-hidpi]
import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { serve, root } from './harness.js';

/** Zoom with the wheel (Perfetto's convention, the page's: Ctrl+wheel
 * zooms; the plain wheel scrolls). */
async function zoomWheel(page, dy) {
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, dy);
  await page.keyboard.up('Control');
}


const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const spans = Number(arg('--spans', '1000000'));
const shots = !args.includes('--no-shots');
const hidpi = !args.includes('--no-hidpi');
const dist = path.join(root, 'target', 'bench-dist');
const out = path.join(root, 'target', 'bench');
if (!fs.existsSync(path.join(dist, 'index.html'))) {
  console.error(`no ${dist}/index.html: run trunk build www/bench/timeline.html --release --dist target/bench-dist`);
  process.exit(2);
}
fs.mkdirSync(out, { recursive: true });

const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const pct = (xs, p) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : String(x));
const ready = (page) => page.waitForFunction(
  () => window.__tlInfo && window.__tlFrames && window.__tlFrames.length > 0, null, { timeout: 120000 });

/** Load the million-span page in a fresh context, drive it, measure. */
async function scenario(browser, url, { width, height, dpr, screenshots }) {
  const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: dpr });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const t0 = Date.now();
  await page.goto(`${url}?spans=${spans}`);
  await ready(page);
  const loadMs = Date.now() - t0;
  const info = await page.evaluate(() => window.__tlInfo);
  const first = await page.evaluate(() => window.__tlFrames[0]);

  const canvas = page.getByTestId('timeline');
  const box = await canvas.boundingBox();
  const ov = await page.getByTestId('timeline-overview').boundingBox();
  const plotLeft = box.x + 180;
  const plotW = box.x + box.width - 10 - plotLeft;
  const midY = box.y + Math.min(box.height - 10, 120);

  // In-page recorder of animation-frame timestamps; reset the draw log.
  await page.evaluate(() => {
    window.__tlFrames.length = 0;
    window.__raf = [];
    const tick = (t) => { window.__raf.push(t); window.__rafId = requestAnimationFrame(tick); };
    window.__rafId = requestAnimationFrame(tick);
  });
  const frame = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const range = () => page.getByTestId('view-range').evaluate((e) => [Number(e.dataset.startNs), Number(e.dataset.endNs)]);
  const ranges = [await range()];
  const phases = [];
  const phase = async (name) => phases.push({ name, t: await page.evaluate(() => performance.now()) });

  await phase('wheel zoom in');
  // 1. Zoom in with the wheel around three points.
  for (const fx of [0.5, 0.3, 0.7]) {
    await page.mouse.move(plotLeft + fx * plotW, midY);
    for (let i = 0; i < 8; i++) { await zoomWheel(page, -240); await frame(); }
  }
  ranges.push(await range());
  await phase('drag pan');
  // 2. Drag-pan left and right.
  for (const dir of [-1, 1, -1]) {
    const x0 = plotLeft + plotW / 2;
    await page.mouse.move(x0, midY);
    await page.mouse.down();
    for (let i = 1; i <= 20; i++) { await page.mouse.move(x0 + dir * i * 20, midY + (i % 3)); await frame(); }
    await page.mouse.up();
  }
  ranges.push(await range());
  await phase('keys');
  // 3. Keys: D/A pan, S/W zoom.
  await page.locator('.ts-timeline').focus();
  for (const k of ['d', 'd', 'd', 'd', 'a', 'a', 's', 's', 's', 'w', 'w', 'd', 'd']) {
    await page.keyboard.press(k); await frame();
  }
  ranges.push(await range());
  await phase('wheel zoom out, overview drag');
  // 4. Zoom all the way out with the wheel (fit), then sweep the overview.
  await page.mouse.move(plotLeft + 0.5 * plotW, midY);
  for (let i = 0; i < 20; i++) { await zoomWheel(page, 400); await frame(); }
  ranges.push(await range());
  for (let i = 0; i < 6; i++) { await zoomWheel(page, -300); await frame(); }
  await page.mouse.move(ov.x + 185, ov.y + ov.height / 2);
  await page.mouse.down();
  for (let i = 1; i <= 25; i++) { await page.mouse.move(ov.x + 185 + i * (ov.width - 200) / 25, ov.y + ov.height / 2); await frame(); }
  await page.mouse.up();
  ranges.push(await range());
  await phase('deep zoom, hover');
  // 5. Deep zoom (tens of nanoseconds) and pan there; hover spans.
  await page.mouse.move(plotLeft + 0.4 * plotW, midY);
  for (let i = 0; i < 30; i++) { await zoomWheel(page, -300); await frame(); }
  for (let i = 0; i < 10; i++) { await page.keyboard.press('d'); await frame(); }
  for (let i = 0; i < 10; i++) { await page.mouse.move(plotLeft + (0.1 + i * 0.08) * plotW, box.y + 40 + i * 8); await frame(); }
  ranges.push(await range());
  await phase('fit, critical path');
  // 6. Fit button, critical path on, a few zooms with it.
  await page.getByTestId('timeline-fit').click(); await frame();
  await page.getByTestId('timeline-critical').click(); await frame();
  await page.mouse.move(plotLeft + 0.5 * plotW, midY);
  for (let i = 0; i < 8; i++) { await zoomWheel(page, -240); await frame(); }
  await page.getByTestId('timeline-critical').click(); await frame();

  const frames = await page.evaluate(() => { cancelAnimationFrame(window.__rafId); return window.__tlFrames.slice(); });
  const raf = await page.evaluate(() => window.__raf.slice());
  const mem = await page.evaluate(() => (performance.memory
    ? { used_js_heap: performance.memory.usedJSHeapSize, total_js_heap: performance.memory.totalJSHeapSize } : null));

  // Every drawn frame counts (none is dropped). Its animation frame is the
  // last rAF timestamp at or before the draw began; its interval is the
  // wall time from that timestamp to the next animation frame (for the
  // last frame, with no later callback: to the end of its draw). Its frame
  // time is max(draw time, interval): a frame is never shorter than its
  // draw.
  const drawMs = frames.map((f) => f[0]);
  const intervalMs = [];
  const frameMs = [];
  frames.forEach((f) => {
    const start = f[5] - f[0];
    let k = -1;
    for (let i = 0; i < raf.length; i++) { if (raf[i] <= start + 0.5) k = i; else break; }
    let interval;
    if (k >= 0 && k + 1 < raf.length) interval = raf[k + 1] - raf[k];
    else if (k >= 0) interval = f[5] - raf[k];
    else interval = f[0];
    intervalMs.push(interval);
    frameMs.push(Math.max(f[0], interval));
  });
  const byPhase = {};
  frames.forEach((f, i) => {
    const ph = [...phases].reverse().find((p) => p.t <= f[5]);
    const key = ph ? ph.name : 'start';
    const v = (byPhase[key] ||= { draw_ms: [], interval_ms: [], frame_ms: [] });
    v.draw_ms.push(f[0]);
    v.interval_ms.push(intervalMs[i]);
    v.frame_ms.push(frameMs[i]);
  });
  const phaseSummary = Object.fromEntries(Object.entries(byPhase).map(([k, v]) => [k, {
    frames: v.draw_ms.length,
    draw_median: median(v.draw_ms), draw_worst: Math.max(...v.draw_ms),
    interval_median: median(v.interval_ms), interval_worst: Math.max(...v.interval_ms),
    frame_median: median(v.frame_ms), frame_worst: Math.max(...v.frame_ms),
  }]));
  const result = {
    viewport: `${width}x${height}@${dpr}`,
    spans: info.spans,
    lanes: info.lanes,
    end_ns: info.end_ns,
    page_load_ms: loadMs,
    build_ms: Math.round(info.build_ms),
    first_frame_draw_ms: first[0],
    frames: frames.length,
    draw_ms: { median: median(drawMs), p95: pct(drawMs, 0.95), worst: Math.max(...drawMs) },
    interval_ms: { median: median(intervalMs), p95: pct(intervalMs, 0.95), worst: Math.max(...intervalMs) },
    frame_ms: { median: median(frameMs), p95: pct(frameMs, 0.95), worst: Math.max(...frameMs), samples: frameMs.length },
    critical_rects_per_lane_max: Math.max(0, ...frames.map((f) => f[7] ?? 0)),
    rects_per_frame_max: Math.max(...frames.map((f) => f[1])),
    texts_per_frame_max: Math.max(...frames.map((f) => f[2])),
    max_lane_primitives: Math.max(...frames.map((f) => f[4])),
    heap_bytes_per_span: info.heap_bytes / info.spans,
    wasm_growth_bytes_per_span: (info.wasm_bytes_after - info.wasm_bytes_before) / info.spans,
    wasm_memory_bytes: info.wasm_bytes_after,
    wasm_memory_bytes_per_span: info.wasm_bytes_after / info.spans,
    js_heap: mem,
    phases: phaseSummary,
    ranges,
    errors,
  };
  if (screenshots) {
    await page.getByTestId('timeline-fit').click(); await frame();
    await page.screenshot({ path: path.join(out, 'timeline-1m-fit.png') });
    await page.mouse.move(plotLeft + 0.5 * plotW, midY);
    for (let i = 0; i < 10; i++) { await zoomWheel(page, -300); await frame(); }
    await page.screenshot({ path: path.join(out, 'timeline-1m-zoomed.png') });
    for (let i = 0; i < 12; i++) { await zoomWheel(page, -300); await frame(); }
    await page.screenshot({ path: path.join(out, 'timeline-1m-deep.png') });
  }
  await context.close();
  return result;
}

function print(m) {
  console.log(`[${m.viewport}] ${m.spans} spans on ${m.lanes} lanes, built in ${m.build_ms} ms, page ready in ${m.page_load_ms} ms`);
  console.log(`  frames drawn: ${m.frames} (first frame at load: ${f1(m.first_frame_draw_ms)} ms draw, overview included)`);
  console.log(`  draw time   (ms): median ${f1(m.draw_ms.median)}, p95 ${f1(m.draw_ms.p95)}, worst ${f1(m.draw_ms.worst)}`);
  console.log(`  interval    (ms): median ${f1(m.interval_ms.median)}, p95 ${f1(m.interval_ms.p95)}, worst ${f1(m.interval_ms.worst)} (wall time from a drawn frame's animation frame to the next)`);
  console.log(`  frame time  (ms): median ${f1(m.frame_ms.median)}, p95 ${f1(m.frame_ms.p95)}, worst ${f1(m.frame_ms.worst)} (per drawn frame: max(draw, interval); all ${m.frame_ms.samples} frames)`);
  console.log(`  rectangles per frame: at most ${m.rects_per_frame_max}; primitives per lane: at most ${m.max_lane_primitives}; critical-path rectangles per lane: at most ${m.critical_rects_per_lane_max}; texts: at most ${m.texts_per_frame_max}`);
  for (const [k, v] of Object.entries(m.phases)) {
    console.log(`    ${k.padEnd(30)} ${String(v.frames).padStart(4)} frames, draw median ${f1(v.draw_median)} worst ${f1(v.draw_worst)}, interval median ${f1(v.interval_median)} worst ${f1(v.interval_worst)}, frame median ${f1(v.frame_median)} worst ${f1(v.frame_worst)}`);
  }
  if (m.errors.length) console.log(`  page errors: ${m.errors.join(' | ')}`);
}

const site = await serve(dist);
const b = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const browser = { context: await b.newContext({ viewport: { width: 1280, height: 800 } }) };
const results = {};
try {
  results.million = await scenario(b, site.url, { width: 1280, height: 800, dpr: 1, screenshots: shots });
  if (hidpi) results.hidpi = await scenario(b, site.url, { width: 1920, height: 1080, dpr: 2, screenshots: false });

  // Memory of the same run built without dependency edges (measured runs
  // usually have none): a fresh page, so wasm memory starts from scratch.
  const p3 = await browser.context.newPage();
  await p3.goto(`${site.url}?spans=${spans}&deps=0`);
  await ready(p3);
  const i3 = await p3.evaluate(() => window.__tlInfo);
  results.without_dependencies = {
    spans: i3.spans,
    heap_bytes_per_span: i3.heap_bytes / i3.spans,
    wasm_memory_bytes_per_span: i3.wasm_bytes_after / i3.spans,
  };
  await p3.close();

  if (shots) {
    // Seed 000 simulated: fit, a selection with dependencies, the critical path.
    const p2 = await browser.context.newPage();
    await p2.setViewportSize({ width: 1280, height: 800 });
    await p2.goto(`${site.url}?seed=000`);
    await ready(p2);
    await p2.waitForTimeout(50);
    await p2.screenshot({ path: path.join(out, 'timeline-seed000-fit.png') });
    const c2 = await p2.getByTestId('timeline').boundingBox();
    const sx = c2.x + 180 + (c2.width - 190) * 0.55;
    await p2.mouse.move(sx, c2.y + 24 + 3 * 20 + 10);
    for (let i = 0; i < 6; i++) { await p2.mouse.wheel(0, -240); await p2.waitForTimeout(30); }
    await p2.mouse.move(sx + 40, c2.y + 24 + 5 * 20 + 10);
    await p2.mouse.down(); await p2.mouse.up();
    await p2.waitForTimeout(100);
    await p2.mouse.move(sx + 120, c2.y + 24 + 7 * 20 + 10);
    await p2.waitForTimeout(100);
    await p2.screenshot({ path: path.join(out, 'timeline-seed000-selected.png') });
    await p2.getByTestId('timeline-critical').click();
    await p2.getByTestId('timeline-fit').click();
    await p2.mouse.move(10, 10);
    await p2.waitForTimeout(100);
    await p2.screenshot({ path: path.join(out, 'timeline-seed000-critical.png') });
    await p2.goto(`${site.url}?seed=000&compare=1`);
    await ready(p2);
    await p2.waitForTimeout(100);
    await p2.screenshot({ path: path.join(out, 'timeline-seed000-compare.png'), fullPage: true });
    await p2.close();
  }
} finally {
  await b.close();
  site.server.close();
}

fs.writeFileSync(path.join(out, 'timeline-bench.json'), JSON.stringify(results, null, 2));
const m = results.million;
console.log('timeline benchmark (headless Chromium, software rendering)');
print(m);
if (results.hidpi) print(results.hidpi);
console.log(`memory per span: ${f1(m.heap_bytes_per_span)} B retained (Timeline::heap_bytes, with dependency edges); wasm linear memory ${f1(m.wasm_memory_bytes_per_span)} B/span (${(m.wasm_memory_bytes / 1048576).toFixed(0)} MiB, the build's peak: wasm memory never shrinks)`);
const nd = results.without_dependencies;
console.log(`  without dependency edges: ${f1(nd.heap_bytes_per_span)} B/span retained, wasm memory ${f1(nd.wasm_memory_bytes_per_span)} B/span`);
if (m.js_heap) console.log(`  JS heap: ${(m.js_heap.used_js_heap / 1048576).toFixed(1)} MiB used`);
const ok = m.frame_ms.median < 33 && m.frame_ms.worst < 100 && m.wasm_memory_bytes_per_span < 100;
console.log(`goals at 1280x800 (frame median < 33 ms, worst < 100 ms, wasm memory < 100 B/span): ${ok ? 'met' : 'NOT met'}`);
console.log(`details: ${path.relative(root, path.join(out, 'timeline-bench.json'))}`);
