-- mix.lua: a wrk script that POSTs bodies picked at random from files, and
-- counts the answers by status. Used by tests/daemon/soak and tests/daemon/faults.
--
--   wrk -t2 -c8 -d10s -s tests/lib/mix.lua http://127.0.0.1:PORT -- \
--       /v1/attention 6:valid.json 1:invalid.json ...
--
-- Arguments after `--`: the path, then WEIGHT:FILE pairs (weight 1 if left
-- out). Each wrk thread seeds its own generator from its index, so a run is
-- repeatable for a given thread count. done() prints one line the runners
-- parse:
--   wrk-mix: requests=N s200=N s400=N ... connect=N read=N write=N timeout=N

local threads = {}
local counter = 0

function setup(thread)
	counter = counter + 1
	thread:set("thread_index", counter)
	table.insert(threads, thread)
end

local path = "/"
local bodies = {}
local total = 0
counts = {}

function init(args)
	path = args[1]
	for i = 2, #args do
		local weight, file = args[i]:match("^(%d+):(.+)$")
		if weight == nil then
			weight, file = 1, args[i]
		end
		local f = assert(io.open(file, "rb"))
		local body = f:read("*a")
		f:close()
		total = total + tonumber(weight)
		table.insert(bodies, { upto = total, body = body })
	end
	math.randomseed(1000 + (thread_index or 0))
end

local headers = { ["Content-Type"] = "application/json" }

function request()
	local r = math.random() * total
	for _, b in ipairs(bodies) do
		if r < b.upto then
			return wrk.format("POST", path, headers, b.body)
		end
	end
	return wrk.format("POST", path, headers, bodies[#bodies].body)
end

function response(status, hdrs, body)
	local key = "s" .. status
	counts[key] = (counts[key] or 0) + 1
end

function done(summary, latency, requests)
	local all = {}
	for _, thread in ipairs(threads) do
		local c = thread:get("counts") or {}
		for k, v in pairs(c) do
			all[k] = (all[k] or 0) + v
		end
	end
	local parts = {}
	for k, v in pairs(all) do
		table.insert(parts, k .. "=" .. v)
	end
	table.sort(parts)
	local e = summary.errors
	io.write(string.format("wrk-mix: requests=%d %s connect=%d read=%d write=%d timeout=%d\n",
		summary.requests, table.concat(parts, " "), e.connect, e.read, e.write, e.timeout))
end
