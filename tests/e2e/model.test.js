// The "Describe a job" panel end to end: pick a preset, change TP, see the
// memory per stage and the MFU change (and equal the CLI's `simulate --model
// ... --json`), reload the permalink and see the same job restored and run;
// an invalid TP shows the core's message; a dropped config.json runs as the
// job with the panel's settings; an uneven pipeline split (DeepSeek-V3's 61
// layers on 16 stages) equals the CLI's; the attention kernel select
// (FlashAttention-2 as the CLI runs it); the CP field (memory drops, the
// CLI agrees, the link restores it, the core's refusal); a figure: Llama 3 70B on 1024 GPUs
// from the Run button to its result; the timeline's memory lanes mark each
// stage's peak at the CLI's `peak_time_ns` and hovering a marker shows what
// is resident then. Screenshots: target/e2e-model-job.png,
// target/e2e/model-memory-peak.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, root, screenshot, cli, settled, jobShown as shown, describeLlama8b, describeJob } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

test('a preset job: TP changes memory and MFU, the permalink restores and runs it, an invalid TP is refused', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  const panel = page.getByTestId('job-panel');
  assert.equal(await panel.getAttribute('data-active'), 'false');
  await describeLlama8b(page);
  await settled(page);
  assert.equal(await panel.getAttribute('data-active'), 'true');
  const tp1 = await shown(page);
  assert.equal(tp1.peaks.length, 2, 'one memory row per stage');
  // The page's numbers are the CLI's.
  const want1 = cli(['--model', 'llama3-8b', '--pp', '2', '--dp', '4', '--global-batch-size', '32']);
  assert.equal(tp1.ns, want1.iteration_time_ns);
  assert.equal(tp1.mfu, want1.mfu);
  assert.deepEqual(tp1.peaks, want1.memory.per_stage.map((s) => s.peak_bytes));

  await page.getByTestId('job-tp').fill('2');
  await page.waitForFunction(() => location.hash.includes('job_tp=2'));
  await settled(page);
  const tp2 = await shown(page);
  assert.notEqual(tp2.mfu, tp1.mfu, 'MFU changes with TP');
  assert.ok(tp2.peaks[0] < tp1.peaks[0], `TP 2 needs less memory per GPU (${tp1.peaks[0]} -> ${tp2.peaks[0]})`);
  const want2 = cli(['--model', 'llama3-8b', '--tp', '2', '--pp', '2', '--dp', '4', '--global-batch-size', '32']);
  assert.equal(tp2.mfu, want2.mfu);
  assert.deepEqual(tp2.peaks, want2.memory.per_stage.map((s) => s.peak_bytes));
  assert.match(await page.getByTestId('job-world').textContent(), /= 16 GPUs \(2 nodes of 8\)/);
  const inked = await page.getByTestId('job-memory-chart').evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] !== d[i + 1] || d[i + 1] !== d[i + 2]) n++; return n;
  });
  assert.ok(inked > 2000, `memory chart drawn (${inked} coloured pixels)`);
  await page.screenshot({ path: path.join(root, 'target', 'e2e-model-job.png'), fullPage: true });

  // The permalink carries every field; a reload restores the job and runs it.
  const hash = await page.evaluate(() => location.hash);
  for (const kv of ['model=llama3-8b', 'job_tp=2', 'job_pp=2', 'job_dp=4', 'job_gbs=32', 'job_gpu=H100-SXM', 'job_precision=bf16', 'job_recompute=none']) {
    assert.ok(hash.includes(kv), `${kv} in ${hash}`);
  }
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-tp').inputValue(), '2');
  assert.equal(await page.getByTestId('job-dp').inputValue(), '4');
  assert.equal(await page.getByTestId('job-model').inputValue(), 'llama3-8b');
  assert.deepEqual(await shown(page), tp2);
  assert.equal(await page.evaluate(() => location.hash), hash);

  // An invalid TP: the core's message and hint, as the CLI prints them.
  await page.getByTestId('job-tp').fill('3');
  const err = page.getByTestId('job-error');
  await err.waitFor();
  const text = await err.textContent();
  assert.match(text, /invalid model-level job: 32 attention heads are not divisible by TP 3/);
  assert.match(text, /hint: choose a TP that divides the head count/);
  await settled(page);
  assert.equal(await page.getByTestId('results').count(), 0, 'no result for a refused job');
  assert.equal(await page.locator('.timeline-panel').count(), 0, 'nothing to draw');
  await screenshot(page, 'model-invalid-tp');
  assert.deepEqual(errors, []);
});

