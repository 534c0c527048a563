// A served profile's bytes: the tests look for names in the decompressed pprof.
#pragma once
#include <zlib.h>

#include <string>

namespace live_test {

inline std::string gunzip(const std::string& gz) {
  z_stream z{};
  inflateInit2(&z, 16 + MAX_WBITS);
  std::string out(4 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_FINISH);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace live_test
