#include "scriptprof/function_table.hpp"
#include "scriptprof/heap_bytes.hpp"
#include "string_id_index.hpp"

#include <string_view>
#include <unordered_map>

namespace scriptprof {

std::string base_label(const FunctionInfo& f) {
  const std::string& name = f.name.empty() ? std::string("?") : f.name;
  switch (f.kind) {
    case FunctionKind::Native:
      return name + " [C]";
    case FunctionKind::Main:
      return "main chunk (" + f.file + ")";
    case FunctionKind::Pseudo:
    case FunctionKind::Named:
      return name;
    case FunctionKind::Script:
      break;
  }
  if (f.file.empty()) return name;
  return name + " (" + f.file + ":" + std::to_string(f.line) + ")";
}

FunctionId FunctionTable::add(FunctionInfo info) {
  infos_.push_back(std::move(info));
  labels_valid_ = false;
  return static_cast<FunctionId>(infos_.size() - 1);
}

void FunctionTable::rename(FunctionId id, std::string name) {
  infos_[id].name = std::move(name);
  labels_valid_ = false;
}

const std::string& FunctionTable::label(FunctionId id) const {
  if (!labels_valid_) build_labels();
  return labels_[id];
}

void FunctionTable::build_labels() const {
  labels_.clear();
  labels_.reserve(infos_.size());
  // Every label made so far, by its text; a label that came again counts how many times in
  // `repeats` (by the id of the first function that bore it).
  auto text_of = [this](std::uint32_t i) -> const std::string& { return labels_[i]; };
  StringIdIndex<decltype(text_of)> made(text_of);
  std::unordered_map<std::uint32_t, int> repeats;
  for (const FunctionInfo& f : infos_) {
    std::string label = base_label(f);
    if (const std::uint32_t first = made.find(label); first != made.kNone) {
      // Keep going until the suffixed label is itself unused ("a #2" may be a real name).
      int& n = repeats.try_emplace(first, 1).first->second;
      std::string candidate;
      do {
        candidate = label + " #" + std::to_string(++n);
      } while (made.find(candidate) != made.kNone);
      label = std::move(candidate);
    }
    labels_.push_back(std::move(label));
    made.insert(static_cast<std::uint32_t>(labels_.size() - 1));
  }
  labels_valid_ = true;
}

}  // namespace scriptprof

namespace scriptprof {

std::size_t FunctionTable::bytes() const {
  std::size_t n = heap_bytes(infos_) + heap_bytes(labels_);
  for (const FunctionInfo& info : infos_) n += heap_bytes(info.name) + heap_bytes(info.file);
  for (const std::string& label : labels_) n += heap_bytes(label);
  return n;
}

}  // namespace scriptprof
