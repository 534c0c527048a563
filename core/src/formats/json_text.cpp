#include "json_text.hpp"

#include <cmath>

namespace scriptprof {

nlohmann::json json_number(double x) {
  if (!std::isfinite(x)) return 0;
  if (x == std::floor(x) && std::fabs(x) < 9e15) return static_cast<std::int64_t>(x);
  return x;
}

std::string json_dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace scriptprof
