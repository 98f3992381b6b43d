#pragma once
/// The process's own memory, as the operating system counts it.

#include <cstdint>
#include <string>

namespace halognn {

/// The largest resident set size this process has had so far (getrusage's ru_maxrss), in bytes.
std::int64_t peak_rss_bytes();

/// The resident set size of this process now (/proc/self/statm), in bytes; 0 where unreadable.
std::int64_t current_rss_bytes();

/// "peak RSS 1234.5 MiB": the line ending every tool prints after its work.
std::string peak_rss_text();

}  // namespace halognn
