-- An animation job for samples/fiber_jobs: builds strings (allocates) every frame.
local anim = {}

function anim.blend(steps)
  local parts = {}
  for step = 1, steps do
    for i = 1, 4000 do parts[i % 50 + 1] = string.format("%d:%d", step, i) end
    jobs.wait()
  end
  return #parts
end

return anim
