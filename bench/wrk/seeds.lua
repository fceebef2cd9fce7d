-- seeds.lua: the seeds' four-word request on the built-in model tiny
-- (E = 8, H = 2; the Korean tutorial's sentence "I ate a delicious apple").
--   wrk -t2 -c32 -d10s --latency -s bench/wrk/seeds.lua http://127.0.0.1:PORT
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local common = dofile(dir .. "common.lua")

common.post("/v1/attention", '{"model":"tiny","text":"나는 맛있는 사과를 먹었다"}')
