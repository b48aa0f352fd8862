// The deployable site (scripts/build-site.sh, README "Put it on static
// hosting"): the built dist/ holds no dev-server script, and served as
// plain static files from a sub-path (as GitHub Pages serves a project
// site, /<repo>/) it starts, runs an example and fetches every asset from
// under that sub-path with no console error and no failed request, at
// 1440x900 and 1280x720.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { serve, launch, newPage, screenshot, dist, loadExample } from './harness.js';

const SUB = '/team/demo/trainscope/';
let site; let browser;
before(async () => { site = await serve(dist, SUB); browser = await launch(); });
after(async () => { await browser.close(); site.server.close(); });

test('dist/index.html holds no live-reload script and only relative asset URLs', () => {
  const html = fs.readFileSync(path.join(dist, 'index.html'), 'utf8');
  assert.doesNotMatch(html, /__trunk_address__|__TRUNK_ADDRESS__|autoreload|new WebSocket/i);
  // Every src/href of the page is relative: no leading "/" that would
  // escape a sub-path.
  const urls = [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((m) => m[1]);
  assert.ok(urls.length > 0);
  for (const u of urls) assert.ok(!u.startsWith('/'), `absolute URL in index.html: ${u}`);
});

for (const [width, height] of [[1440, 900], [1280, 720]]) {
  test(`served from a sub-path at ${width}x${height}: starts, runs an example, no console error`, async () => {
    const { page, errors } = await newPage(browser.context);
    await page.setViewportSize({ width, height });
    const failed = [];
    const outside = [];
    page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText}`));
    page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.url()} ${r.status()}`); });
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.protocol.startsWith('http') && !u.pathname.startsWith(SUB)) outside.push(r.url());
    });
    await page.goto(site.url);
    await loadExample(page, 'simai_llama65b_tp8_pp4_vpp8.txt');
    assert.ok(Number(await page.getByTestId('iteration-time').getAttribute('data-ns')) > 0);
    await screenshot(page, `site-subpath-${width}x${height}`);
    assert.deepEqual(failed, []);
    assert.deepEqual(outside, [], 'every request stays under the sub-path');
    assert.deepEqual(errors, []);
    await page.close();
  });
}
