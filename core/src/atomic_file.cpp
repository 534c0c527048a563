#include "scriptprof/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace scriptprof {

bool write_file_atomically(const std::string& path, const std::string& content, std::string* error) {
  auto fail = [&](const char* what, int err, const std::string& tmp) {
    if (error) *error = "cannot " + std::string(what) + " '" + path + "': " + std::strerror(err);
    if (!tmp.empty()) unlink(tmp.c_str());
    return false;
  };
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0) return fail("write", errno, "");
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return fail("write", err, tmp);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; a report is an ordinary file.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0) return fail("write", errno, tmp);
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail("rename a temporary file to", errno, tmp);
  return true;
}

}  // namespace scriptprof
