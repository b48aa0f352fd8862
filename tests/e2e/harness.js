// Shared end-to-end harness: serves dist/ on 127.0.0.1 (a random free port),
// launches Debian's Chromium through playwright-core, collects console errors,
// and saves screenshots under target/e2e/.
import { chromium } from 'playwright-core';
import http from 'node:http';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '..', '..');
export const dist = path.join(root, 'dist');
export const seeds = path.join(root, 'tests', 'fixtures', 'seeds');
export const shots = path.join(root, 'target', 'e2e');

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.wasm': 'application/wasm',
  '.css': 'text/css', '.json': 'application/json', '.txt': 'text/plain', '.tsv': 'text/plain',
  '.log': 'text/plain', '.png': 'image/png', '.svg': 'image/svg+xml',
};

/** Serve `dir` statically on 127.0.0.1, optionally under a sub-path prefix. */
export function serve(dir = dist, prefix = '/') {
  const server = http.createServer((req, res) => {
    let url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (!url.startsWith(prefix)) { res.writeHead(404); res.end(); return; }
    url = '/' + url.slice(prefix.length);
    let file = path.normalize(path.join(dir, url));
    if (!file.startsWith(dir)) { res.writeHead(403); res.end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end('not found'); return; }
      res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream' });
      res.end(data);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    resolve({ server, url: `http://127.0.0.1:${port}${prefix}` });
  }));
}

/** Launch headless Chromium with the flags this closed network needs
 * (and `extraArgs`, e.g. `--js-flags=--expose-gc`). */
export async function launch(extraArgs = []) {
  const userDataDir = fs.mkdtempSync(path.join(root, 'target', 'chromium-'));
  const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs],
  });
  return {
    context,
    userDataDir,
    async close() {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** The process ids of the web-content renderer processes of the Chromium
 * started by `launch()` with `userDataDir` (Linux: read from /proc; every
 * process of that browser names the directory on its command line, which
 * Chromium's children rewrite as one string; the browser's own WebUI
 * renderer is left out). */
export function rendererProcesses(userDataDir) {
  const pids = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let cmd;
    try { cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' '); } catch { continue; }
    if (cmd.includes(`--user-data-dir=${userDataDir} `) && cmd.includes('--type=renderer') && !cmd.includes('--top-chrome-webui')) {
      pids.push(Number(name));
    }
  }
  return pids;
}

/** How long a page may take to start (fetch and compile its wasm, mount):
 * generous, a cold machine with 2 shared cores is slow. */
export const READY_TIMEOUT_MS = 120000;

/** Wait for the page's readiness signal: `<body data-ready="1">`, set by the
 * app once mounted (app.rs `mark_ready`; the timeline bench page too). */
export async function waitReady(page, timeout = READY_TIMEOUT_MS) {
  await page.locator('body[data-ready="1"]').waitFor({ state: 'attached', timeout });
}

/** A new page that records console errors and page errors into `errors`.
 * Its `goto` and `reload` wait for the app's readiness signal
 * ([`waitReady`]) before returning, so no test interacts with a page
 * that is still starting; pass `{ ready: false }` to return at once (a
 * test of what happens during start-up). */
export async function newPage(context) {
  const page = await context.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  for (const name of ['goto', 'reload']) {
    const original = page[name].bind(page);
    page[name] = async (...args) => {
      const last = args.length && typeof args[args.length - 1] === 'object' ? args.pop() : {};
      const { ready = true, ...options } = last ?? {};
      const response = await original(...args, options);
      if (ready) await waitReady(page);
      return response;
    };
  }
  return { page, errors };
}

export async function screenshot(page, name) {
  fs.mkdirSync(shots, { recursive: true });
  const file = path.join(shots, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Start recording main-thread tasks over 50 ms (Long Tasks API);
 * `longTasksSeen(page)` returns their durations, ms. */
export async function watchLongTasks(page) {
  await page.evaluate(() => {
    window.__longTasks = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longTasks.push(e.duration); })
      .observe({ type: 'longtask', buffered: false });
  });
}

/** Durations of the long tasks seen since `watchLongTasks(page)`, ms. */
export function longTasksSeen(page) {
  return page.evaluate(() => window.__longTasks);
}

