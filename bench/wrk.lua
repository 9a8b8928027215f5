-- wrk script for bench/run.sh. Configured through the environment:
--   WRK_METHOD      request method (default POST)
--   WRK_BODY        request body; every "$K" in it becomes this request's key
--   WRK_KEY_HEADER  header that carries the key (e.g. Idempotency-Key); empty: none
--   WRK_KEY_MODE    unique (a new key per request) | same (one key for the whole run) | none
--   WRK_HEADERS     extra headers, "Name: value" separated by "|"
--   WRK_RUN         a token that makes keys unique across runs against one server
-- done() prints one line: WRK {"requests":..,"rps":..,"p50_us":..,"p99_us":..,"errors":..,"non2xx":..}

local threads = {}
local counter = 0
local prefix = ""
local method = os.getenv("WRK_METHOD") or "POST"
local body_tpl = os.getenv("WRK_BODY") or ""
local key_header = os.getenv("WRK_KEY_HEADER") or ""
local key_mode = os.getenv("WRK_KEY_MODE") or "none"
local headers = { ["Content-Type"] = "application/json" }
for h in string.gmatch(os.getenv("WRK_HEADERS") or "", "[^|]+") do
  local name, value = string.match(h, "^%s*([^:]+):%s*(.-)%s*$")
  if name then headers[name] = value end
end
local has_k = string.find(body_tpl, "$K", 1, true) ~= nil
local fixed = nil

function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  prefix = (os.getenv("WRK_RUN") or "r") .. "-" .. tostring(tid) .. "-"
  if key_mode ~= "unique" and not has_k then
    local h = {}
    for k, v in pairs(headers) do h[k] = v end
    if key_mode == "same" and key_header ~= "" then h[key_header] = "same-key" end
    fixed = wrk.format(method, nil, h, body_tpl)
  end
end

function request()
  if fixed then return fixed end
  counter = counter + 1
  local key = key_mode == "same" and "same-key" or (prefix .. counter)
  local h = {}
  for k, v in pairs(headers) do h[k] = v end
  if key_header ~= "" and key_mode ~= "none" then h[key_header] = key end
  local body = body_tpl
  if has_k then body = string.gsub(body_tpl, "%$K", key) end
  return wrk.format(method, nil, h, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'WRK {"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%d,"p99_us":%d,"errors":%d,"non2xx":%d}\n',
    summary.requests, secs, summary.requests / secs, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
