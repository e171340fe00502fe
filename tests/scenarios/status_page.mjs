// The status page of `segflake serve` in headless Chromium, against /metrics at the same
// moment: `node status_page.mjs BASE_URL SCREENSHOT HIDDEN_KEY TOKEN`.
//
// With no traffic between them, /metrics is read, the page is loaded, /metrics is read
// again: every number on the page (its cells name their metric in data-metric) must be
// the scrapes' (between the two, should a lease renewal or a refill land between them),
// apart from the counters of the page's and the scrapes' own requests. A key
// with tokens is absent from the page without its token and present with it. The
// screenshot of the page is left at SCREENSHOT for people to look at.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'

const [base, screenshot, hiddenKey, token] = process.argv.slice(2)
const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { chromium } = require('playwright-core')

/** `name{labels}` → value of every sample of a Prometheus text scrape. */
async function scrape() {
  const r = await fetch(`${base}/metrics`)
  assert.equal(r.status, 200)
  const samples = new Map()
  for (const line of (await r.text()).split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line)
    if (m) samples.set(m[1] + (m[2] ?? ''), Number(m[3]))
  }
  return samples
}

/** The metric sample a page cell shows, by the labels its row carries. */
function sampleName(cell) {
  const { metric, key, route, status } = cell
  if (route !== undefined) return `${metric}{route="${route}",status="${status}"}`
  if (key !== undefined) return `${metric}{key="${key}"}`
  return metric
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'segflake-status-'))
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.SEGFLAKE_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  viewport: { width: 1400, height: 900 },
})
try {
  const page = await context.newPage()
  const cellsOf = () =>
    page.$$eval('[data-metric]', (els) =>
      els.map((e) => {
        const row = e.closest('tr')
        return {
          metric: e.dataset.metric,
          value: e.dataset.value,
          key: row?.dataset.key,
          route: row?.dataset.route,
          status: row?.dataset.status,
        }
      }),
    )

  // Without the token: the key with tokens is not listed, and the page says so.
  const before = await scrape()
  let r = await page.goto(`${base}/`)
  assert.equal(r.status(), 200)
  assert.match(r.headers()['content-type'], /^text\/html/)
  assert.equal(await page.title(), 'segflake serve')
  const html = await page.content()
  assert.ok(!html.includes(hiddenKey), 'a key with tokens is shown without its token')
  assert.match(await page.textContent('body'), /1 key with tokens not shown/)
  const after = await scrape()

  const cells = await cellsOf()
  const own = (name) => /route="(status_page|metrics)"/.test(name) || name === 'segflake_uptime_seconds'
  let compared = 0
  for (const cell of cells) {
    const name = sampleName(cell)
    if (own(name) || cell.value === undefined) continue
    const value = cell.metric === 'segflake_lease_state' ? 1 : Number(cell.value)
    const wanted = cell.metric === 'segflake_lease_state' ? `segflake_lease_state{state="${cell.value}"}` : name
    assert.ok(before.has(wanted), `the page shows ${wanted}, which /metrics does not have`)
    // A lease renewal or a refill may land between the scrapes: the page's number is then
    // one of the two, or between them.
    const [lo, hi] = [before.get(wanted), after.get(wanted)].sort((x, y) => x - y)
    assert.ok(lo <= value && value <= hi, `the page shows ${wanted} = ${value}, /metrics ${lo}..${hi}`)
    compared++
  }
  for (const needed of [
    'segflake_segment_ids_total',
    'segflake_segment_remaining_ids',
    'segflake_segment_step',
    'segflake_http_requests_total',
    'segflake_lease_worker_id',
    'segflake_snowflake_ids_total',
  ]) {
    assert.ok(
      cells.some((c) => c.metric === needed),
      `the page shows no ${needed}`,
    )
  }
  // Every visible key of /metrics is on the page.
  for (const name of before.keys()) {
    const m = /^segflake_segment_ids_total\{key="(.*)"\}$/.exec(name)
    if (m && m[1] !== hiddenKey)
      assert.ok(
        cells.some((c) => c.key === m[1]),
        `${m[1]} is missing`,
      )
  }

  // With the token, the key is shown; Leaf's /cache is the same page.
  r = await page.goto(`${base}/cache?token=${encodeURIComponent(token)}`)
  assert.equal(r.status(), 200)
  assert.ok(
    (await cellsOf()).some((c) => c.key === hiddenKey),
    'the token does not show its key',
  )
  await page.goto(`${base}/`)
  await page.screenshot({ path: screenshot, fullPage: true })
  console.log(
    `${compared} numbers on the page equal /metrics; ${cells.length} cells; hidden key shown only with its token; screenshot ${path.basename(screenshot)} (${fs.statSync(screenshot).size} bytes)`,
  )
} finally {
  await context.close()
  fs.rmSync(profile, { recursive: true, force: true })
}
