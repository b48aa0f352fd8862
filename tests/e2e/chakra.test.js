// Chakra execution traces with their process groups end to end (issue 15):
// the CLI writes a model-level job (Llama 3.2 1B, TP 2 x PP 2 x DP 2, world
// 8) as eight `.et` files and ASTRA-sim's comm_groups.json under
// target/e2e-chakra/; dropped on the page together, the cards read eight
// chakra-et files and one chakra-comm-groups file, and the simulation puts
// rank 4 on stage 1 (the groups' layout) and is faster than the same eight
// files dropped without the groups file, whose collectives then span all
// eight ranks. Screenshots go to target/e2e/chakra-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, screenshot, dist, root, waitDone, dropFiles } from './harness.js';

const skip = fs.existsSync(path.join(dist, 'index.html')) ? false : 'dist/ is not built';

let site; let browser; let files;
before(async () => {
  if (skip) return;
  const dir = path.join(root, 'target', 'e2e-chakra');
  fs.rmSync(dir, { recursive: true, force: true });
  execFileSync('cargo', ['run', '--locked', '--quiet', '-p', 'trainscope-cli', '--', 'convert',
    '--model', 'llama3.2-1b', '--world', '8', '--tp', '2', '--pp', '2', '--to', 'chakra-et', '-o', dir],
  { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  files = fs.readdirSync(dir).sort().map((name) => ({
    name, bytes: fs.readFileSync(path.join(dir, name)),
  }));
  site = await serve(dist);
  browser = await launch();
});
after(async () => { if (!skip) { await browser.close(); site.server.close(); } });

/** Drop `list`, wait for the run; the formats, iteration time and the
 * simulated timeline's groups. */
async function run(list, shot) {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await dropFiles(page, list);
  await page.locator('[data-testid="file-card"]').nth(list.length - 1).waitFor();
  await waitDone(page, { timeout: 120000 });
  const formats = (await page.locator('[data-testid="file-card"] [data-testid="format"]').allTextContents())
    .map((f) => f.trim());
  const ns = Number(await page.getByTestId('iteration-time').getAttribute('data-ns'));
  await page.waitForFunction(() => {
    const c = document.querySelector('[data-testid=timeline]');
    return c && c.dataset.runs && c.dataset.groups;
  }, null, { timeout: 30000 });
  const canvas = page.getByTestId('timeline');
  const runs = (await canvas.getAttribute('data-runs')).split(',');
  const section = runs.indexOf('simulated');
  const groups = (await canvas.getAttribute('data-groups')).split('|')
    .filter((g) => g.startsWith(`${section}:`)).map((g) => g.slice(String(section).length + 1));
  // What the input measured, in the format's own words (not another's).
  const covers = await page.getByTestId('measured-covers').textContent();
  await screenshot(page, shot);
  assert.deepEqual(errors, []);
  await page.close();
  return { formats, ns, groups, covers };
}

test('a Chakra set dropped with its comm_groups.json simulates each collective over its group', { skip }, async () => {
  assert.equal(files.length, 9, files.map((f) => f.name).join(', '));
  const with_ = await run(files, 'chakra-groups');
  const count = (fs_, f) => fs_.filter((x) => x === f).length;
  assert.equal(count(with_.formats, 'chakra-et'), 8, `${with_.formats}`);
  assert.equal(count(with_.formats, 'chakra-comm-groups'), 1, `${with_.formats}`);
  assert.ok(with_.groups.some((g) => g.includes('rank 4 · stage 1')), `groups: ${with_.groups}`);
  assert.match(with_.covers, /^Chakra execution traces record each compute node's duration/);
  assert.doesNotMatch(with_.covers, /Optimus|forward passes only|ProfilerStep/);

  const without = await run(files.filter((f) => f.name.endsWith('.et')), 'chakra-no-groups');
  assert.ok(without.groups.some((g) => g.includes('rank 4 · stage 0')), `groups: ${without.groups}`);
  assert.ok(with_.ns > 0 && with_.ns < without.ns, `with ${with_.ns} ns, without ${without.ns} ns`);
});
