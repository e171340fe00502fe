// The status page of `segflake serve` in headless Chromium, against /metrics at the same
// moment: `node status_page.mjs BASE_URL SCREENSHOT HIDDEN_KEY TOKEN [SAMPLE_MS]`.
//
// With no traffic between them, /metrics is read, the page is loaded (once the charts have
// a sample newer than the scrape; they take one every SAMPLE_MS, default 250), /metrics is
// read again: every number on the page (its cells name their metric in data-metric) must
// be the scrapes' (between the two, should a lease renewal or a refill land between
// them), apart from the counters of the page's and the scrapes' own requests. So must each
// chart's latest point, taken between the scrapes: the /metrics samples it carries
// (data-columns names them) are between the two scrapes' (for the lease mark's lead, the
// mark it implies); its charted values are recomputed from those samples (a rate from two
// counters, a mean refill latency from two sums and counts). A key with tokens is absent
// from the page, tables and charts, without its token and present with it. The
// screenshot of the page is left at SCREENSHOT for people to look at.
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'

const [base, screenshot, hiddenKey, token, sampleArg] = process.argv.slice(2)
const sampleMs = Number(sampleArg ?? 250)
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

/** A scrape's `segflake_uptime_seconds`, in ms (the charts' clock). */
const uptime = (s) => s.get('segflake_uptime_seconds') * 1000

/** Whether `a` and `b` are the same number but for float rounding. */
const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b))

/**
 * Checks every chart against the scrapes `before` and `after` (see the top of this file);
 * returns how many charted values were recomputed.
 */
function checkCharts(charts, before, after) {
  let recomputed = 0
  for (const { metric, key, columns, points, labels } of charts) {
    const what = `the chart of ${metric}${key === undefined ? '' : ` for ${key}`}`
    // The y axis' bounds, the window's start, now.
    assert.equal(labels.length, 4, `${what}: ${labels}`)
    assert.ok(labels[2].startsWith('−') && labels[3] === 'now', `${what}: ${labels}`)
    assert.equal(columns[0], 't_ms', what)
    assert.ok(points.length > 0, `${what} has no points`)
    for (const p of points) assert.equal(p.length, columns.length, `${what}: ${JSON.stringify(p)}`)
    for (let i = 1; i < points.length; i++) assert.ok(points[i][0] > points[i - 1][0], `${what}: time goes back`)
    const last = points.at(-1)
    // Uptime is printed rounded to the millisecond, the sample's time truncated.
    assert.ok(
      uptime(before) - 1 <= last[0] && last[0] <= uptime(after) + 1,
      `${what}: its latest point (at ${last[0]} ms) is not between the scrapes (${uptime(before)}..${uptime(after)} ms)`,
    )
    const keyLabel = key === undefined ? '' : `{key="${key}"}`
    columns.forEach((column, i) => {
      if (!column.startsWith('segflake_')) return
      const name = column + keyLabel
      const value = last[i]
      if (value === null) {
        assert.ok(!before.has(name) && !after.has(name), `${what}: no ${name} at its latest point, /metrics has it`)
        return
      }
      assert.ok(before.has(name) && after.has(name), `${what}: ${name} = ${value}, /metrics does not have it`)
      if (column === 'segflake_lease_mark_ahead_seconds') {
        // The lead falls as the clock runs; the mark it implies only rises (renewals).
        const mark = (s) => s.get(name) * 1000 + uptime(s)
        const charted = value * 1000 + last[0]
        assert.ok(
          mark(before) - 20 <= charted && charted <= mark(after) + 20,
          `${what}: the mark at its latest point (${charted}) is not between the scrapes' (${mark(before)}..${mark(after)})`,
        )
        return
      }
      const [lo, hi] = [before.get(name), after.get(name)].sort((x, y) => x - y)
      assert.ok(lo <= value && value <= hi, `${what}: ${name} = ${value} at its latest point, /metrics ${lo}..${hi}`)
    })
    // The charted values, from the samples.
    for (let i = 1; i < points.length; i++) {
      const [t0, , ...a] = points[i - 1]
      const [t1, v, ...b] = points[i]
      let wanted
      if (columns[1] === 'per_second') {
        wanted = a[0] === null || b[0] === null ? null : ((b[0] - a[0]) * 1000) / (t1 - t0)
      } else if (columns[1] === 'mean_seconds') {
        const known = a[0] !== null && b[0] !== null && b[1] > a[1]
        wanted = known ? (b[0] - a[0]) / (b[1] - a[1]) : null
      } else {
        continue
      }
      assert.ok(
        wanted === null ? v === null : v !== null && close(v, wanted),
        `${what}: charts ${v} at ${t1} ms, its samples make ${wanted}`,
      )
      recomputed++
    }
  }
  return recomputed
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
    page.$$eval('[data-metric]:not(figure)', (els) =>
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

  const chartsOf = () =>
    page.$$eval('figure[data-points]', (els) =>
      els.map((e) => ({
        metric: e.dataset.metric,
        key: e.dataset.key,
        columns: e.dataset.columns.split(','),
        points: JSON.parse(e.dataset.points),
        labels: [...e.querySelectorAll('svg text')].map((t) => t.textContent),
      })),
    )

  // Without the token: the key with tokens is not listed, and the page says so. The page
  // is loaded (again, on a busy machine) until the charts' latest sample is newer than
  // the first scrape.
  const before = await scrape()
  let r
  for (let tries = 1; ; tries++) {
    await new Promise((resolve) => setTimeout(resolve, sampleMs))
    r = await page.goto(`${base}/`)
    const latest = Math.min(...(await chartsOf()).map((c) => c.points.at(-1)[0]))
    if (latest >= uptime(before) - 1 || tries === 20) break
  }
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

  const charts = await chartsOf()
  const checkedPoints = checkCharts(charts, before, after)
  for (const metric of [
    'segflake_segment_ids_total',
    'segflake_snowflake_ids_total',
    'segflake_store_call_duration_seconds',
    'segflake_segment_runway_seconds',
    'segflake_lease_mark_ahead_seconds',
  ]) {
    assert.ok(
      charts.some((c) => c.metric === metric && c.points.some((p) => p[1] > 0)),
      `no chart of ${metric} shows the load`,
    )
  }

  // With the token, the key is shown; Leaf's /cache is the same page.
  r = await page.goto(`${base}/cache?token=${encodeURIComponent(token)}`)
  assert.equal(r.status(), 200)
  assert.ok(
    (await cellsOf()).some((c) => c.key === hiddenKey),
    'the token does not show its key',
  )
  assert.ok(
    (await chartsOf()).some((c) => c.key === hiddenKey),
    'the token does not show its key in the charts',
  )
  await page.goto(`${base}/`)
  await page.screenshot({ path: screenshot, fullPage: true })
  console.log(
    `${compared} numbers on the page equal /metrics; ${cells.length} cells; ${charts.length} charts, ` +
      `${checkedPoints} charted values recomputed from their /metrics samples, the latest ones between the scrapes; ` +
      `hidden key shown only with its token; screenshot ${path.basename(screenshot)} (${fs.statSync(screenshot).size} bytes)`,
  )
} finally {
  await context.close()
  fs.rmSync(profile, { recursive: true, force: true })
}
