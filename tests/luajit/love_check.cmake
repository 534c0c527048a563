# The LÖVE sample headless: a few hundred frames of samples/love under xvfb-run with the profiler
# required in love.load; the report names the game's functions and the speedscope file parses.
#   cmake -DXVFB=xvfb-run -DLOVE=love -DGAME=samples/love -DCPATH=build/lib/luajit/?.so -DOUT=f.json -P love_check.cmake
file(REMOVE ${OUT})
execute_process(COMMAND ${CMAKE_COMMAND} -E env SCRIPTPROF_LUAJIT_CPATH=${CPATH} SCRIPTPROF_LOVE_OUT=${OUT}
                        SCRIPTPROF_LOVE_FRAMES=300 ${XVFB} -a ${LOVE} ${GAME}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 240)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "love exited with ${rc}")
endif()
foreach(expected "love.update \\(main.lua:" "collide \\(main.lua:" "jit%" "\\(300 frames\\)")
  if(NOT out MATCHES "${expected}")
    message(FATAL_ERROR "the report lacks ${expected}")
  endif()
endforeach()
file(READ ${OUT} json)
string(JSON schema GET "${json}" "$schema")
string(JSON nframes LENGTH "${json}" shared frames)
string(JSON nprofiles LENGTH "${json}" profiles)
if(NOT schema MATCHES "speedscope" OR nframes LESS 5 OR nprofiles LESS 1)
  message(FATAL_ERROR "not a speedscope file with the game's frames: ${schema}, ${nframes} frames")
endif()
string(JSON names GET "${json}" shared frames)
if(NOT names MATCHES "collide")
  message(FATAL_ERROR "the speedscope file lacks collide")
endif()
