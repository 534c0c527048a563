// Function identities and their printable information.
// The core never sees a runtime's own objects: an adapter maps its keys (a Lua prototype,
// a C function pointer) to a FunctionId once, and the profile speaks only in FunctionIds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace scriptprof {

using FunctionId = std::uint32_t;
inline constexpr FunctionId kNoFunction = 0xffffffffu;

enum class FunctionKind : std::uint8_t {
  Script,  // a function of the interpreted language
  Native,  // a host (C) function
  Main,    // a chunk's top level
  Pseudo,  // not a function: "(idle)", "(gc)", a thread node
  Named,   // a function known only by its label (read from a file): printed verbatim
};

struct FunctionInfo {
  std::string name;         // best name known; "?" until the runtime offers one
  std::string file;         // short source name ("demo.lua"); empty for natives
  int line = 0;             // line where the function is defined (0 if unknown)
  int last_line = 0;        // last line of the definition (0 if unknown)
  FunctionKind kind = FunctionKind::Script;
  bool collector = false;   // the runtime's garbage collector runs here (Lua's collectgarbage,
                            // LuaJIT's (gc)): its samples are the profile's time in GC
};

// Whether a function's samples can have run JIT-compiled script code: not a pseudo frame
// ((gc), (jit), (C)) and not a native function.
inline bool can_run_compiled(const FunctionInfo& f) {
  return f.kind != FunctionKind::Pseudo && f.kind != FunctionKind::Native;
}

// Owns every FunctionInfo of a profile and derives the unique display labels.
class FunctionTable {
 public:
  // Adds a function; ids are dense and assigned in first-seen order.
  FunctionId add(FunctionInfo info);
  // Gives a function a better name (the adapter learns names lazily).
  void rename(FunctionId id, std::string name);
  // Makes `label` the function's whole label (a name with no file or line): a comparison gives
  // a run's functions the labels of the other run's that they match.
  void relabel(FunctionId id, std::string label);

  std::size_t size() const { return infos_.size(); }
  const FunctionInfo& info(FunctionId id) const { return infos_[id]; }

  // Unique label per function (FORMATS.md 0.2): "name (file:line)", "name [C]",
  // "main chunk (file)" or the pseudo name; collisions get " #2", " #3" in id order.
  const std::string& label(FunctionId id) const;
  // Heap bytes of the infos, their strings and the label cache.
  std::size_t bytes() const;

 private:
  void build_labels() const;

  std::vector<FunctionInfo> infos_;
  // The label cache, rebuilt when infos change. A label that is the function's name itself (a
  // name read from a file) is not kept twice: a million such functions saved 32 MB.
  static constexpr std::uint32_t kOwnName = 0xffffffffu;
  mutable std::vector<std::uint32_t> label_at_;  // per function: index in made_labels_, or kOwnName
  mutable std::vector<std::string> made_labels_;
  mutable bool labels_valid_ = false;
};

// The label a function would get before de-duplication.
std::string base_label(const FunctionInfo& info);

}  // namespace scriptprof
