// A profile's function by its name, for the adapters' tests: kNoFunction when there is none.
#pragma once
#include <string>

#include "scriptprof/profile.hpp"

namespace scriptprof::test {

inline FunctionId function_named(const Profile& p, const std::string& name) {
  for (FunctionId f = 0; f < p.functions.size(); ++f)
    if (p.functions.info(f).name == name) return f;
  return kNoFunction;
}

}  // namespace scriptprof::test
