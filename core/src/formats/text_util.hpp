// Small text helpers shared by the line-oriented writers and readers (internal to the core).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace scriptprof {

class Profile;

// The line a report opens with when max_samples stopped the collection ("" otherwise): a
// profile of the start of a run must not pass for the whole run.
std::string limit_notice(const Profile& p);  // the runtime's note and the max_samples notice, for headers

// A name with LF and CR replaced by spaces: line-oriented formats cannot hold them.
std::string one_line(std::string s);

// A text report as a terminal may show it: control bytes other than LF and TAB (and C1
// controls encoded in UTF-8) written visibly as \xHH or \u00HH, so a name holding ESC or BEL
// from a chunk name or a string is printed, never obeyed.
std::string visible_text(std::string text);

// printf into a std::string (the report layouts are specified as printf conversions).
std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// A field of one or more decimal digits, nothing else (no sign, no spaces), that fits.
bool parse_u64(std::string_view field, std::uint64_t* out);

// The next line of `text` from `*pos` without its LF or a trailing CR; false at the end.
bool next_line(std::string_view text, std::size_t* pos, std::string_view* line);

}  // namespace scriptprof
