-- wrk script: one result line per run, `RESULT requests/s p50_ms p99_ms p999_ms errors`.
done = function(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format("RESULT %.0f %.3f %.3f %.3f %d\n",
    summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, errors))
end
