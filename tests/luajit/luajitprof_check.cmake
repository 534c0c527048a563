# luajitprof on the quickstart sample, as the README runs it: the report shows the 3:1 split of
# heavy and light with the JIT on, and -o writes a speedscope file that parses as one.
#   cmake -DPROG=luajitprof -DSCRIPT=work.lua -DOUT=out.speedscope.json -P luajitprof_check.cmake
file(REMOVE ${OUT})
# 400 rounds: light gets about 0.2 s. The report prints centiseconds, so with 60 rounds light was
# 0.03 or 0.04 s and the rounding alone moved the ratio by 15% (the check failed under load).
execute_process(COMMAND ${PROG} --hz 1000 -o ${OUT} ${SCRIPT} 400
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "luajitprof exited with ${rc}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/../flat_report_checks.cmake)
flat_cumulative_seconds("${out}" heavy " (" heavy)
flat_cumulative_seconds("${out}" light " (" light)
# heavy's cumulative seconds are three times light's: within 2.4x..3.6x (rounding is under 3% here).
check_seconds_ratio(${heavy} ${light} 24 36 "heavy is not about 3x light")
if(NOT out MATCHES "jit%")
  message(FATAL_ERROR "no jit% column")
endif()
file(READ ${OUT} json)
string(JSON schema GET "${json}" "$schema")
string(JSON unit GET "${json}" profiles 0 unit)
if(NOT schema MATCHES "speedscope" OR NOT unit STREQUAL "seconds" AND NOT unit STREQUAL "milliseconds" AND NOT unit STREQUAL "nanoseconds")
  message(FATAL_ERROR "not a speedscope time profile: ${schema} ${unit}")
endif()
string(JSON nframes LENGTH "${json}" shared frames)
if(nframes LESS 4)
  message(FATAL_ERROR "speedscope file has ${nframes} frames")
endif()
