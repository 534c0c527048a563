# asprof on the game sample, as the README runs it: the report names the script classes'
# methods, shows the enemies' path finding at about three times the particles, has a frames
# report, and -o writes a LispWorks tree.
#   cmake -DPROG=asprof -DSCRIPT=game.as -DOUT=out.tree -P asprof_check.cmake
file(REMOVE ${OUT})
execute_process(COMMAND ${PROG} --hz 1000 -o ${OUT} ${SCRIPT} 600
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "asprof exited with ${rc}")
endif()
if(NOT out MATCHES "game over after 600 frames")
  message(FATAL_ERROR "the script's own output is missing")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../flat_report_checks.cmake)
flat_cumulative_seconds("${out}" "Enemy::update" "(" enemies)
flat_cumulative_seconds("${out}" "ParticleSystem::update" "(" particles)
# The enemies' cumulative seconds are three times the particles': within 2.2x..3.8x (their
# work is calibrated, not exact; about 0.25 s of particles, so rounding is under 3%).
check_seconds_ratio(${enemies} ${particles} 22 38 "Enemy::update is not about 3x ParticleSystem::update")
if(NOT out MATCHES "sqrt\\(float\\) \\[C\\]")
  message(FATAL_ERROR "the registered sqrt is not a native frame")
endif()
file(READ ${OUT} tree)
if(NOT tree MATCHES "Enemy::find_path")
  message(FATAL_ERROR "the LispWorks tree has no Enemy::find_path")
endif()
# The frames report: one per frame() call (a call ends a frame).
execute_process(COMMAND ${PROG} --hz 1000 --style frames ${SCRIPT} 50 OUTPUT_VARIABLE frames RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT frames MATCHES "50 frames")
  message(FATAL_ERROR "frames report: ${frames}")
endif()
