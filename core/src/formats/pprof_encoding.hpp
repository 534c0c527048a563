// The protocol buffer wire format, just what profile.proto needs, shared by the pprof writers
// (the time profile's and the heap's): fields, the string table, UTF-8 repair and gzip.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "scriptprof/function_table.hpp"

namespace scriptprof::pprof {

void varint(std::string& out, std::uint64_t v);
// Zero-valued scalars are omitted, as proto3 does.
void field_varint(std::string& out, int field, std::uint64_t v);
void field_bytes(std::string& out, int field, const std::string& bytes);
void field_packed(std::string& out, int field, const std::vector<std::uint64_t>& values);

// profile.proto's string table: index 0 is "".
class StringTable {
 public:
  StringTable() { index(""); }
  std::uint64_t index(const std::string& s) {
    auto [it, inserted] = ids_.emplace(s, strings_.size());
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, std::uint64_t> ids_;
  std::vector<std::string> strings_;
};

// Protobuf strings must be UTF-8: invalid bytes become U+FFFD (FORMATS.md 0.2).
std::string valid_utf8(const std::string& s);
std::string gzip_bytes(const std::string& raw);
// A ValueType message (type, unit).
std::string value_type(StringTable& strings, const char* type, const char* unit);

// A Location message: id `location` + 1, function `f` at `line` (<= 0: none).
std::string location_message(std::uint64_t location, FunctionId f, int line);
// A Function message for `f` (id f + 1), named by its label as every profile names it.
std::string function_message(StringTable& strings, FunctionId f, const FunctionTable& functions);

}  // namespace scriptprof::pprof
