// "Plan the run" end to end: describe a preset job (Llama 3 8B, PP 2, DP 4,
// as model.test.js does), open the plan, read its ETTR and days to train
// and equal them to `trainscope plan --json` run with the command line the
// panel shows; set the checkpoint interval and see ETTR move (and still
// equal the CLI's); reload the permalink and see the same inputs and
// outputs. Screenshot: target/e2e/plan.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { serve, launch, newPage, root, screenshot, settled, describeLlama8b } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

/** `trainscope plan --json` with the flags of the panel's command line. */
function planCli(line) {
  const words = line.trim().split(/\s+/);
  assert.equal(words[0], 'trainscope');
  assert.equal(words[1], 'plan');
  const bin = path.join(root, 'target', 'debug', 'trainscope');
  if (!fs.existsSync(bin)) execFileSync('cargo', ['build', '-q', '-p', 'trainscope-cli'], { cwd: root });
  return JSON.parse(execFileSync(bin, [...words.slice(1), '--json'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] }));
}

async function shownPlan(page) {
  await page.getByTestId('plan-ettr').waitFor();
  const value = async (id) => Number(await page.locator(`dd[data-testid="${id}"]`).getAttribute('data-value'));
  return {
    ettr: await value('plan-ettr'),
    p10: await value('plan-days-p10'),
    p50: await value('plan-days-p50'),
    p90: await value('plan-days-p90'),
    closed: await value('plan-days-closed'),
    interval: await value('plan-interval-used'),
    mttf: await value('plan-mttf'),
    cli: (await page.getByTestId('plan-cli').textContent()).trim(),
  };
}

function sameAsCli(shown) {
  const want = planCli(shown.cli);
  assert.equal(shown.ettr, want.ettr, 'ETTR: page == CLI');
  assert.equal(shown.p10, want.days_to_train.p10);
  assert.equal(shown.p50, want.days_to_train.p50, 'days P50: page == CLI');
  assert.equal(shown.p90, want.days_to_train.p90);
  assert.equal(shown.closed, want.days_to_train.closed_form);
  assert.equal(shown.interval, want.checkpoint_interval_s);
  assert.equal(shown.mttf, want.mttf_hours);
  return want;
}

test('plan the run of a described job: page == CLI, the interval moves ETTR, the permalink restores it', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(site.url);
  await describeLlama8b(page);
  await settled(page);
  await page.getByTestId('plan-open').click();
  const auto = await shownPlan(page);
  assert.match(auto.cli, /^trainscope plan --model llama3-8b .*--pp 2 .*--dp 4 .*--tokens 1000000000000 --failure-preset llama3-405b$/);
  const want = sameAsCli(auto);
  assert.equal(want.interval_source, 'daly');
  assert.ok(auto.p10 <= auto.p50 && auto.p50 <= auto.p90, JSON.stringify(auto));
  // The pictures are drawn: the run's course, both curves with their mark.
  assert.ok(await page.getByTestId('plan-progress').locator('path').count() >= 2);
  assert.ok(Number(await page.getByTestId('plan-by-interval').getAttribute('data-points')) > 20);
  assert.ok(Number(await page.getByTestId('plan-by-gpus').getAttribute('data-points')) >= 5);
  assert.equal(Number(await page.getByTestId('plan-by-interval-mark').getAttribute('data-x')), auto.interval);
  assert.equal(await page.getByTestId('plan-badput').locator('tr').count(), 5);

  // A checkpoint every 12 hours: ETTR falls, still the CLI's.
  await page.locator('input[data-testid="plan-interval"]').fill('43200');
  await page.locator('input[data-testid="plan-interval"]').press('Tab');
  await page.waitForFunction(() => location.hash.includes('plan_interval=43200'));
  const given = await shownPlan(page);
  assert.match(given.cli, /--checkpoint-interval 43200/);
  assert.ok(given.ettr < auto.ettr, `ETTR moves: ${auto.ettr} -> ${given.ettr}`);
  assert.equal(sameAsCli(given).interval_source, 'given');
  await screenshot(page, 'plan');

  // The permalink: the same job, the plan open with the same inputs.
  const hash = await page.evaluate(() => location.hash);
  for (const kv of ['model=llama3-8b', 'job_pp=2', 'plan_tokens=1000000000000', 'plan_preset=llama3-405b', 'plan_interval=43200']) {
    assert.ok(hash.includes(kv), `${kv} in ${hash}`);
  }
  await page.reload();
  await settled(page);
  assert.equal(await page.locator('input[data-testid="plan-interval"]').inputValue(), '43200');
  assert.equal(await page.getByTestId('plan-preset').inputValue(), 'llama3-405b');
  assert.deepEqual(await shownPlan(page), given);
  assert.deepEqual(errors, []);
});
