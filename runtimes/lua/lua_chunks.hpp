// The chunks Lua functions come from, as function identity needs them: a chunk is told from
// another loaded later at the same address by its source string's length and first and last
// bytes, without keeping its text (a chunk loaded from a string has the whole text as its
// source, and thousands of such chunks must not cost their text again in the profiler).
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

#include "lua_declared_names.hpp"

namespace scriptprof::lua {

class LuaChunks {
 public:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  // Keep each chunk's whole text (for annotation), not only "@file"/"=name" sources.
  void keep_text(bool keep) { keep_text_ = keep; }
  // The chunk of the function `ar` describes (filled with "S"): the one recorded at its source's
  // address, or a new one.
  std::uint32_t chunk_of(const lua_Debug* ar);
  // The chunk recorded for `ar` (filled with "S"), or kNone: nothing is recorded.
  std::uint32_t find(const lua_Debug* ar) const;
  // Whether `chunk` is the chunk `ar` (filled with "S") shows, not another at its address.
  bool holds(std::uint32_t chunk, const lua_Debug* ar) const;
  // The name the function `ar` is declared under in the chunk's text ("" for an anonymous
  // one), or null when the text cannot be read or does not show it. Scanned once per chunk.
  const std::string* declared_name(std::uint32_t chunk, const lua_Debug* ar);
  // The chunk's kept source ("@file", "=name", or its text), or null.
  const std::string* text(std::uint32_t chunk) const;
  void clear();
  std::size_t own_bytes() const;

 private:
  struct Record {
    const void* source = nullptr;
    std::size_t length = 0;
    char head[24] = {};
    char tail[24] = {};
    std::string text;      // "@file"/"=name" sources, or the text when keep_text_
    bool scanned = false;  // declared names looked for
    DeclaredNames declared;
  };
  bool same_source(const Record& c, const lua_Debug* ar) const;

  bool keep_text_ = false;
  // A deque: a program that loads thousands of chunks grows it without a vector's doubling,
  // which held the old and the new array at once (0.9 MB at the peak for 5,000 chunks).
  std::deque<Record> chunks_;
  std::unordered_map<const void*, std::uint32_t> index_;  // source address -> latest chunk
};

}  // namespace scriptprof::lua
