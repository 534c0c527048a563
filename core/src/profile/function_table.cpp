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

void FunctionTable::relabel(FunctionId id, std::string label) {
  FunctionInfo& f = infos_[id];
  f.name = std::move(label);
  f.kind = FunctionKind::Named;
  f.file.clear();
  f.line = f.last_line = 0;
  labels_valid_ = false;
}

const std::string& FunctionTable::label(FunctionId id) const {
  if (!labels_valid_) build_labels();
  const std::uint32_t at = label_at_[id];
  return at == kOwnName ? infos_[id].name : made_labels_[at];
}

void FunctionTable::build_labels() const {
  label_at_.clear();
  label_at_.reserve(infos_.size());
  made_labels_.clear();
  // Every label made so far, by its text; a label that came again counts how many times in
  // `repeats` (by the id of the first function that bore it).
  auto text_of = [this](std::uint32_t i) -> const std::string& {
    return label_at_[i] == kOwnName ? infos_[i].name : made_labels_[label_at_[i]];
  };
  StringIdIndex<decltype(text_of)> made(text_of);
  made.reserve(infos_.size());
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
    if (label == f.name) {
      label_at_.push_back(kOwnName);
    } else {
      label_at_.push_back(static_cast<std::uint32_t>(made_labels_.size()));
      made_labels_.push_back(std::move(label));
    }
    made.insert(static_cast<std::uint32_t>(label_at_.size() - 1));
  }
  labels_valid_ = true;
}

}  // namespace scriptprof

namespace scriptprof {

std::size_t FunctionTable::bytes() const {
  std::size_t n = heap_bytes(infos_) + heap_bytes(label_at_) + heap_bytes(made_labels_);
  for (const FunctionInfo& info : infos_) n += heap_bytes(info.name) + heap_bytes(info.file);
  for (const std::string& label : made_labels_) n += heap_bytes(label);
  return n;
}

}  // namespace scriptprof
