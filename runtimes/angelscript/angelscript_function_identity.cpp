// Function identity and names for the AngelScript adapter.
//
// A function is its asIScriptFunction* while a run lasts: the adapter holds a reference to each
// one it met (so the address cannot be reused by another function), and gives them back at
// stop. Across runs a function is its name, section and line, so a module built again maps to
// the same functions of the profile.
#include <string>

#include "angelscript_sampler.hpp"

namespace scriptprof::angelscript {

namespace {

// "Player::update(float)", "ai::think()", "sqrt(float)": the declaration without its return
// type, with namespace and class, as AngelScript programmers write a function's name.
std::string display_name(asIScriptFunction* f) {
  std::string qualified;
  if (const char* ns = f->GetNamespace(); ns && *ns) qualified += std::string(ns) + "::";
  if (const char* cls = f->GetObjectName(); cls && *cls) qualified += std::string(cls) + "::";
  qualified += f->GetName();
  std::string decl = f->GetDeclaration(true, true, false);
  std::size_t at = decl.find(qualified + "(");
  if (at == std::string::npos) return decl;  // an operator or a form we do not know: as declared
  return decl.substr(at);
}

// The function's lines: AngelScript 2.35 tells a function's lines with code only through
// FindNextLineWithCode, which answers -1 outside [first line, last line]. From a line inside
// (one the function was sampled on), bisect to both ends.
void line_range(asIScriptFunction* f, int inside, int* first, int* last) {
  *first = *last = 0;
  if (inside <= 0 || f->FindNextLineWithCode(inside) < 0) return;
  int lo = 1, hi = inside;  // smallest valid line in [lo, hi]
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (f->FindNextLineWithCode(mid) >= 0) hi = mid;
    else lo = mid + 1;
  }
  *first = lo;
  lo = inside;
  hi = 1 << 20;  // AngelScript keeps 20 bits of a line
  while (lo < hi) {  // largest valid line in [lo, hi]
    int mid = lo + (hi - lo + 1) / 2;
    if (f->FindNextLineWithCode(mid) >= 0) lo = mid;
    else hi = mid - 1;
  }
  *last = lo;
}

}  // namespace

FunctionId AngelScriptSampler::function_id(asIScriptFunction* f, int line_inside) {
  auto it = ids_.find(f);
  if (it != ids_.end()) return it->second;
  FunctionInfo info;
  info.name = display_name(f);
  if (f->GetFuncType() == asFUNC_SCRIPT) {
    if (const char* section = f->GetScriptSectionName()) info.file = section;
    line_range(f, line_inside, &info.line, &info.last_line);
    info.kind = FunctionKind::Script;
  } else {
    info.kind = FunctionKind::Native;
  }
  std::string key = info.name + '\x1f' + info.file + '\x1f' + std::to_string(info.line);
  auto known = ids_by_text_.find(key);
  FunctionId id = known != ids_by_text_.end() ? known->second : engine_.add_function(info);
  ids_by_text_.emplace(std::move(key), id);
  f->AddRef();  // held until stop: the address stays this function's
  ids_.emplace(f, id);
  return id;
}

void AngelScriptSampler::release_functions() {
  for (auto& [f, id] : ids_) f->Release();
  ids_.clear();
  processes_.clear();
}

}  // namespace scriptprof::angelscript
