#include "lua_declared_names.hpp"

#include <cctype>
#include <vector>

namespace scriptprof::lua {

namespace {

enum class TokKind { Name, String, Number, Op };

struct Token {
  TokKind kind;
  std::string_view text;  // the name, the operator, or a string's contents (escapes left as written)
  int line;
};

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Just enough of Lua's lexer (llex.c) to find names, operators and the line of each token:
// comments, short and long strings and numbers are skipped whole, newlines counted as Lua
// counts them (\n, \r, \r\n and \n\r are one each).
class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {
    if (!s_.empty() && s_[0] == '#')  // the loader skips a first "#!" line; it still counts
      while (p_ < s_.size() && s_[p_] != '\n' && s_[p_] != '\r') ++p_;
  }

  std::vector<Token> tokens() {
    std::vector<Token> out;
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == '\n' || c == '\r') {
        newline();
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++p_;
      } else if (c == '-' && at(1) == '-') {
        p_ += 2;
        if (int level = long_bracket_level(); level >= 0)
          long_bracket(level);
        else
          while (p_ < s_.size() && s_[p_] != '\n' && s_[p_] != '\r') ++p_;
      } else if (c == '[' && long_bracket_level() >= 0) {
        int line = line_;
        std::string_view body = long_bracket(long_bracket_level());
        out.push_back({TokKind::String, body, line});
      } else if (c == '"' || c == '\'') {
        int line = line_;
        out.push_back({TokKind::String, short_string(c), line});
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && std::isdigit(static_cast<unsigned char>(at(1))))) {
        std::size_t start = p_;
        while (p_ < s_.size() && (is_name_char(s_[p_]) || s_[p_] == '.' ||
                                  ((s_[p_] == '+' || s_[p_] == '-') && std::string_view("eEpP").find(s_[p_ - 1]) != std::string_view::npos)))
          ++p_;
        out.push_back({TokKind::Number, s_.substr(start, p_ - start), line_});
      } else if (is_name_start(c)) {
        std::size_t start = p_;
        while (p_ < s_.size() && is_name_char(s_[p_])) ++p_;
        out.push_back({TokKind::Name, s_.substr(start, p_ - start), line_});
      } else {
        // Two-character operators matter only where their first character would read as '='
        // or as one of the attribute brackets '<' '>'.
        std::size_t n = (at(1) == '=' && std::string_view("=~<>").find(c) != std::string_view::npos) || (c == ':' && at(1) == ':') ? 2 : 1;
        out.push_back({TokKind::Op, s_.substr(p_, n), line_});
        p_ += n;
      }
    }
    return out;
  }

 private:
  char at(std::size_t k) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }

  void newline() {
    char c = s_[p_++];
    if (p_ < s_.size() && (s_[p_] == '\n' || s_[p_] == '\r') && s_[p_] != c) ++p_;
    ++line_;
  }

  // At '[': the level of a long bracket "[==[" opening here, or -1.
  int long_bracket_level() const {
    if (at(0) != '[') return -1;
    std::size_t k = 1;
    while (at(k) == '=') ++k;
    return at(k) == '[' ? static_cast<int>(k - 1) : -1;
  }

  std::string_view long_bracket(int level) {
    p_ += level + 2;
    std::size_t start = p_;
    while (p_ < s_.size()) {
      if (s_[p_] == ']') {
        std::size_t k = 1;
        while (at(k) == '=') ++k;
        if (at(k) == ']' && static_cast<int>(k - 1) == level) {
          std::string_view body = s_.substr(start, p_ - start);
          p_ += k + 1;
          return body;
        }
        ++p_;
      } else if (s_[p_] == '\n' || s_[p_] == '\r') {
        newline();
      } else {
        ++p_;
      }
    }
    return s_.substr(start);
  }

  std::string_view short_string(char quote) {
    std::size_t start = ++p_;
    while (p_ < s_.size() && s_[p_] != quote) {
      if (s_[p_] == '\n' || s_[p_] == '\r') return s_.substr(start, p_ - start);  // unfinished
      if (s_[p_] == '\\' && p_ + 1 < s_.size()) {
        ++p_;
        if (s_[p_] == '\n' || s_[p_] == '\r') {
          newline();
          continue;
        }
        if (s_[p_] == 'z') {  // \z skips the whitespace after it, newlines included
          ++p_;
          while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) {
            if (s_[p_] == '\n' || s_[p_] == '\r')
              newline();
            else
              ++p_;
          }
          continue;
        }
      }
      ++p_;
    }
    std::string_view body = s_.substr(start, p_ - start);
    if (p_ < s_.size()) ++p_;
    return body;
  }

  std::string_view s_;
  std::size_t p_ = 0;
  int line_ = 1;
};