test('a dropped config.json runs as the job with the panel\'s settings', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await page.getByTestId('job-dp').fill('8');
  await page.getByTestId('job-gbs').fill('16');
  await settled(page);
  const preset = await shown(page);
  await page.getByTestId('file-input').setInputFiles(path.join(root, 'tests', 'fixtures', 'hf', 'llama3_8b.json'));
  await page.locator('[data-testid="job-model"] option[value="file:llama3_8b.json"]').waitFor({ state: 'attached' });
  await settled(page);
  assert.equal(await page.getByTestId('job-model').inputValue(), 'file:llama3_8b.json');
  assert.equal(await page.getByTestId('job-panel').getAttribute('data-active'), 'true');
  // The same architecture as the preset: the same numbers.
  assert.deepEqual(await shown(page), preset);
  assert.match(await page.evaluate(() => location.hash), /model_file=llama3_8b\.json/);
  await page.getByTestId('job-file-note').waitFor();
  await screenshot(page, 'model-dropped-config');
  assert.deepEqual(errors, []);
});

test('an uneven pipeline split: 61 layers of DeepSeek-V3 on 16 stages, as the CLI gives it', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'deepseek-v3', pp: '16', dp: '64', ep: '64', gbs: '128' });
  // 61 layers do not split evenly over 16 stages: refused, naming the flags.
  const err = page.getByTestId('job-error');
  await err.waitFor();
  assert.match(await err.textContent(), /61 layers are not divisible by PP x virtual stages = 16 x 1 = 16/);
  await page.getByTestId('job-first-layers').fill('4');
  await page.getByTestId('job-last-layers').fill('1');
  await page.waitForFunction(() => location.hash.includes('job_last_layers=1'));
  await settled(page);
  const got = await shown(page);
  assert.equal(got.peaks.length, 16, 'one memory row per stage');
  const want = cli(['--model', 'deepseek-v3', '--pp', '16', '--dp', '64', '--ep', '64', '--global-batch-size', '128',
    '--first-stage-layers', '4', '--last-stage-layers', '1']);
  assert.equal(got.ns, want.iteration_time_ns);
  assert.deepEqual(got.peaks, want.memory.per_stage.map((s) => s.peak_bytes));
  assert.deepEqual(want.training.stage_layers, [4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1]);
  await screenshot(page, 'model-uneven-split');
  assert.deepEqual(errors, []);
});

test('context parallelism: the CP field splits the sequences, memory drops, the CLI agrees and the link restores it', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'llama3-8b', tp: '2', dp: '4', gbs: '16', seq: '16384' });
  await page.waitForFunction(() => location.hash.includes('job_seq=16384'));
  await settled(page);
  const cp1 = await shown(page);
  await page.getByTestId('job-cp').fill('2');
  await page.waitForFunction(() => location.hash.includes('job_cp=2'));
  await settled(page);
  const cp2 = await shown(page);
  assert.ok(cp2.peaks[0] < cp1.peaks[0], `CP 2 holds half the activations (${cp1.peaks[0]} -> ${cp2.peaks[0]})`);
  const want = cli(['--model', 'llama3-8b', '--tp', '2', '--cp', '2', '--dp', '4', '--global-batch-size', '16',
    '--seq-length', '16384']);
  assert.equal(cp2.ns, want.iteration_time_ns);
  assert.equal(cp2.mfu, want.mfu);
  assert.deepEqual(cp2.peaks, want.memory.per_stage.map((s) => s.peak_bytes));
  assert.match(await page.getByTestId('job-world').textContent(), /TP × CP × PP × DP = 2 × 2 × 1 × 4 = 16 GPUs/);
  // The link restores CP and the same numbers.
  const hash = await page.evaluate(() => location.hash);
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-cp').inputValue(), '2');
  assert.deepEqual(await shown(page), cp2);
  assert.equal(await page.evaluate(() => location.hash), hash);
  // A sequence length CP cannot split: the core's message.
  await page.getByTestId('job-cp').fill('3');
  const err = page.getByTestId('job-error');
  await err.waitFor();
  assert.match(await err.textContent(), /sequence length 16384 is not divisible by 2 x CP = 2 x 3 = 6/);
  await screenshot(page, 'model-context-parallel');
  assert.deepEqual(errors, []);
});

