#include <zlib.h>

#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include "scriptprof/interchange_formats.hpp"

namespace scriptprof {
namespace {

// ---- Protocol buffer wire format: just what profile.proto needs ----------------------------

void varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
// Zero-valued scalars are omitted, as proto3 does.
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

}  // namespace

std::string write_pprof(const Profile& p, bool gzip) {
  StringTable strings;
  const bool wall = p.clock == ClockKind::Wall;
  std::string out;
  auto value_type = [&](const char* type, const char* unit) {
    std::string vt;
    field_varint(vt, 1, strings.index(type));
    field_varint(vt, 2, strings.index(unit));
    return vt;
  };
  // A space profile's weights are bytes (its period the mean bytes between samples): one
  // sample type, alloc_space/bytes, as Go's heap profiles name it. A time profile's weights
  // are ticks: samples/count and their time. A gc profile's weights are collections, one
  // sample type with no time: a sample after a collection stands for no measured span.
  const bool space = p.clock == ClockKind::Alloc;
  const bool gc = p.clock == ClockKind::Gc;
  if (space) {
    field_bytes(out, 1, value_type("alloc_space", "bytes"));
  } else if (gc) {
    field_bytes(out, 1, value_type("collections", "count"));
  } else {
    field_bytes(out, 1, value_type("samples", "count"));
    field_bytes(out, 1, value_type(wall ? "wall" : "cpu", "nanoseconds"));
  }

  // Samples: one per (stack, thread), in call tree order; the leaf location first. With the
  // lines the runtime gave, a location is a function at one line (go tool pprof -list, -lines);
  // else a function at its first line.
  const bool by_line = p.line_tree().size() > p.line_tree().roots().size();
  const CallTree& tree = by_line ? p.line_tree() : p.tree;
  auto function_of = [&](FunctionId location) { return by_line ? p.location(location).function : location; };
  const bool label_threads = tree.roots().size() > 1;
  std::map<FunctionId, bool> used, used_locations;
  for (const auto& [thread, root] : tree.roots()) {
    std::string thread_name;
    for (const auto& [t, r] : p.tree.roots())
      if (t == thread) thread_name = valid_utf8(thread_label(p, r));
    std::vector<NodeId> todo{root};
    while (!todo.empty()) {
      NodeId n = todo.back();
      todo.pop_back();
      const CallTreeNode& node = tree.node(n);
      if (node.self > 0 && n != root) {
        std::vector<std::uint64_t> locations;
        for (NodeId k = n; k != root; k = tree.node(k).parent) {
          FunctionId loc = tree.node(k).function;
          locations.push_back(static_cast<std::uint64_t>(loc) + 1);
          used_locations[loc] = true;
          used[function_of(loc)] = true;
        }
        auto label = [&](std::string& sample, const char* key, const std::string& value) {
          std::string l;
          field_varint(l, 1, strings.index(key));
          field_varint(l, 2, strings.index(value));
          field_bytes(sample, 3, l);
        };
        auto emit = [&](std::uint64_t weight, const char* jit) {
          std::string sample;
          field_packed(sample, 1, locations);
          if (space || gc) field_packed(sample, 2, {weight});
          else field_packed(sample, 2, {weight, weight * p.period_ns});
          if (label_threads) label(sample, "thread", thread_name);
          if (jit) label(sample, "jit", jit);
          field_bytes(out, 2, sample);
        };
        // A JIT runtime's Lua leaf splits by how its code ran: label jit=compiled/interpreted
        // (go tool pprof -tags, -tagfocus=jit=compiled).
        const std::optional<std::uint64_t> compiled =
            can_run_compiled(p.functions.info(function_of(node.function))) ? p.compiled_at(tree, n) : std::nullopt;
        if (!compiled) {
          emit(node.self, nullptr);
        } else {
          if (*compiled) emit(*compiled, "compiled");
          if (node.self > *compiled) emit(node.self - *compiled, "interpreted");
        }
      }
      std::vector<NodeId> kids;
      for (NodeId c = node.first_child; c != kNoNode; c = tree.node(c).next_sibling) kids.push_back(c);
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) todo.push_back(*it);
    }
  }
  for (const auto& [loc, _] : used_locations) {
    FunctionId f = function_of(loc);
    // Line 0: not known (a C function, ticks left at a stop): the function's first line.
    int line_no = by_line && p.location(loc).line > 0 ? p.location(loc).line : p.functions.info(f).line;
    std::string line, location;
    field_varint(line, 1, f + 1);
    field_varint(line, 2, static_cast<std::uint64_t>(std::max(0, line_no)));
    field_varint(location, 1, loc + 1);
    field_bytes(location, 4, line);
    field_bytes(out, 4, location);
  }
  for (const auto& [f, _] : used) {
    const FunctionInfo& info = p.functions.info(f);
    const std::string label = valid_utf8(p.functions.label(f));
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
    field_bytes(out, 5, function);
  }
  // Before the string table is written.
  std::string period_type = space ? value_type("space", "bytes")
                            : gc  ? value_type("collections", "count")
                                  : value_type(wall ? "wall" : "cpu", "nanoseconds");
  for (const std::string& s : strings.strings()) field_bytes(out, 6, s);
  field_varint(out, 9, p.start_unix_ns);
  field_varint(out, 10, static_cast<std::uint64_t>(std::llround(p.total_seconds * 1e9)));
  field_bytes(out, 11, period_type);
  field_varint(out, 12, gc ? 1 : p.period_ns);
  return gzip ? gzip_bytes(out) : out;
}

}  // namespace scriptprof