bool is_op(const Token& t, std::string_view op) { return t.kind == TokKind::Op && t.text == op; }

bool is_keyword(std::string_view s) {
  static constexpr std::string_view kKeywords[] = {
      "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
      "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"};
  for (std::string_view k : kKeywords)
    if (s == k) return true;
  return false;
}

bool is_name(const Token& t) { return t.kind == TokKind::Name && !is_keyword(t.text); }

// `function a.b:c` (and `local function f`): the funcname after the keyword at `i`; sets
// `*after` to the token that follows it.
std::string statement_name(const std::vector<Token>& t, std::size_t i, std::size_t* after) {
  std::size_t k = i + 1;
  std::string name;
  if (k < t.size() && is_name(t[k])) {
    name = t[k++].text;
    while (k + 1 < t.size() && (is_op(t[k], ".") || is_op(t[k], ":")) && is_name(t[k + 1])) {
      name += t[k].text;
      name += t[k + 1].text;
      bool method = is_op(t[k], ":");
      k += 2;
      if (method) break;
    }
  }
  *after = k;
  return name;
}

// `x.y = function`, `local f <const> = function`, `{ key = function`, `t["key"] = function`:
// the name assigned the function expression at `i`, or "".
std::string assigned_name(const std::vector<Token>& t, std::size_t i) {
  if (i < 2 || !is_op(t[i - 1], "=")) return "";
  std::size_t j = i - 2;
  if (is_op(t[j], ">") && j >= 3 && is_op(t[j - 2], "<") && is_name(t[j - 1])) j -= 3;  // attribute
  std::string name;
  while (true) {
    std::string part;
    bool bracket = false;
    if (is_name(t[j])) {
      part = t[j].text;
    } else if (is_op(t[j], "]") && j >= 2 && t[j - 1].kind == TokKind::String && is_op(t[j - 2], "[")) {
      part = t[j - 1].text;
      bracket = true;
      j -= 2;
    } else {
      break;
    }
    name = name.empty() ? part : part + "." + name;
    if (j >= 2 && is_op(t[j - 1], ".")) {
      j -= 2;
    } else if (bracket && j >= 1 && (is_name(t[j - 1]) || is_op(t[j - 1], "]"))) {
      j -= 1;  // a["b"]: the table before the brackets
    } else {
      break;
    }
  }
  return name;
}

struct OpenBlock {
  bool function;
  std::string name;
  int lines[2];  // the `function` keyword's line, and its parameter list's (Lua uses either)
};

void record(DeclaredNames* names, int line, int last_line, const std::string& name) {
  auto [it, inserted] = names->emplace(std::make_pair(line, last_line), name);
  if (!inserted && it->second != name) it->second.clear();  // two functions: neither name is sure
}

}  // namespace

DeclaredNames declared_names(std::string_view text) {
  std::vector<Token> t = Lexer(text).tokens();
  DeclaredNames names;
  std::vector<OpenBlock> open;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind != TokKind::Name) continue;
    std::string_view w = t[i].text;
    if (w == "function") {
      std::size_t after = i + 1;
      std::string name = statement_name(t, i, &after);
      if (name.empty()) name = assigned_name(t, i);
      int params = after < t.size() ? t[after].line : t[i].line;
      open.push_back({true, std::move(name), {t[i].line, params}});
    } else if (w == "do" || w == "if" || w == "repeat") {
      open.push_back({false, {}, {0, 0}});
    } else if ((w == "end" || w == "until") && !open.empty()) {
      OpenBlock b = std::move(open.back());
      open.pop_back();
      if (!b.function || w != "end") continue;
      record(&names, b.lines[0], t[i].line, b.name);
      if (b.lines[1] != b.lines[0]) record(&names, b.lines[1], t[i].line, b.name);
    }
  }
  return names;
}

}  // namespace scriptprof::lua
