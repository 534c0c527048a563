// Hidden functions (Allegro's *hidden-functions*): removed from every stack before analysis,
// so their time goes to the nearest displayed caller, which reports mark with "...".
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"

namespace scriptprof {

struct HiddenFolding {
  Profile profile;                                  // same function ids; hidden frames removed
  std::vector<bool> called_hidden;                  // per function: a hidden callee was folded into it
  std::map<FunctionId, std::uint64_t> hidden_leaf;  // samples whose callees were all hidden, per function
};

// Folds away the functions for which `hidden` is true.
HiddenFolding fold_hidden(const Profile& profile, const std::function<bool(FunctionId)>& hidden);

// Whether a function's name or label is in `names`.
bool named_in(const Profile& profile, FunctionId f, const std::vector<std::string>& names);
// Whether a function's source file or name starts with one of `prefixes` (a "package": a
// directory, a module file, or a library such as "string.").
bool in_package(const Profile& profile, FunctionId f, const std::vector<std::string>& prefixes);

}  // namespace scriptprof
