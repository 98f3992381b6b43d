// The one-line error of a halognn tool: run its body, and turn an exception into
// "TOOL: message" on stderr and exit status 1 ("(see --help)" after an option error).
#pragma once

#include <boost/program_options/errors.hpp>

#include <cstdio>
#include <exception>

namespace halognn {

template <class Body>
int run_tool(const char* tool, Body&& body) {
  try {
    return body();
  } catch (const boost::program_options::error& e) {
    std::fprintf(stderr, "%s: %s (see --help)\n", tool, e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, e.what());
  }
  return 1;
}

}  // namespace halognn
