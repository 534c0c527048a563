#include "lua_chunks.hpp"

#include <algorithm>
#include <cstring>

#include "lua_source_text.hpp"
#include "scriptprof/heap_bytes.hpp"

namespace scriptprof::lua {
namespace {

constexpr std::size_t kKeptSourceName = 4096;  // "@file"/"=name" sources up to this are kept

}  // namespace

bool LuaChunks::same_source(const Record& c, const lua_Debug* ar) const {
  const std::size_t edge = std::min<std::size_t>(c.length, sizeof(c.head));
  return c.source == ar->source && c.length == source_length(ar) && std::memcmp(c.head, ar->source, edge) == 0 &&
         std::memcmp(c.tail, ar->source + c.length - edge, edge) == 0;
}

std::uint32_t LuaChunks::find(const lua_Debug* ar) const {
  auto found = index_.find(ar->source);
  return found != index_.end() && same_source(chunks_[found->second], ar) ? found->second : kNone;
}

std::uint32_t LuaChunks::chunk_of(const lua_Debug* ar) {
  if (const std::uint32_t known = find(ar); known != kNone) return known;
  // A new chunk, or another one whose source took the address of a collected one.
  const std::size_t length = source_length(ar);
  const std::size_t edge = std::min<std::size_t>(length, sizeof(Record::head));
  Record c;
  c.source = ar->source;
  c.length = length;
  std::memcpy(c.head, ar->source, edge);
  std::memcpy(c.tail, ar->source + length - edge, edge);
  const bool named = ar->source[0] == '@' || ar->source[0] == '=';
  if ((named && length <= kKeptSourceName) || keep_text_) c.text.assign(ar->source, length);
  chunks_.push_back(std::move(c));
  const auto index = static_cast<std::uint32_t>(chunks_.size() - 1);
  index_[ar->source] = index;
  return index;
}

bool LuaChunks::holds(std::uint32_t chunk, const lua_Debug* ar) const {
  return chunk != kNone && same_source(chunks_[chunk], ar);
}

const std::string* LuaChunks::declared_name(std::uint32_t chunk, const lua_Debug* ar) {
  Record& c = chunks_[chunk];
  if (!c.scanned) {
    c.scanned = true;
    std::string text, error;
    if (ar->source[0] == '@') {
      if (source_text(ar->source, &text, &error)) c.declared = declared_names(text);
    } else if (ar->source[0] != '=') {
      c.declared = declared_names(std::string_view(ar->source, source_length(ar)));
    }
  }
  auto it = c.declared.find({ar->linedefined, ar->lastlinedefined});
  return it == c.declared.end() ? nullptr : &it->second;
}

const std::string* LuaChunks::text(std::uint32_t chunk) const {
  if (chunk == kNone) return nullptr;
  const std::string& t = chunks_[chunk].text;
  return t.empty() ? nullptr : &t;
}

void LuaChunks::clear() {
  chunks_.clear();
  index_.clear();
}

std::size_t LuaChunks::own_bytes() const {
  std::size_t bytes = heap_bytes(chunks_) + hash_table_bytes(index_);
  for (const Record& c : chunks_) {
    bytes += heap_bytes(c.text) + tree_bytes(c.declared);
    for (const auto& [lines, name] : c.declared) bytes += heap_bytes(name);
  }
  return bytes;
}

}  // namespace scriptprof::lua
