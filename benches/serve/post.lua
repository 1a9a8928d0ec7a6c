-- wrk script of benches/serve/run.sh: POSTs BENCH_BODY to BENCH_PATH with a bearer
-- token; every "{n}" in the path becomes a number unique to the request (a new
-- session per turn). done() prints one line the script reads:
-- RESULT <requests> <requests/s> <p50 ms> <p99 ms> <errors> <non-2xx>
local path = os.getenv("BENCH_PATH")
local body = os.getenv("BENCH_BODY")
local tag = os.getenv("BENCH_TAG") or "r"
local headers = {
  ["Content-Type"] = "application/json",
  ["Authorization"] = "Bearer bench",
}
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("tid", counter)
  table.insert(threads, thread)
end

local n = 0
function request()
  n = n + 1
  local p = path:gsub("{n}", tag .. "-" .. tostring(tid) .. "-" .. tostring(n))
  return wrk.format("POST", p, headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.timeout
  io.write(string.format("RESULT %d %.0f %.3f %.3f %d %d\n",
    summary.requests,
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000,
    latency:percentile(99) / 1000,
    errors, e.status))
end
