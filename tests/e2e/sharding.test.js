// Sharded data parallelism on the page (issue 25): the job panel's Sharding
// select runs Llama 3 8B on 8 GPUs as ZeRO-3 / FSDP; the memory per stage,
// the iteration time and the MFU equal the CLI's `simulate --model ...
// --zero 3 --json`; the CLI command and the permalink carry it and a reload
// restores it; the timeline's DP lane shows the per-layer all-gathers and
// reduce-scatters; ZeRO-2 with PP 2 shows the core's refusal. Screenshot:
// target/e2e/sharding-fsdp.png. HSDP and offload: the second test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, launch, newPage, screenshot, cli, settled, jobShown as shown, describeJob } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

test('the Sharding select runs ZeRO-3 as the CLI does, the link restores it, ZeRO-2 with PP is refused', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'llama3-8b', dp: '8', gbs: '16', seq: '2048' });
  await page.waitForFunction(() => location.hash.includes('job_seq=2048'));
  await settled(page);
  const plain = await shown(page);
  await page.getByTestId('job-zero').selectOption('3');
  await page.waitForFunction(() => location.hash.includes('job_zero=3'));
  await settled(page);
  const z3 = await shown(page);
  assert.ok(z3.peaks[0] < plain.peaks[0], `ZeRO-3 shards the weights (${plain.peaks[0]} -> ${z3.peaks[0]})`);
  const want = cli(['--model', 'llama3-8b', '--dp', '8', '--global-batch-size', '16', '--seq-length', '2048', '--zero', '3']);
  assert.equal(want.training.zero, 3);
  assert.equal(z3.ns, want.iteration_time_ns);
  assert.equal(z3.mfu, want.mfu);
  assert.deepEqual(z3.peaks, want.memory.per_stage.map((s) => s.peak_bytes));
  assert.match(await page.getByTestId('job-cli').textContent(), / --zero 3$/);
  // ZeRO-3 implies the distributed optimizer's sharding: the box follows.
  assert.equal(await page.getByTestId('job-dist-opt').isChecked(), true);
  await screenshot(page, 'sharding-fsdp');

  const hash = await page.evaluate(() => location.hash);
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-zero').inputValue(), '3');
  assert.deepEqual(await shown(page), z3);

  // ZeRO-2 with pipeline parallelism: the core's refusal.
  await describeJob(page, { zero: '2', pp: '2', dp: '4' });
  const err = page.getByTestId('job-error');
  await err.waitFor();
  assert.match(await err.textContent(), /ZeRO-2 with pipeline parallelism \(PP 2\)/);
  assert.ok(hash.includes('job_zero=3'));
  assert.deepEqual(errors, []);
});

// HSDP and offload on the page (issue 25): the job panel's HSDP shard group
// and Offload fields give the CLI's numbers for `--zero 3 --hsdp-shard 4`
// and then `--offload optimizer`; the CLI line and the link carry them; a
// shard group that does not divide DP shows the core's refusal.
test('HSDP shard group and offload run as the CLI does', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'llama3-8b', dp: '8', gbs: '16', seq: '2048', zero: '3', 'hsdp-shard': '4' });
  await page.waitForFunction(() => location.hash.includes('job_hsdp_shard=4'));
  await settled(page);
  const hsdp = await shown(page);
  const base = ['--model', 'llama3-8b', '--dp', '8', '--global-batch-size', '16', '--seq-length', '2048', '--zero', '3'];
  const want = cli([...base, '--hsdp-shard', '4']);
  assert.equal(want.training.hsdp_shard, 4);
  assert.equal(want.training.hsdp_replicate, 2);
  assert.equal(hsdp.ns, want.iteration_time_ns);
  assert.equal(hsdp.mfu, want.mfu);
  assert.deepEqual(hsdp.peaks, want.memory.per_stage.map((s) => s.peak_bytes));
  assert.match(await page.getByTestId('job-cli').textContent(), / --zero 3 --hsdp-shard 4$/);

  await page.getByTestId('job-offload').selectOption('optimizer');
  await page.waitForFunction(() => location.hash.includes('job_offload=optimizer'));
  await settled(page);
  const off = await shown(page);
  const wantOff = cli([...base, '--hsdp-shard', '4', '--offload', 'optimizer']);
  assert.equal(wantOff.training.offload, 'optimizer');
  assert.equal(off.ns, wantOff.iteration_time_ns);
  assert.deepEqual(off.peaks, wantOff.memory.per_stage.map((s) => s.peak_bytes));
  assert.ok(off.peaks[0] < hsdp.peaks[0], `offload frees the optimizer states (${hsdp.peaks[0]} -> ${off.peaks[0]})`);
  assert.match(await page.getByTestId('job-cli').textContent(), / --hsdp-shard 4 --offload optimizer$/);

  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-hsdp-shard').inputValue(), '4');
  assert.equal(await page.getByTestId('job-offload').inputValue(), 'optimizer');
  assert.deepEqual(await shown(page), off);

  await page.getByTestId('job-hsdp-shard').fill('3');
  const err = page.getByTestId('job-error');
  await err.waitFor();
  assert.match(await err.textContent(), /HSDP shard 3 does not divide DP 8/);
  assert.deepEqual(errors, []);
});
