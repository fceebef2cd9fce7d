-- common.lua: what every scenario of bench/wrk/ shares (loaded by dofile from
-- the scenario script's own directory, so wrk may run from any directory).
--
-- Lua states: wrk runs this file once in its main state (done) and once per
-- thread (init: each thread builds its own body).
--
-- done() prints one machine-readable line that bench/http_bench.sh reads:
--   attnd-bench: non2xx=N status_errors=N socket_errors=N connect=N read=N write=N timeout=N
-- non2xx and status_errors are both wrk's own summary.errors.status (status
-- >= 400); http_bench.sh replaces non2xx with attnd's /metrics count of every
-- answer outside 2xx (but 499 and 0: the client left first). There is no response() callback: with one, wrk copies
-- every answer's headers and body into Lua, which on 0.8 MB answers cost it
-- 1.3 ms of CPU a request (bench/path_bench.py's wrk/req column), on the
-- cores the server is measured on.

local common = {}

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

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format(
		"attnd-bench: non2xx=%d status_errors=%d socket_errors=%d " ..
		"connect=%d read=%d write=%d timeout=%d\n",
		e.status, e.status, e.connect + e.read + e.write + e.timeout,
		e.connect, e.read, e.write, e.timeout))
end

return common
