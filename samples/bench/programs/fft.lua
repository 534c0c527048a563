-- Numeric arrays (the kind of scimark's FFT): a radix-2 complex FFT of 1024 points and its
-- inverse, arg[1] times; prints the round trip's largest error.
local n = tonumber(arg and arg[1]) or 2000
local size = 1024
local re, im = {}, {}
for i = 1, size do re[i], im[i] = math.sin(i * 0.37), math.cos(i * 0.11) end
local original = {}
for i = 1, size do original[i] = re[i] end
local cos, sin, pi = math.cos, math.sin, math.pi
local function fft(re, im, sign)
  local j = 1
  for i = 1, size do  -- bit-reversed order
    if i < j then re[i], re[j], im[i], im[j] = re[j], re[i], im[j], im[i] end
    local m = size / 2
    while m >= 1 and j > m do j = j - m m = m / 2 end
    j = j + m
  end
  local len = 2
  while len <= size do
    local angle = sign * 2 * pi / len
    local wr, wi = cos(angle), sin(angle)
    for start = 1, size, len do
      local cr, ci = 1.0, 0.0
      local half = len / 2
      for k = 0, half - 1 do
        local a, b = start + k, start + k + half
        local tr, ti = re[b] * cr - im[b] * ci, re[b] * ci + im[b] * cr
        re[b], im[b] = re[a] - tr, im[a] - ti
        re[a], im[a] = re[a] + tr, im[a] + ti
        cr, ci = cr * wr - ci * wi, cr * wi + ci * wr
      end
    end
    len = len * 2
  end
end
for _ = 1, n do
  fft(re, im, -1)
  fft(re, im, 1)
  for i = 1, size do re[i], im[i] = re[i] / size, im[i] / size end
end
local worst = 0
for i = 1, size do worst = math.max(worst, math.abs(re[i] - original[i])) end
print(string.format("%.3e", worst))
