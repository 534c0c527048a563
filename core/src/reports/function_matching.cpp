#include "scriptprof/function_matching.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

namespace scriptprof {

namespace {

// A function's parts as a comparison sees them. A live profile gives name, file and line; a
// profile read from a file has only labels ("update (src/game.lua:12)", "main chunk (x.lua)",
// "print [C]"), from which they are taken back.
struct Parts {
  std::string name, file;
  int line = 0;
};

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Parts parts_of(const Profile& p, FunctionId f) {
  const FunctionInfo& info = p.functions.info(f);
  if (info.kind == FunctionKind::Script && !info.file.empty()) return {info.name, info.file, info.line};
  if (info.kind == FunctionKind::Main) return {"main chunk", info.file, 0};
  // "NAME (FILE:LINE)" or "NAME (FILE)": the first " (" (a name holds none; a chunk name may).
  const std::string& label = p.functions.label(f);
  const std::size_t open = label.find(" (");
  if (open == std::string::npos || label.back() != ')') return {label, "", 0};
  std::string inside = label.substr(open + 2, label.size() - open - 3);
  Parts parts{label.substr(0, open), inside, 0};
  const std::size_t colon = inside.rfind(':');
  if (colon != std::string::npos && all_digits(inside.substr(colon + 1))) {
    parts.file = inside.substr(0, colon);
    parts.line = std::stoi(inside.substr(colon + 1).substr(0, 9));
  }
  return parts;
}

bool anonymous(const std::string& name) { return name == "<anonymous>" || name == "?" || name.empty(); }

// Path components, last first: "src/game.lua" -> {"game.lua", "src"}.
std::vector<std::string> reversed_components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t end = path.size();
  while (end > 0) {
    std::size_t slash = path.rfind('/', end - 1);
    std::size_t begin = slash == std::string::npos ? 0 : slash + 1;
    if (end > begin) out.push_back(path.substr(begin, end - begin));
    if (slash == std::string::npos) break;
    end = slash;
  }
  return out;
}

std::size_t shared_tail(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// The distinct files of `parts`, sorted.
std::vector<std::string> distinct_files(const std::vector<Parts>& parts) {
  std::vector<std::string> files;
  for (const Parts& x : parts) files.push_back(x.file);
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

// Each file of `from` to the file of `to` that shares the most trailing components with it,
// when exactly one does (an empty file, a native's, matches only itself).
std::map<std::string, std::string> match_files(const std::vector<std::string>& from, const std::vector<std::string>& to) {
  std::vector<std::vector<std::string>> to_components;
  for (const std::string& t : to) to_components.push_back(reversed_components(t));
  std::map<std::string, std::string> out;
  for (const std::string& f : from) {
    if (f.empty()) {
      out[f] = f;
      continue;
    }
    const auto fc = reversed_components(f);
    std::size_t best = 0;
    const std::string* pick = nullptr;
    bool tie = false;
    for (std::size_t i = 0; i < to.size(); ++i) {
      const std::size_t n = to[i].empty() ? 0 : shared_tail(fc, to_components[i]);
      if (n > best) best = n, pick = &to[i], tie = false;
      else if (n == best && n > 0) tie = true;
    }
    if (pick && !tie) out[f] = *pick;
  }
  return out;
}

// Per function, its key within its run: (file, name) with the ordinal of an anonymous function
// among its file's anonymous ones in line order; keys borne by several functions are ambiguous.
struct Keys {
  std::vector<std::tuple<std::string, std::string, int>> key;  // file, name, ordinal
  std::map<std::tuple<std::string, std::string, int>, std::vector<FunctionId>> holders;
};

Keys keys_of(const std::vector<Parts>& parts, const std::map<std::string, std::string>* file_map) {
  Keys k;
  std::map<std::string, std::vector<std::pair<int, FunctionId>>> anonymous_by_file;
  for (FunctionId f = 0; f < parts.size(); ++f)
    if (anonymous(parts[f].name)) anonymous_by_file[parts[f].file].push_back({parts[f].line, f});
  std::vector<int> ordinal(parts.size(), 0);
  for (auto& [file, list] : anonymous_by_file) {
    std::stable_sort(list.begin(), list.end());
    for (std::size_t i = 0; i < list.size(); ++i) ordinal[list[i].second] = static_cast<int>(i) + 1;
  }
  for (FunctionId f = 0; f < parts.size(); ++f) {
    std::string file = parts[f].file;
    if (file_map) {
      auto it = file_map->find(file);
      file = it == file_map->end() ? "\x1f" "unmatched:" + file : it->second;
    }
    k.key.emplace_back(file, parts[f].name, ordinal[f]);
    k.holders[k.key.back()].push_back(f);
  }
  return k;
}

}  // namespace

FunctionMatches match_functions(const Profile& base, const Profile& now) {
  std::vector<Parts> bp, np;
  for (FunctionId f = 0; f < base.functions.size(); ++f) bp.push_back(parts_of(base, f));
  for (FunctionId f = 0; f < now.functions.size(); ++f) np.push_back(parts_of(now, f));
  const std::map<std::string, std::string> file_map = match_files(distinct_files(bp), distinct_files(np));

  const Keys bk = keys_of(bp, &file_map), nk = keys_of(np, nullptr);
  FunctionMatches m;
  m.now_of_base.assign(bp.size(), kNoFunction);
  m.base_ambiguous.assign(bp.size(), false);
  m.now_ambiguous.assign(np.size(), false);
  for (FunctionId f = 0; f < bp.size(); ++f) {
    const auto& key = bk.key[f];
    const auto there = nk.holders.find(key);
    const std::size_t here_n = bk.holders.at(key).size(), there_n = there == nk.holders.end() ? 0 : there->second.size();
    if (here_n == 1 && there_n == 1) {
      m.now_of_base[f] = there->second.front();
    } else if (here_n > 1 || there_n > 1) {
      m.base_ambiguous[f] = true;
      if (there != nk.holders.end())
        for (FunctionId g : there->second) m.now_ambiguous[g] = true;
    }
  }
  for (FunctionId g = 0; g < np.size(); ++g)
    if (nk.holders.at(nk.key[g]).size() > 1) m.now_ambiguous[g] = true;
  return m;
}

std::size_t align_labels(Profile* base, const Profile& now) {
  const FunctionMatches m = match_functions(*base, now);
  std::size_t renamed = 0;
  for (FunctionId f = 0; f < m.now_of_base.size(); ++f) {
    const FunctionId g = m.now_of_base[f];
    if (g == kNoFunction || base->functions.label(f) == now.functions.label(g)) continue;
    base->functions.relabel(f, now.functions.label(g));
    ++renamed;
  }
  return renamed;
}

}  // namespace scriptprof
