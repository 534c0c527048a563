// Test helper: how many entries a directory holds ("." and ".." aside; -1 if it cannot be read).
#pragma once
#include <dirent.h>

#include <string>

inline int directory_entries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}
