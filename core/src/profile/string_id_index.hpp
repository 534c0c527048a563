// Distinct strings by id, for a table that already holds the strings (function names, labels).
//
// An open-addressing table of ids with a part of each hash (8 bytes a slot, at most half full),
// looked up by text through `text_of(id)`. A map of strings kept a node, a bucket and a second
// copy of each string: 60 to 100 bytes an entry, most of what a reader of a file of distinct
// names used.
#pragma once
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace scriptprof {

template <class TextOf>
class StringIdIndex {
 public:
  static constexpr std::uint32_t kNone = 0xffffffffu;

  explicit StringIdIndex(TextOf text_of) : text_of_(std::move(text_of)) {}

  // The id whose text is `s`, or kNone.
  std::uint32_t find(std::string_view s) const {
    if (slots_.empty()) return kNone;
    const std::size_t h = hash(s);
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    for (std::size_t i = h & mask(); slots_[i].id != kNone; i = (i + 1) & mask())
      if (slots_[i].tag == tag && std::string_view(text_of_(slots_[i].id)) == s) return slots_[i].id;
    return kNone;
  }

  // Room for `n` ids without growing (a growth holds the old slots and the new at once), for
  // an index still empty.
  void reserve(std::size_t n) {
    std::size_t size = 64;
    while (size < 2 * n) size *= 2;
    if (size_ == 0 && size > slots_.size()) slots_.assign(size, Slot{});
  }

  // Adds `id`, whose text the index must not hold yet.
  void insert(std::uint32_t id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(id, hash(text_of_(id)));
    ++size_;
  }

 private:
  struct Slot {
    std::uint32_t id = kNone;
    std::uint32_t tag = 0;  // the hash's high half: most mismatches end here, without the text
  };

  static std::size_t hash(std::string_view s) {
    const std::uint64_t h = std::hash<std::string_view>{}(s);
    return static_cast<std::size_t>(h ^ (h >> 29) * 0x9E3779B97F4A7C15ull);  // spread low bits too
  }
  std::size_t mask() const { return slots_.size() - 1; }
  void place(std::uint32_t id, std::size_t h) {
    std::size_t i = h & mask();
    while (slots_[i].id != kNone) i = (i + 1) & mask();
    slots_[i] = {id, static_cast<std::uint32_t>(h >> 32)};
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    for (const Slot& s : old)
      if (s.id != kNone) place(s.id, hash(text_of_(s.id)));
  }

  std::vector<Slot> slots_;  // a power of two in size
  std::size_t size_ = 0;
  TextOf text_of_;
};

}  // namespace scriptprof
