-- Floating-point loops over table fields (the kind of n-body): arg[1] steps of 5 bodies.
local n = tonumber(arg and arg[1]) or 200000
local bodies = {}
for i = 1, 5 do bodies[i] = {x = i, y = i * 0.5, z = -i, vx = 0, vy = 0, vz = 0, mass = 1 / i} end
local function advance(dt)
  for i = 1, #bodies do
    local bi = bodies[i]
    for j = i + 1, #bodies do
      local bj = bodies[j]
      local dx, dy, dz = bi.x - bj.x, bi.y - bj.y, bi.z - bj.z
      local d2 = dx * dx + dy * dy + dz * dz + 0.01
      local mag = dt / (d2 * math.sqrt(d2))
      bi.vx, bi.vy, bi.vz = bi.vx - dx * bj.mass * mag, bi.vy - dy * bj.mass * mag, bi.vz - dz * bj.mass * mag
      bj.vx, bj.vy, bj.vz = bj.vx + dx * bi.mass * mag, bj.vy + dy * bi.mass * mag, bj.vz + dz * bi.mass * mag
    end
  end
  for i = 1, #bodies do
    local b = bodies[i]
    b.x, b.y, b.z = b.x + dt * b.vx, b.y + dt * b.vy, b.z + dt * b.vz
  end
end
for _ = 1, n do advance(0.01) end
print(string.format("%.6f", bodies[1].x))
