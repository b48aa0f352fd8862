// What-if faults on the page (issue 27): a described job with a slow GPU
// from the permalink shows the slow-down S and the blame the CLI's
// `simulate --slow ... --json` gives (same numbers), `--blame`'s per-stage
// sensitivity, jitter under a seed equal to the CLI's, and a bad fault
// refused next to its field with the core's words; a span's "Slow this
// GPU by 20%" in the timeline pins the run and re-runs with its GPU slowed
// (the compare view); a slow-down with a window shows each iteration of
// the run as the CLI gives them. Screenshots: target/e2e/whatif*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, launch, newPage, screenshot, cli, settled } from './harness.js';

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

const JOB = ['--model', 'llama3-8b', '--pp', '4', '--dp', '4', '--global-batch-size', '32'];
const LINK = 'model=llama3-8b&job_pp=4&job_dp=4&job_gbs=32';

async function whatIfShown(page) {
  const s = page.getByTestId('whatif-slowdown');
  await s.waitFor();
  const blame = await page.locator('[data-testid="whatif-blame"] .whatif-row')
    .evaluateAll((rows) => rows.map((r) => ({ by: r.dataset.by, name: r.dataset.name, share: Number(r.dataset.share) })));
  return {
    slowdown: Number(await s.getAttribute('data-slowdown')),
    ns: Number(await s.getAttribute('data-ns')),
    baseline: Number(await s.getAttribute('data-baseline-ns')),
    blame,
  };
}

test('a slow GPU from the permalink: S and the blame equal the CLI, the sensitivity table per stage', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(`${site.url}#${LINK}&slow=${encodeURIComponent('5:1.5 13:1.2')}&blame=1`);
  await settled(page);
  const shown = await whatIfShown(page);
  const want = cli([...JOB, '--slow', '5:1.5', '--slow', '13:1.2', '--blame']);
  assert.equal(shown.ns, want.whatif.iteration_time_ns);
  assert.equal(shown.baseline, want.whatif.baseline_iteration_time_ns);
  assert.equal(shown.slowdown, want.whatif.slowdown);
  assert.ok(shown.slowdown > 1, `S ${shown.slowdown}`);
  assert.deepEqual(shown.blame, want.whatif.blame.map((b) => ({ by: b.by, name: b.name, share: b.share })));
  assert.equal(await page.getByTestId('whatif-injected').textContent(), '--slow 5:1.5 --slow 13:1.2');
  const stages = await page.locator('[data-testid="whatif-sensitivity"] .whatif-row')
    .evaluateAll((rows) => rows.map((r) => Number(r.dataset.cost)));
  assert.deepEqual(stages, want.whatif.sensitivity.map((s) => s.cost_percent));
  assert.equal(stages.length, 4);
  await screenshot(page, 'whatif');
  assert.deepEqual(errors, []);
});

test('a transient slow-down from the permalink: each iteration of the run equals the CLI, the flag as given', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(`${site.url}#${LINK}&slow=${encodeURIComponent('5:1.5@iter1+1')}`);
  await settled(page);
  const shown = await whatIfShown(page);
  const want = cli([...JOB, '--slow', '5:1.5@iter1+1']);
  assert.equal(shown.ns, want.whatif.iteration_time_ns);
  assert.equal(shown.baseline, want.whatif.baseline_iteration_time_ns);
  assert.equal(shown.slowdown, want.whatif.slowdown);
  const iterations = await page.locator('[data-testid="whatif-iterations"] .whatif-row')
    .evaluateAll((rows) => rows.map((r) => Number(r.dataset.ns)));
  assert.deepEqual(iterations, want.whatif.iteration_times_ns);
  assert.equal(iterations.length, 3);
  assert.ok(iterations[1] > iterations[0] && iterations[2] === iterations[0], `${iterations}`);
  assert.equal(await page.getByTestId('whatif-injected').textContent(), '--slow 5:1.5@iter1+1');
  await screenshot(page, 'whatif-window');
  assert.deepEqual(errors, []);
});

test('jitter under a seed gives the CLI numbers; a fault outside the job is refused with the core words', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(`${site.url}#${LINK}&jitter=5&seed=3`);
  await settled(page);
  const ns = Number(await page.getByTestId('iteration-time').getAttribute('data-ns'));
  const want = cli([...JOB, '--jitter', '5', '--seed', '3']);
  assert.equal(ns, want.iteration_time_ns);
  assert.equal(await page.getByTestId('whatif-injected').textContent(), '--jitter 5 --seed 3');

  // A malformed fault: the field says what is wrong, as the CLI does.
  const field = page.getByTestId('setting-slow');
  await field.fill('5');
  const err = page.locator('[data-testid="field-error"][data-field="slow"]');
  await err.waitFor();
  assert.match(await err.textContent(), /is not RANKS:FACTOR/);
  assert.deepEqual(errors, []);
});

test('the timeline: "Slow this GPU" pins the run and re-runs with that GPU 20% slower', async () => {
  const { page, errors } = await newPage(browser.context);
  await page.goto(`${site.url}#${LINK}`);
  await settled(page);
  await page.locator('.ts-timeline').first().focus();
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.querySelector('[data-testid=timeline-details]').dataset.lane !== undefined);
  await page.getByTestId('slow-this-gpu').click();
  await page.getByTestId('compare').waitFor();
  await settled(page);
  const arg = await page.getByTestId('setting-slow').inputValue();
  assert.match(arg, /^stage\d+:1\.2$/);
  const shown = await whatIfShown(page);
  const want = cli([...JOB, '--slow', arg]);
  assert.equal(shown.slowdown, want.whatif.slowdown);
  assert.ok(shown.slowdown > 1);
  assert.ok(await page.getByTestId('compare-delta').count() > 0, 'the compare view shows the difference');
  await screenshot(page, 'whatif-timeline');
  assert.deepEqual(errors, []);
});
