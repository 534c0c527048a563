#include <algorithm>
#include <cstdio>
#include <map>

#include "scriptprof/interval_formats.hpp"
#include "time_scale.hpp"

namespace scriptprof {
namespace {

void be32(std::string& out, std::uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

bool has_line_byte(std::uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) {
    auto b = static_cast<std::uint8_t>(v >> shift);
    if (b == 0x09 || b == 0x0A || b == 0x0D) return true;
  }
  return false;
}

std::string field_text(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

// One symbol table entry: TAB id TAB unknown(0) TAB symbol TAB library TAB library LF.
void symbol_entry(std::string& out, std::uint32_t id, const std::string& symbol, const std::string& library) {
  out += "\t";
  be32(out, id);
  out += "\t";
  be32(out, 0);
  out += "\t" + symbol + "\t" + library + "\t" + library + "\n";
}

constexpr std::uint32_t kTimeScaleId = 0x00010000;  // the "scriptprof ..." symbol
constexpr std::size_t kMaxFrames = 1024;  // the format has no truncation marker: keep the leaf end

}  // namespace

bool write_sampler(const Profile& p, std::string* result, std::string* error, const SamplerWriteOptions& o) {
  const std::uint64_t max_lines = o.max_lines;
  if (p.sample_weight() - p.empty_weight() > max_lines) {
    if (error)
      *error = "a Sampler file holds one line per tick: " + std::to_string(p.sample_weight()) +
               " ticks exceed the limit of " + std::to_string(max_lines) + " lines";
    return false;
  }
  // The file's size follows the weights, not the profile: a tick is a line of its stack's
  // frames (at most kMaxFrames), so a small profile can ask for gigabytes. Refuse it first.
  std::uint64_t bytes = 0;
  auto add_line_bytes = [&](NodeId leaf, std::uint64_t weight) {
    const std::uint64_t depth = std::min<std::uint64_t>(p.tree.node(leaf).depth, kMaxFrames);
    const std::uint64_t line = 18 + 4 * depth;
    bytes = weight > (o.max_bytes + line) / line ? o.max_bytes + 1 : std::min(o.max_bytes + 1, bytes + weight * line);
  };
  if (p.keep_samples) {
    for (const SampleRecord& r : p.samples) add_line_bytes(r.leaf, r.weight);
  } else {
    for (NodeId n = 0; n < p.tree.size(); ++n)
      if (p.tree.node(n).self > 0 && p.tree.node(n).function != kNoFunction) add_line_bytes(n, p.tree.node(n).self);
  }
  if (bytes > o.max_bytes) {
    if (error)
      *error = "a Sampler file holds one line per tick, up to " + std::to_string(kMaxFrames) + " frames each: " +
               std::to_string(p.sample_weight()) + " ticks would take more than the limit of " +
               std::to_string(o.max_bytes >> 20) + " MiB";
    return false;
  }
  // Symbol ids: threads 1..; functions from 0x00010001, skipping ids with TAB/LF/CR bytes.
  std::map<FunctionId, std::uint32_t> sym;
  std::uint32_t next = 0x00010001;
  for (FunctionId f = 0; f < p.functions.size(); ++f) {
    if (p.counts(f).cumulative == 0) continue;
    while (has_line_byte(next)) ++next;
    sym[f] = next++;
  }
  std::string out = "@supersamplerV1.0\n@symboltableV1.1\n";
  std::vector<std::pair<std::uint32_t, NodeId>> threads;  // (sampler thread id, root)
  for (const auto& [thread, root] : p.tree.roots()) {
    std::uint32_t id = static_cast<std::uint32_t>(threads.size()) + 1;
    if (id > 0xFFFF) break;  // the format cannot name more threads
    threads.emplace_back(id, root);
    char name[16];
    std::snprintf(name, sizeof name, "Thread_%04X", static_cast<unsigned>(id));
    symbol_entry(out, id, name, name);
  }
  if (o.time_scale) {
    // Below every function id and above every thread id, so no sample can name it.
    symbol_entry(out, kTimeScaleId, time_scale_text(p, p.keep_samples), "scriptprof");
  }
  for (const auto& [f, id] : sym) {
    const FunctionInfo& info = p.functions.info(f);
    std::string lib = field_text(info.kind == FunctionKind::Native ? "[C]" : info.file);
    symbol_entry(out, id, field_text(p.functions.label(f)), lib);
  }
  out += "@end\n";
  out.reserve(out.size() + bytes + 16 * threads.size() + 5);  // the lines counted above, at once
  auto line = [&](NodeId leaf, NodeId root) {
    std::vector<std::uint32_t> frames;
    for (NodeId n = leaf; n != root && frames.size() < kMaxFrames; n = p.tree.node(n).parent)
      frames.push_back(sym[p.tree.node(n).function]);
    std::string l = "\t";
    be32(l, 1);
    be32(l, 0);
    be32(l, 1);
    be32(l, static_cast<std::uint32_t>(frames.size()));
    for (std::uint32_t id : frames) be32(l, id);
    return l + "\n";
  };
  for (const auto& thread_entry : threads) {
    const std::uint32_t id = thread_entry.first;
    const NodeId root = thread_entry.second;
    char head[32];
    std::snprintf(head, sizeof head, "@threadV1.0\t%04X\n", static_cast<unsigned>(id));
    out += head;
    std::uint32_t thread = 0;
    for (const auto& r : p.tree.roots())
      if (r.second == root) thread = r.first;
    auto emit = [&](NodeId leaf, std::uint64_t weight) {
      if (leaf == root || weight == 0) return;  // empty stacks are skipped, and nodes with no ticks
      std::string l = line(leaf, root);
      for (std::uint64_t i = 0; i < weight; ++i) out += l;  // one line per tick
    };
    if (p.keep_samples) {
      for (const SampleRecord& r : p.samples)
        if (r.thread == thread) emit(r.leaf, r.weight);
    } else {
      std::vector<NodeId> todo{root};
      while (!todo.empty()) {
        NodeId n = todo.back();
        todo.pop_back();
        emit(n, p.tree.node(n).self);
        for (NodeId c = p.tree.node(n).first_child; c != kNoNode; c = p.tree.node(c).next_sibling) todo.push_back(c);
      }
    }
  }
  out += "@end\n";
  *result = std::move(out);
  return true;
}

bool read_sampler(std::string_view b, Profile* out, std::string* error, std::vector<std::string>* warnings) {
  *out = Profile{};
  std::size_t pos = 0;
  auto fail = [&](const std::string& what) {
    if (error) *error = "byte " + std::to_string(pos) + ": " + what;
    return false;
  };
  auto expect = [&](std::string_view s) {
    if (b.substr(pos, s.size()) != s) return false;
    pos += s.size();
    return true;
  };
  auto u32 = [&](std::uint32_t* v) {
    if (pos + 4 > b.size()) return false;
    *v = (std::uint32_t(std::uint8_t(b[pos])) << 24) | (std::uint32_t(std::uint8_t(b[pos + 1])) << 16) |
         (std::uint32_t(std::uint8_t(b[pos + 2])) << 8) | std::uint32_t(std::uint8_t(b[pos + 3]));
    pos += 4;
    return true;
  };
  auto text_to = [&](char end, std::string* s) {
    std::size_t e = b.find(end, pos);
    std::size_t other = b.find(end == '\t' ? '\n' : '\t', pos);
    if (e == std::string_view::npos || (end == '\t' && other < e)) return false;
    *s = std::string(b.substr(pos, e - pos));
    pos = e + 1;
    return true;
  };
  if (!expect("@supersamplerV1.0\n@symboltableV1.1\n")) return fail("not a Sampler file (expected \"@supersamplerV1.0\" and \"@symboltableV1.1\")");
  std::map<std::uint32_t, std::pair<std::string, std::string>> symbols;  // id -> (symbol, library)
  TimeScale scale;
  while (!expect("@end\n")) {
    std::uint32_t id = 0, unknown = 0;
    std::string sym, lib1, lib2;
    if (!expect("\t") || !u32(&id) || !expect("\t") || !u32(&unknown) || !expect("\t") || !text_to('\t', &sym) ||
        !text_to('\t', &lib1) || !text_to('\n', &lib2))
      return fail("malformed symbol table entry (TAB id TAB unknown TAB symbol TAB library TAB library LF)");
    if (id == kTimeScaleId && lib1 == "scriptprof")
      scale = parse_time_scale(sym);
    else
      symbols[id] = {sym, lib1};
  }
  // A Sampler file is a line per tick: in the order they came when it is not ours, or ours says
  // so. The profile then keeps them, one tick's measured time apart (as the timeline lays them
  // out: a period apart, they would drift into gaps), for the formats that need a timeline.
  out->keep_samples = !scale.found || scale.time_order;
  const double tick_ns = scale.found && scale.samples > 0 && scale.total_seconds > 0
                             ? scale.total_seconds * 1e9 / static_cast<double>(scale.samples)
                         : scale.found && scale.period_ns ? static_cast<double>(scale.period_ns)
                                                          : 10e6;
  std::map<std::uint32_t, FunctionId> ids;
  std::vector<FunctionId> frames;
  std::string_view last_ids;
  while (!expect("@end\n")) {
    if (!expect("@threadV1.0\t") || pos + 5 > b.size() || b[pos + 4] != '\n') return fail("expected \"@threadV1.0\" TAB hex4 LF or the final \"@end\"");
    std::uint32_t thread = 0;
    for (int i = 0; i < 4; ++i) {
      char c = b[pos + static_cast<std::size_t>(i)];
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return fail("the thread id must be four hex digits");
      thread = thread * 16 + static_cast<std::uint32_t>(d);
    }
    pos += 5;
    out->add_thread(thread, "");
    std::uint64_t tick = 0;
    while (pos < b.size() && b[pos] == '\t') {
      ++pos;
      std::uint32_t k1 = 0, k0 = 0, k1b = 0, n = 0;
      if (!u32(&k1) || !u32(&k0) || !u32(&k1b) || !u32(&n)) return fail("truncated sample");
      if (static_cast<std::uint64_t>(n) * 4 + 1 > b.size() - pos) return fail("a sample claims " + std::to_string(n) + " frames, more than the file holds");
      // A line per tick repeats a stack as often as it was sampled: the same bytes as the line
      // before are the same frames, without a lookup per frame.
      const std::string_view ids_bytes = b.substr(pos, std::size_t{n} * 4);
      if (ids_bytes == last_ids && !frames.empty()) {
        pos += ids_bytes.size();
      } else {
        last_ids = ids_bytes;
        frames.assign(n, 0);
        for (std::uint32_t i = 0; i < n; ++i) {
          std::uint32_t id = 0;
          u32(&id);  // in bounds: checked against n above
          auto s = symbols.find(id);
          if (s == symbols.end()) return fail("frame id " + std::to_string(id) + " is not in the symbol table");
          auto it = ids.find(id);
          if (it == ids.end()) {
            FunctionInfo info;
            info.name = s->second.first;
            info.kind = FunctionKind::Named;
            if (s->second.second != "[C]") info.file = s->second.second;
            it = ids.emplace(id, out->add_function(std::move(info))).first;
          }
          frames[n - 1 - i] = it->second;  // the file is leaf first
        }
      }
      if (!expect("\n")) return fail("a sample must end with LF");
      out->add_sample(thread, static_cast<std::uint64_t>(static_cast<double>(tick++) * tick_ns), 1, frames.data(),
                      frames.size());
    }
  }
  if (std::string guess = apply_time_scale(scale, out, 10'000'000); !guess.empty() && warnings)
    warnings->push_back(guess);
  return true;
}

}  // namespace scriptprof
