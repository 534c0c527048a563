#include "scriptprof/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>
#include <cstdio>
#include <cstring>

namespace scriptprof {

bool write_file_atomically(const std::string& path, const std::string& content, std::string* error) {
  auto fail = [&](const char* what, int err, const std::string& tmp) {
    if (error) *error = "cannot " + std::string(what) + " '" + path + "': " + std::strerror(err);
    if (!tmp.empty()) unlink(tmp.c_str());
    return false;
  };
  // The temporary file is created with its final mode, 0666 less the umask, by the kernel:
  // reading the umask would mean setting it, a window in which another thread of the host
  // would create files without its mask. O_EXCL with a name nobody else uses stands in for
  // mkstemp (which creates 0600).
  std::string tmp;
  int fd = -1;
  static std::atomic<unsigned> serial{0};
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(serial.fetch_add(1)) + "-" +
          std::to_string(static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()) % 100000u);
    fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) return fail("write", errno, "");
  }
  if (fd < 0) return fail("write", EEXIST, "");
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
  if (close(fd) != 0) return fail("write", errno, tmp);
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail("rename a temporary file to", errno, tmp);
  return true;
}

}  // namespace scriptprof
