#include "core/process_memory.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace halognn {

std::int64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

std::int64_t current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

std::string peak_rss_text() {
  char buf[64];
  std::snprintf(buf, sizeof buf, "peak RSS %.1f MiB", static_cast<double>(peak_rss_bytes()) / 1048576.0);
  return buf;
}

}  // namespace halognn
