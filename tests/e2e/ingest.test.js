// Ingest end to end: pick a seed through the file input, see its detected
// format and header; pick garbage, see a visible error; the gallery loads.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { serve, launch, newPage, screenshot, seeds, root } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

test('a SimAI seed picked through the file input shows its format and header', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await page.getByTestId('file-input').setInputFiles(path.join(seeds, 'simai_llama65b_tp8_pp4_vpp8.txt'));
  const card = page.locator('[data-testid="file-card"][data-file="simai_llama65b_tp8_pp4_vpp8.txt"]');
  await card.waitFor();
  assert.equal(await card.getByTestId('format').textContent(), 'simai-workload');
  assert.equal(await card.getByTestId('tp').textContent(), '8');
  assert.equal(await card.getByTestId('pp').textContent(), '4');
  assert.equal(await card.getByTestId('world').textContent(), '512');
  assert.match(await card.getByTestId('records').textContent(), /^33 read/);
  await screenshot(page, 'ingest-seed000');

  const garbage = path.join(root, 'target', 'e2e-garbage.bin');
  fs.mkdirSync(path.dirname(garbage), { recursive: true });
  fs.writeFileSync(garbage, 'this is not a workload\nat all\n');
  await page.getByTestId('file-input').setInputFiles(garbage);
  const bad = page.locator('[data-testid="file-card"][data-file="e2e-garbage.bin"]');
  await bad.waitFor();
  const err = bad.getByTestId('error');
  assert.ok(await err.isVisible(), 'the error is visible');
  assert.match(await err.textContent(), /unrecognised format/);
  assert.equal(await bad.getByTestId('format').textContent(), 'unrecognised');
  await screenshot(page, 'ingest-garbage');
  assert.deepEqual(errors, []);
});

test('every bundled example loads from the gallery with its detected format, replacing the previous one', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  const examples = page.getByTestId('example');
  await examples.first().waitFor();
  const n = await examples.count();
  assert.equal(n, 5);
  const want = {
    'simai_llama65b_tp8_pp4_vpp8.txt': 'simai-workload',
    'simai_405b_tp8_pp16_ga16_sp.txt': 'simai-workload',
    'neusight_gpt2large_dp_workitems.tsv': 'neusight-tsv',
    'echo_megatron_trace_rank7_tp2_pp4.txt': 'echo-trace',
    'optimus_prime_llama1b_pp8_train.log': 'optimus-prime-log',
  };
  // One at a time: an example replaces what was loaded.
  for (const [file, format] of Object.entries(want)) {
    await examples.filter({ hasText: file }).click();
    const card = page.locator(`[data-testid="file-card"][data-file="${file}"]`);
    await card.waitFor();
    assert.equal(await card.getByTestId('format').textContent(), format, file);
    assert.equal(await page.locator('[data-testid="file-card"]').count(), 1, file);
    await screenshot(page, `gallery-${format}`);
  }
  assert.deepEqual(errors, []);
});

test('the site works from a sub-path of a static host', async () => {
  const sub = await serve(undefined, '/some/sub/path/');
  try {
    const { page, errors } = await newPage(browser.context);
    await page.goto(sub.url);
    await page.getByTestId('example').first().click();
    await page.locator('[data-testid="file-card"]').first().waitFor();
    assert.deepEqual(errors, []);
  } finally { sub.server.close(); }
});
