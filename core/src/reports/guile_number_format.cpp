#include "scriptprof/guile_number_format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

namespace scriptprof {
namespace {

// Shortest round-trip text of |x| in plain decimal notation ("0.125", "12").
std::string shortest_fixed(double x) {
  char buf[400];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

// Rounds a plain decimal digit string half-up to `decimals` fractional digits.
std::string round_half_up(const std::string& digits, int decimals) {
  std::string whole = digits, frac;
  if (auto dot = digits.find('.'); dot != std::string::npos) {
    whole = digits.substr(0, dot);
    frac = digits.substr(dot + 1);
  }
  bool round_up = static_cast<int>(frac.size()) > decimals && frac[decimals] >= '5';
  frac.resize(decimals, '0');
  std::string all = whole + frac;  // digits without the point
  if (round_up) {
    int i = static_cast<int>(all.size()) - 1;
    for (; i >= 0; --i) {
      if (all[i] == '9') {
        all[i] = '0';
      } else {
        ++all[i];
        break;
      }
    }
    if (i < 0) all.insert(all.begin(), '1');
  }
  std::size_t split = all.size() - decimals;
  std::string out = all.substr(0, split);
  if (decimals > 0) out += "." + all.substr(split);
  return out;
}

}  // namespace

std::string guile_fixed(double x, int width, int decimals) {
  if (std::isnan(x)) return std::string(std::max(0, width - 3), ' ') + "nan";
  bool negative = std::signbit(x);
  std::string s = round_half_up(shortest_fixed(std::fabs(x)), decimals);
  if (negative) s.insert(s.begin(), '-');
  if (static_cast<int>(s.size()) < width) s.insert(0, width - s.size(), ' ');
  return s;
}

std::string guile_display(double x) {
  if (std::isnan(x)) return "+nan.0";
  if (std::isinf(x)) return x > 0 ? "+inf.0" : "-inf.0";
  double a = std::fabs(x);
  std::string sign = std::signbit(x) ? "-" : "";
  if (a == 0.0 || (a >= 1e-3 && a < 1e21)) {
    std::string s = shortest_fixed(a);
    if (s.find('.') == std::string::npos) s += ".0";
    return sign + s;
  }
  // Exponent form: mantissa digits with at least one fractional digit, "e", plain exponent.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, a, std::chars_format::scientific);
  std::string s(buf, r.ptr);
  auto e = s.find('e');
  std::string mant = s.substr(0, e);
  int exp = std::stoi(s.substr(e + 1));
  if (mant.find('.') == std::string::npos) mant += ".0";
  return sign + mant + "e" + std::to_string(exp);
}

std::string report_seconds(double seconds) {
  if (!std::isfinite(seconds) || std::fabs(seconds) >= 9e9) return guile_display(seconds);
  const long long ns = std::llround(seconds * 1e9);
  const unsigned long long magnitude = static_cast<unsigned long long>(ns < 0 ? -ns : ns);
  std::string fraction = std::to_string(1'000'000'000ULL + magnitude % 1'000'000'000ULL).substr(1);
  while (fraction.size() > 1 && fraction.back() == '0') fraction.pop_back();
  return (ns < 0 ? "-" : "") + std::to_string(magnitude / 1'000'000'000ULL) + "." + fraction;
}

}  // namespace scriptprof
