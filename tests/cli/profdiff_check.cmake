# profdiff on two runs of the quickstart script, the second with heavy() doing a third of its
# work: spin's self time falls, the report says so, --folded writes both weights per stack and
# --html a differential flame graph; a missing file is an error naming it.
#   cmake -DLUAPROF=luaprof -DPROFDIFF=profdiff -DSCRIPT=work.lua -DDIR=dir -P profdiff_check.cmake
file(MAKE_DIRECTORY ${DIR})
file(READ ${SCRIPT} text)
file(WRITE ${DIR}/work.lua "${text}")
execute_process(COMMAND ${LUAPROF} --hz 1000 -o ${DIR}/before.tree ${DIR}/work.lua 40 OUTPUT_QUIET RESULT_VARIABLE rc)
string(REPLACE "spin(3 * n)" "spin(n)" text "${text}")
file(WRITE ${DIR}/work.lua "${text}")
execute_process(COMMAND ${LUAPROF} --hz 1000 -o ${DIR}/after.tree ${DIR}/work.lua 40 OUTPUT_QUIET RESULT_VARIABLE rc2)
if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "luaprof failed: ${rc} ${rc2}")
endif()
execute_process(COMMAND ${PROFDIFF} ${DIR}/before.tree ${DIR}/after.tree --folded ${DIR}/diff.folded --html ${DIR}/diff.html
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "profdiff exited with ${rc}")
endif()
# spin is the first row, with less self time after (a negative change of seconds).
if(NOT out MATCHES "function\n[ 0-9.+-]+ -0\\.[0-9][0-9] [ 0-9.+-]+  spin \\(")
  message(FATAL_ERROR "spin is not first with less self time")
endif()
file(READ ${DIR}/diff.folded folded)
if(NOT folded MATCHES "heavy \\([^)]*\\);spin \\([^)]*\\) [0-9]+ [0-9]+\n")
  message(FATAL_ERROR "no heavy;spin line with two weights:\n${folded}")
endif()
# The differential flame graph: each frame knows the base run's weight of its stack.
file(READ ${DIR}/diff.html page)
# Nodes are [parent, function, samples, base samples]: the root's carries the base run's total.
if(NOT page MATCHES "\"base_samples\":[0-9]+" OR NOT page MATCHES "\"nodes\":\\[\\[0,-1,[0-9]+,[0-9]+\\]" OR NOT page MATCHES "red: slower than there, blue: faster")
  message(FATAL_ERROR "diff.html is not a differential flame graph")
endif()
execute_process(COMMAND ${PROFDIFF} ${DIR}/missing.tree ${DIR}/after.tree ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc EQUAL 0 OR NOT err MATCHES "missing\\.tree")
  message(FATAL_ERROR "a missing file: status ${rc}, ${err}")
endif()
