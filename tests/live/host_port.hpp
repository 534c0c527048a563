// A served address ("127.0.0.1:43121") as httplib's client takes it: host and port.
#pragma once
#include <string>
#include <utility>

namespace live_test {

inline std::pair<std::string, int> host_port(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
}

}  // namespace live_test