test('expert tensor parallelism: Expert TP 1 runs EP 8 over TP 2 x DP 4 as the CLI does, the link restores it', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'qwen3-30b-a3b', tp: '2', dp: '4', ep: '8', gbs: '8' });
  // EP 8 is more than DP 4: refused, pointing at --expert-tp 1.
  const err = page.getByTestId('job-error');
  await err.waitFor();
  assert.match(await err.textContent(), /EP 8 does not divide DP 4/);
  await page.getByTestId('job-sp').check();
  await page.getByTestId('job-etp').fill('1');
  await page.waitForFunction(() => location.hash.includes('job_etp=1'));
  await settled(page);
  const got = await shown(page);
  const want = cli(['--model', 'qwen3-30b-a3b', '--tp', '2', '--dp', '4', '--ep', '8', '--expert-tp', '1',
    '--sequence-parallel', '--global-batch-size', '8']);
  assert.equal(want.training.expert_tp, 1);
  assert.equal(got.ns, want.iteration_time_ns);
  assert.deepEqual(got.peaks, want.memory.per_stage.map((s) => s.peak_bytes));
  const hash = await page.evaluate(() => location.hash);
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-etp').inputValue(), '1');
  assert.deepEqual(await shown(page), got);
  assert.equal(await page.evaluate(() => location.hash), hash);
  await screenshot(page, 'model-expert-tp');
  assert.deepEqual(errors, []);
});

test('figure: Llama 3 70B on 1024 H100s (TP 8, PP 8, DP 16, 16 micro-batches) from the Run button to its result', async () => {
  const { page, errors } = await newPage(browser.context);
  const job = 'model=llama3-70b&job_tp=8&job_pp=8&job_dp=16&job_gbs=256&job_seq=8192&job_sp=1&job_dist_opt=1';
  await page.goto(`${site.url}#${job}`);
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  const want = cli(['--model', 'llama3-70b', '--tp', '8', '--pp', '8', '--dp', '16', '--global-batch-size', '256',
    '--seq-length', '8192', '--sequence-parallel', '--distributed-optimizer']);
  assert.equal((await shown(page)).ns, want.iteration_time_ns);
  const times = [];
  for (let i = 0; i < 5; i++) {
    const before = await page.getByTestId('run-status').textContent();
    const next = Number(before.match(/Run (\d+) done/)[1]) + 1;
    const t0 = await page.evaluate(() => performance.now());
    await page.getByTestId('job-run').click();
    await page.waitForFunction((n) => {
      const s = document.querySelector('[data-testid="run-status"]');
      return s && s.dataset.state === 'done' && s.textContent.includes(`Run ${n} done`);
    }, next, { polling: 'raf' });
    times.push(Math.round(await page.evaluate(() => performance.now()) - t0));
  }
  times.sort((a, b) => a - b);
  console.log(`# figure: llama3-70b on 1024 x H100-SXM, Run click to result in the browser (worker: build + simulate + result; the timeline follows): median ${times[2]} ms (runs: ${times.join(', ')})`);
  assert.deepEqual(errors, []);
});

test('MoE software settings: dispatcher, fusion, EP overlap and imbalance run as the CLI runs them, and the link restores them', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'qwen3-30b-a3b', dp: '8', ep: '8', gbs: '16', seq: '1024', 'moe-dispatcher': 'flex', 'moe-fusion': 'off' });
  await page.getByTestId('job-moe-a2a-overlap').check();
  await page.getByTestId('job-moe-imbalance').fill('1.25');
  await page.waitForFunction(() => location.hash.includes('job_moe_imbalance=1.25'));
  await settled(page);
  const got = await shown(page);
  const want = cli(['--model', 'qwen3-30b-a3b', '--dp', '8', '--ep', '8', '--global-batch-size', '16',
    '--seq-length', '1024', '--moe-token-dispatcher', 'flex', '--moe-fusion', 'off', '--moe-a2a-overlap',
    '--moe-imbalance', '1.25']);
  assert.equal(want.training.moe_token_dispatcher, 'flex');
  assert.equal(got.ns, want.iteration_time_ns);
  assert.deepEqual(got.peaks, want.memory.per_stage.map((s) => s.peak_bytes));
  // The same job with the defaults is another number: the settings took.
  const plain = cli(['--model', 'qwen3-30b-a3b', '--dp', '8', '--ep', '8', '--global-batch-size', '16',
    '--seq-length', '1024']);
  assert.notEqual(plain.iteration_time_ns, got.ns);
  const hash = await page.evaluate(() => location.hash);
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-moe-dispatcher').inputValue(), 'flex');
  assert.equal(await page.getByTestId('job-moe-a2a-overlap').isChecked(), true);
  assert.deepEqual(await shown(page), got);
  assert.equal(await page.evaluate(() => location.hash), hash);
  await screenshot(page, 'model-moe-stack');
  assert.deepEqual(errors, []);
});

