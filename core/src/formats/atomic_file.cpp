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
namespace {

// Creates a new file beside `path` (its name in *tmp): the descriptor, or -1 with errno set.
// The file is created with its final mode, 0666 less the umask, by the kernel: reading the
// umask would mean setting it, a window in which another thread of the host would create files
// without its mask. O_EXCL with a name nobody else uses stands in for mkstemp (which creates
// 0600).
int create_beside(const std::string& path, std::string* tmp) {
  static std::atomic<unsigned> serial{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    *tmp = path + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(serial.fetch_add(1)) + "-" +
           std::to_string(static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()) % 100000u);
    const int fd = open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

bool can_write_atomically(const std::string& path, std::string* error) {
  struct stat st;
  int err = 0;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    err = EISDIR;
  } else {
    std::string tmp;
    const int fd = create_beside(path, &tmp);
    if (fd < 0) {
      err = errno;
    } else {
      close(fd);
      unlink(tmp.c_str());
    }
  }
  if (err && error) *error = "cannot write '" + path + "': " + std::strerror(err);
  return err == 0;
}

bool write_file_atomically(const std::string& path, const std::string& content, std::string* error) {
  auto fail = [&](const char* what, int err, const std::string& tmp) {
    if (error) *error = "cannot " + std::string(what) + " '" + path + "': " + std::strerror(err);
    if (!tmp.empty()) unlink(tmp.c_str());
    return false;
  };
  std::string tmp;
  const int fd = create_beside(path, &tmp);
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
  if (close(fd) != 0) return fail("write", errno, tmp);
  if (rename(tmp.c_str(), path.c_str()) != 0) return fail("rename a temporary file to", errno, tmp);
  return true;
}

}  // namespace scriptprof
