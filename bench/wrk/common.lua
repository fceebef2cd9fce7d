-- common.lua: what every scenario of bench/wrk/ shares (loaded by dofile from
-- the scenario script's own directory, so wrk may run from any directory).
--
-- Lua states: wrk runs this file once in its main state (setup, done) and
-- once per thread (init, response); counters live in each thread's state and
-- done() sums them through thread:get.
--
-- done() prints one machine-readable line that bench/http_bench.sh reads:
--   attnd-bench: non2xx=N status_errors=N socket_errors=N connect=N read=N write=N timeout=N
-- non2xx counts every status outside 200-299 (from the response callback);
-- status_errors is wrk's own summary.errors.status (status >= 400 only).

local common = {}

local threads = {}

-- Park-Miller "minimal standard" generator (Park and Miller, CACM 1988):
-- x' = 16807 x mod (2^31 - 1). The product stays below 2^46, exact in a Lua
-- double, so every run and every wrk thread builds the same body.
function common.rng(seed)
	local x = seed
	return function()
		x = (x * 16807) % 2147483647
		return x / 2147483647 * 2 - 1 -- in (-1, 1)
	end
end

-- A JSON [L, E] matrix of fixed pseudo-random values, 4 decimals each.
function common.matrix_json(rows, cols, seed)
	local next_value = common.rng(seed)
	local out = {}
	local row = {}
	for i = 1, rows do
		for j = 1, cols do
			row[j] = string.format("%.4f", next_value())
		end
		out[i] = "[" .. table.concat(row, ",") .. "]"
	end
	return "[" .. table.concat(out, ",") .. "]"
end

-- Sets the request every connection of this thread sends.
function common.post(path, body)
	wrk.method = "POST"
	wrk.path = path
	wrk.body = body
	wrk.headers["Content-Type"] = "application/json"
end

function setup(thread)
	table.insert(threads, thread)
end

non2xx = 0

function response(status, headers, body)
	if status < 200 or status > 299 then
		non2xx = non2xx + 1
	end
end

function done(summary, latency, requests)
	local n = 0
	for _, thread in ipairs(threads) do
		n = n + (thread:get("non2xx") or 0)
	end
	local e = summary.errors
	io.write(string.format(
		"attnd-bench: non2xx=%d status_errors=%d socket_errors=%d " ..
		"connect=%d read=%d write=%d timeout=%d\n",
		n, e.status, e.connect + e.read + e.write + e.timeout,
		e.connect, e.read, e.write, e.timeout))
end

return common