test('launch queue depth: the page runs the depth the CLI runs, shows the queue wait apart from the sync stall, and the link restores it', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'qwen3-30b-a3b', dp: '8', ep: '8', gbs: '16', seq: '1024', 'launch-queue': '16' });
  await page.waitForFunction(() => location.hash.includes('job_launch_queue=16'));
  await settled(page);
  const got = await shown(page);
  const args = ['--model', 'qwen3-30b-a3b', '--dp', '8', '--ep', '8', '--global-batch-size', '16', '--seq-length', '1024'];
  const want = cli([...args, '--launch-queue-depth', '16']);
  assert.equal(got.ns, want.iteration_time_ns);
  assert.ok(want.launch_queue_wait_ns > 0);
  const figure = async (key) => page.locator(`[data-testid="figure"][data-key="${key}"]`).getAttribute('data-value');
  assert.equal(Number(await figure('launch_queue_wait')), want.launch_queue_wait_ns);
  assert.equal(Number(await figure('sync_stall')), want.sync_stall_ns);
  // A shallow queue holds the host back: the default's step is shorter.
  assert.ok(cli(args).iteration_time_ns < got.ns);
  const hash = await page.evaluate(() => location.hash);
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-launch-queue').inputValue(), '16');
  assert.deepEqual(await shown(page), got);
  assert.equal(await page.evaluate(() => location.hash), hash);
  assert.deepEqual(errors, []);
});

test('attention kernel: FlashAttention-2 runs the step the CLI runs with --attention-kernel flash2, slower than cuDNN\'s, and the link restores it', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeJob(page, { model: 'llama3-8b', dp: '8', gbs: '8', seq: '8192', 'attention-kernel': 'flash2' });
  await page.waitForFunction(() => location.hash.includes('job_attention_kernel=flash2'));
  await settled(page);
  const got = await shown(page);
  const args = ['--model', 'llama3-8b', '--dp', '8', '--global-batch-size', '8', '--seq-length', '8192'];
  const want = cli([...args, '--attention-kernel', 'flash2']);
  assert.equal(want.training.attention_kernel, 'flash2');
  assert.equal(got.ns, want.iteration_time_ns);
  assert.ok(cli(args).iteration_time_ns < got.ns, 'cuDNN\'s kernel is the faster one on an H100');
  const hash = await page.evaluate(() => location.hash);
  await page.reload();
  await page.getByTestId('job-mfu').waitFor();
  await settled(page);
  assert.equal(await page.getByTestId('job-attention-kernel').inputValue(), 'flash2');
  assert.deepEqual(await shown(page), got);
  assert.equal(await page.evaluate(() => location.hash), hash);
  assert.deepEqual(errors, []);
});

test('the memory lanes mark each stage\'s peak at the CLI\'s time; the hover shows what is resident', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeLlama8b(page);
  await settled(page);
  await shown(page);
  const want = cli(['--model', 'llama3-8b', '--pp', '2', '--dp', '4', '--global-batch-size', '32']);
  const tl = page.getByTestId('timeline');
  await page.waitForFunction(() => {
    const c = document.querySelector('[data-testid=timeline]');
    return c && (c.dataset.memoryPeaks || '').split(',').filter((m) => m).length === 2;
  }, null, { timeout: 30000 });
  const marks = (await tl.getAttribute('data-memory-peaks')).split(',')
    .map((m) => m.split(':').map(Number));
  assert.deepEqual(marks.map(([stage, t]) => [stage, t]),
    want.memory.per_stage.map((s, i) => [i, s.peak_time_ns]));
  await tl.scrollIntoViewIfNeeded();
  const box = await tl.boundingBox();
  const row = (await tl.getAttribute('data-memory-rows')).split(',')[0].split('-').map(Number);
  const [stage, time, x] = marks[0];
  await page.mouse.move(box.x + x, box.y + (row[0] + row[1]) / 2);
  const tip = page.getByTestId('tooltip');
  await tip.waitFor();
  assert.equal(Number(await tip.getAttribute('data-peak-time-ns')), time);
  const text = await tip.innerText();
  assert.ok(text.includes(`stage ${stage} peaks at ${(time / 1e6).toFixed(3)} ms`), text);
  const resident = want.memory.per_stage[stage].resident_at_peak;
  const gib = (b) => `${(b / 2 ** 30).toFixed(1)} GiB`;
  for (const part of ['weights', 'gradients', 'optimizer', 'activations']) {
    assert.match(text, new RegExp(`${part}\\s+${gib(resident[`${part}_bytes`]).replace('.', '\\.')}`), text);
  }
  assert.match(text, new RegExp(`micro-batches in flight\\s+${resident.micro_batches_in_flight.toFixed(1)}`), text);
  fs.mkdirSync(path.join(root, 'target', 'e2e'), { recursive: true });
  await page.locator('.ts-timeline').first().screenshot({ path: path.join(root, 'target', 'e2e', 'model-memory-peak.png') });
  assert.deepEqual(errors, []);
});
