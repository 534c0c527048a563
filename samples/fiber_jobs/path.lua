-- A path-finding job for samples/fiber_jobs: sorts its open list every frame.
local path = {}

function path.search(steps)
  local open = {}
  for step = 1, steps do
    for i = 1, 3000 do open[i] = {x = (i * 7919 + step) % 1000, y = step} end
    table.sort(open, function(a, b) return a.x < b.x end)
    jobs.wait()
  end
  return #open
end

return path
