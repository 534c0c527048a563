# Checks on a statprof flat report's text, for the command-line tests (cmake -P scripts).

# Sets `var` to the cumulative seconds of the row whose procedure starts with `name` followed by
# `after` (" (" for Lua's "spin (work.lua:6)", "(" for AngelScript's "update(float)").
function(flat_cumulative_seconds report name after var)
  string(REGEX REPLACE "([][()*+.?^$|\\\\])" "\\\\\\1" pattern "${name}${after}")
  # "%  cumulative  self  [calls]  procedure" (jit% and calls columns optional).
  if(NOT report MATCHES "\n *[0-9.]+ +([0-9.]+) +[0-9.]+( +[-0-9]+)?  ${pattern}")
    message(FATAL_ERROR "no row for ${name}")
  endif()
  set(${var} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()

# Fails unless `big` / `small` (seconds printed with two decimals) lies in [lo10/10, hi10/10].
function(check_seconds_ratio big small lo10 hi10 what)
  string(REPLACE "." "" b100 "${big}")
  string(REPLACE "." "" s100 "${small}")
  math(EXPR lo "${s100} * ${lo10}")
  math(EXPR hi "${s100} * ${hi10}")
  math(EXPR b1000 "${b100} * 10")
  if(b1000 LESS lo OR b1000 GREATER hi)
    message(FATAL_ERROR "${what}: ${big} s against ${small} s")
  endif()
endfunction()
