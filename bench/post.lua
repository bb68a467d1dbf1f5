-- wrk script: the request `make bench` sends (bench/cmd/benchrun), so a run
-- by hand is comparable with bench/RESULTS.md.
--   wrk -t2 -c64 -d10s -s bench/post.lua http://127.0.0.1:8080/v1/chat/completions
-- For the 10,000-rule config use the model its last rule names, e.g.
--   BENCH_MODEL=model-09999 wrk ... -s bench/post.lua ...
local model = os.getenv("BENCH_MODEL") or "bench-model"

wrk.method = "POST"
wrk.body = '{"model":"' .. model .. '","messages":[{"role":"user","content":"Say hello"}]}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-client-key"

-- Print the quantiles bench/RESULTS.md reports, and non-2xx answers.
done = function(summary, latency, requests)
  io.write(string.format("requests/s: %.0f\n", summary.requests / (summary.duration / 1e6)))
  for _, p in ipairs({50, 99, 99.9}) do
    io.write(string.format("p%-5g %8.0f us\n", p, latency:percentile(p)))
  end
  io.write(string.format("non-2xx/3xx: %d, socket errors: %d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
