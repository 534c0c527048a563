-- An AI job for samples/fiber_jobs: thinks a little every frame, then gives the thread to the
-- next job with jobs.wait() (a C function that switches fibers).
local ai = {}

local function score_move(move, step)
  local score = 0
  for i = 1, 400 do score = score + (i * move + step) % 13 end
  return score
end

function ai.think(steps)
  local best = 0
  for step = 1, steps do
    for move = 1, 60 do best = math.max(best, score_move(move, step)) end
    jobs.wait()
  end
  return best
end

return ai
