// Makes the README's screenshots from the built site (dist/, `trunk build
// --release`): www/screenshot.png (the page at 1280x800 after loading seed
// 001 in the event mode) and www/screenshot-timeline.png (its Timeline
// section with the critical path on and a span selected).
// Usage: node tests/e2e/readme-shot.mjs
import path from 'node:path';
import { serve, launch, root } from './harness.js';

const site = await serve();
const browser = await launch();
try {
  const page = await browser.context.newPage();
  await page.goto(site.url);
  await page.getByTestId('example').filter({ hasText: 'simai_405b_tp8_pp16_ga16_sp.txt' }).click();
  await page.locator('[data-testid="run-status"][data-state="done"]').waitFor();
  const canvas = page.getByTestId('timeline');
  await canvas.waitFor({ state: 'visible', timeout: 30000 });
  await page.screenshot({ path: path.join(root, 'www', 'screenshot.png') });

  await page.getByTestId('timeline-critical').click();
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  // Select a critical span: the first strongly coloured pixel on stage 0's
  // compute lane right of 60 % of the width.
  const x = await canvas.evaluate((c) => {
    const dpr = c.width / c.clientWidth;
    const y = Math.round((24 + 8) * dpr);
    const d = c.getContext('2d').getImageData(0, y, c.width, 1).data;
    for (let i = Math.round(c.width * 0.6); i < c.width; i += 1) {
      const r = d[i * 4]; const g = d[i * 4 + 1]; const b = d[i * 4 + 2];
      if (Math.max(r, g, b) - Math.min(r, g, b) > 120) return (i + 2) / dpr;
    }
    return c.clientWidth / 2;
  });
  await page.mouse.click(box.x + x, box.y + 24 + 8);
  await page.mouse.move(box.x + box.width / 3, box.y - 60);
  await page.waitForTimeout(300);
  await page.getByTestId('timeline-panel').screenshot({ path: path.join(root, 'www', 'screenshot-timeline.png') });
  console.log('wrote www/screenshot.png and www/screenshot-timeline.png');
} finally {
  await browser.close();
  site.server.close();
}
