-- l128_noweights.lua: model base (E = 512, H = 8), embeddings [128, 512] of
-- fixed pseudo-random values in (-1, 1) (about 0.5 MB of JSON), no weights in
-- the answer (still [128, 512] outputs, about 0.8 MB): the cost of reading a
-- large number array and of the forward pass.
--   wrk -t2 -c4 -d5s --latency -s bench/wrk/l128_noweights.lua http://127.0.0.1:PORT
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

local L, E = 128, 512

-- built per thread at init, not in wrk's main state, which sends nothing
function init(args)
	common.post("/v1/attention", '{"model":"base","embeddings":' ..
		common.matrix_json(L, E, 12345) .. ',"weights":"none"}')
end
