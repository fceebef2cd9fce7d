-- l256_weights.lua: model base (E = 512, H = 8), embeddings [256, 512] of
-- fixed pseudo-random values in (-1, 1) (about 1 MB of JSON), per-head
-- weights [8, 256, 256] in the answer (524288 floats; the answer is about 8 MB):
-- the cost of printing floats.
--   wrk -t2 -c4 -d5s --latency -s bench/wrk/l256_weights.lua http://127.0.0.1:PORT
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

local L, E = 256, 512

-- built per thread at init, not in wrk's main state, which sends nothing
function init(args)
	common.post("/v1/attention", '{"model":"base","embeddings":' ..
		common.matrix_json(L, E, 67890) .. ',"weights":"per_head"}')
end