/** Wait until the newest run has finished (`options`: Playwright's, e.g. a timeout). */
export async function waitDone(page, options) {
  await page.locator('[data-testid="run-status"][data-state="done"]').waitFor(options);
}

/** Drop `files` ({name, bytes}: a Buffer or string each) on the page as one
 * synthetic drag and drop, as a user dropping them on the workspace. */
export async function dropFiles(page, files) {
  const list = files.map((f) => ({ name: f.name, b64: Buffer.from(f.bytes).toString('base64') }));
  await page.evaluate((fs) => {
    const dt = new DataTransfer();
    for (const f of fs) {
      const bytes = Uint8Array.from(atob(f.b64), (c) => c.charCodeAt(0));
      dt.items.add(new File([bytes], f.name));
    }
    const target = document.querySelector('.workspace') || document.body;
    for (const type of ['dragenter', 'dragover', 'drop']) {
      target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
    }
  }, list);
}

/** Click the gallery example whose text holds `name` and wait for its run. */
export async function loadExample(page, name) {
  await page.getByTestId('example').filter({ hasText: name }).click();
  await waitDone(page);
}

/** A large SimAI workload of `records` records (seed 000's header, its
 * records repeated) written under target/; returns its path. */
export function bigWorkload(records) {
  const lines = fs.readFileSync(path.join(seeds, 'simai_llama65b_tp8_pp4_vpp8.txt'), 'utf8').split('\n');
  const body = lines.slice(2).filter((l) => l.trim() !== '');
  const out = [lines[0], String(records)];
  for (let i = 0; out.length < records + 2; i++) out.push(body[i % body.length]);
  const file = path.join(root, 'target', `e2e-big-${records}.txt`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, out.join('\n') + '\n');
  return file;
}

/** `trainscope simulate --json ARGS`, parsed (the debug binary `cargo test`
 * built; built here when missing). */
export function cli(args) {
  const bin = path.join(root, 'target', 'debug', 'trainscope');
  if (!fs.existsSync(bin)) execFileSync('cargo', ['build', '-q', '-p', 'trainscope-cli'], { cwd: root });
  return JSON.parse(execFileSync(bin, ['simulate', '--json', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }));
}

/** Wait until the newest edit's run has finished and its result is shown
 * (no stale results left); `options`: Playwright's, e.g. a timeout. */
export async function settled(page, options) {
  await page.waitForFunction(() => {
    const s = document.querySelector('[data-testid="run-status"]');
    return s && s.dataset.state === 'done' && !document.querySelector('.results.stale');
  }, null, options);
  await waitDone(page);
}

/** Describe the e2e tests' usual job in the job panel: Llama 3 8B, DP 4,
 * PP 2, global batch 32 (the CLI's `--model llama3-8b --dp 4 --pp 2
 * --global-batch-size 32`). */
export async function describeLlama8b(page) {
  await describeJob(page, { model: 'llama3-8b', dp: '4', gbs: '32', pp: '2' });
}

/** Describe a job in the job panel: each key's field (`data-testid`
 * `job-KEY`: `model`, `tp`, `dp`, `gbs`, `zero`, ...) set in the order
 * given, a select to the option of that value, an input filled with it. */
export async function describeJob(page, fields) {
  for (const [key, value] of Object.entries(fields)) {
    const field = page.getByTestId(`job-${key}`);
    if (await field.evaluate((e) => e.tagName === 'SELECT')) await field.selectOption(String(value));
    else await field.fill(String(value));
  }
}

/** What the page shows of a described job: MFU, iteration time (ns), peak
 * bytes per stage. */
export async function jobShown(page) {
  await page.getByTestId('job-mfu').waitFor();
  const peaks = await page.locator('[data-testid="job-memory-table"] [data-testid="job-memory-row"]')
    .evaluateAll((rows) => rows.map((r) => Number(r.dataset.peakBytes)));
  return {
    mfu: Number(await page.getByTestId('job-mfu').getAttribute('data-value')),
    ns: Number(await page.getByTestId('iteration-time').getAttribute('data-ns')),
    peaks,
  };
}
