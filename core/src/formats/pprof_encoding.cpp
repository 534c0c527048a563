#include "pprof_encoding.hpp"

#include <zlib.h>

#include <algorithm>

namespace scriptprof::pprof {

void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void field_varint(std::string& out, int field, std::uint64_t v) {
  if (v == 0) return;
  varint(out, static_cast<std::uint64_t>(field) << 3);
  varint(out, v);
}
void field_bytes(std::string& out, int field, const std::string& bytes) {
  varint(out, (static_cast<std::uint64_t>(field) << 3) | 2);
  varint(out, bytes.size());
  out += bytes;
}
void field_packed(std::string& out, int field, const std::vector<std::uint64_t>& values) {
  std::string body;
  for (std::uint64_t v : values) varint(body, v);
  field_bytes(out, field, body);
}


std::string valid_utf8(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string gzip_bytes(const std::string& raw) {
  z_stream z{};
  // The best compression for ordinary profiles (a few bytes less); zlib's default level past a
  // megabyte, where level 9's long match chains cost seconds on the repetitive location lists of
  // a deep stack for a few percent of size.
  const int level = raw.size() > (1u << 20) ? Z_DEFAULT_COMPRESSION : Z_BEST_COMPRESSION;
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);  // +16: gzip
  std::string out(deflateBound(&z, raw.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string value_type(StringTable& strings, const char* type, const char* unit) {
  std::string vt;
  field_varint(vt, 1, strings.index(type));
  field_varint(vt, 2, strings.index(unit));
  return vt;
}

std::string location_message(std::uint64_t location, FunctionId f, int line) {
  std::string line_message, out;
  field_varint(line_message, 1, f + 1);
  field_varint(line_message, 2, static_cast<std::uint64_t>(std::max(0, line)));
  field_varint(out, 1, location + 1);
  field_bytes(out, 4, line_message);
  return out;
}

std::string function_message(StringTable& strings, FunctionId f, const FunctionTable& functions) {
  const FunctionInfo& info = functions.info(f);
  const std::string label = valid_utf8(functions.label(f));
  const std::uint64_t name = strings.index(label);
  std::string function;
  field_varint(function, 1, f + 1);
  field_varint(function, 2, name);
  // pprof "demangles" a function whose system name equals its name and looks like C++ (any
  // of <>[] or "::"), cutting "(...)" and "<...>" out of it: "<anonymous> (w.lua:3)" became
  // blank, "Player::update(float) (game.as:4)" lost its signature. Such a label gets another
  // system name: the bare name when the label adds to it, else none.
  const bool looks_cpp = label.find_first_of("<>[]") != std::string::npos || label.find("::") != std::string::npos;
  field_varint(function, 3, !looks_cpp ? name : info.name != label ? strings.index(valid_utf8(info.name)) : 0);
  field_varint(function, 4, strings.index(valid_utf8(info.file)));
  field_varint(function, 5, static_cast<std::uint64_t>(std::max(0, info.line)));
  return function;
}

}  // namespace scriptprof::pprof
