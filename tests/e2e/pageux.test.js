// The page as people meet it (issue 29), end to end at 1440x900 and
// 1280x720: the timeline keeps Perfetto's conventions (the plain wheel
// scrolls the lanes, then the page, and never zooms; Ctrl+wheel zooms;
// Shift+wheel pans; the hint line says so). Screenshots go to
// target/e2e/pageux-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { serve, launch, newPage, screenshot, loadExample } from './harness.js';

/** 16 pipeline stages: more lanes than the lane canvas shows at once. */
const SEED = 'simai_405b_tp8_pp16_ga16_sp.txt';
const SIZES = [[1440, 900], [1280, 720]];

let site; let browser;
before(async () => { site = await serve(); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

async function open(width, height) {
  const { page, errors } = await newPage(browser.context);
  await page.setViewportSize({ width, height });
  await page.goto(site.url);
  return { page, errors };
}

const viewRange = (page) => page.getByTestId('view-range')
  .evaluate((e) => [Number(e.dataset.startNs), Number(e.dataset.endNs)]);
const lanes = (page) => page.getByTestId('timeline')
  .evaluate((e) => ({ y: Number(e.dataset.scrollY), max: Number(e.dataset.scrollMax) }));
const pageY = (page) => page.evaluate(() => window.scrollY);
const frame = (page) => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

for (const [width, height] of SIZES) {
  test(`${width}x${height}: the wheel over the timeline scrolls lanes then the page; Ctrl+wheel zooms; Shift+wheel pans`, async () => {
    const { page, errors } = await open(width, height);
    await loadExample(page, SEED);
    const canvas = page.getByTestId('timeline');
    await canvas.waitFor({ state: 'visible' });
    await screenshot(page, `pageux-wheel-before-${width}x${height}`);
    // The hint line names the conventions.
    const hint = await page.locator('.ts-tl-hint').textContent();
    assert.match(hint, /wheel: scroll/);
    assert.match(hint, /Ctrl\+wheel \/ W S: zoom/);
    assert.match(hint, /Shift\+wheel: pan/);

    // Put the canvas's top near the top of the viewport.
    await page.evaluate(() => {
      const c = document.querySelector('[data-testid=timeline]');
      window.scrollTo(0, c.getBoundingClientRect().top + window.scrollY - 80);
    });
    await frame(page);
    const box = await canvas.boundingBox();
    const x = box.x + 180 + (box.width - 190) / 2;
    const y = box.y + Math.min(box.height / 2, 150);
    await page.mouse.move(x, y);
    const r0 = await viewRange(page);
    const l0 = await lanes(page);
    const p0 = await pageY(page);

    // Plain wheel down: the lanes scroll while they can (the page stays),
    // then the page scrolls; the time range never changes.
    let sawLanes = false;
    for (let i = 0; i < 40; i += 1) {
      const before = await lanes(page);
      const py = await pageY(page);
      await page.mouse.wheel(0, 100);
      await frame(page);
      const after = await lanes(page);
      if (after.y > before.y) {
        sawLanes = true;
        assert.equal(await pageY(page), py, 'the page stays while the lanes scroll');
      }
      if (await pageY(page) > p0) break;
    }
    assert.ok(await pageY(page) > p0, 'the plain wheel scrolled the page past the timeline');
    const l1 = await lanes(page);
    assert.ok(l0.max > 0, 'this example has more lanes than shown at once');
    assert.ok(sawLanes, `the lanes (${l0.max} px more) scrolled with the plain wheel`);
    assert.ok(l1.y >= l1.max - 1, 'the page scrolls once the lanes are at their bottom');
    assert.deepEqual(await viewRange(page), r0, 'the plain wheel does not zoom');

    // Ctrl+wheel over the canvas zooms (and does not scroll the page).
    await page.evaluate((y0) => window.scrollTo(0, y0), p0);
    await frame(page);
    await page.mouse.move(x, y);
    const p1 = await pageY(page);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -400);
    await page.keyboard.up('Control');
    await page.waitForFunction(([a, b]) => {
      const e = document.querySelector('[data-testid=view-range]');
      return Number(e.dataset.endNs) - Number(e.dataset.startNs) < b - a;
    }, r0);
    const r1 = await viewRange(page);
    assert.ok(r1[1] - r1[0] < (r0[1] - r0[0]) / 2, 'Ctrl+wheel zoomed in');
    assert.equal(await pageY(page), p1, 'Ctrl+wheel does not scroll the page');

    // Shift+wheel pans: same width, later start.
    await page.keyboard.down('Shift');
    await page.mouse.wheel(0, 100);
    await page.keyboard.up('Shift');
    await page.waitForFunction((a) => Number(document.querySelector('[data-testid=view-range]').dataset.startNs) !== a, r1[0]);
    const r2 = await viewRange(page);
    assert.ok(r2[0] > r1[0], `Shift+wheel panned ${r1[0]} -> ${r2[0]}`);
    assert.ok(Math.abs((r2[1] - r2[0]) - (r1[1] - r1[0])) <= 2, 'the width is kept');
    await screenshot(page, `pageux-wheel-after-${width}x${height}`);
    assert.deepEqual(errors, []);
    await page.close();
  });
}
