// Default options of the sanitizer runtimes in a sanitizer build (-DGNN_SANITIZE=...): compiled
// into every tool and test executable (an INTERFACE source of the `halognn` target), so ctest,
// mpirun and a shell run them alike without environment variables. Only built when sanitizing.
extern "C" {

// Any finding fails the run; MPI's shared-memory transports map memory in ways ASan's
// use-after-return detection does not need to see. HALOGNN_NO_LEAK_CHECK: set for the test
// executables that start MPI (cmake/halognn_test.cmake, halognn_no_leak_check).
const char* __asan_default_options() {
#ifdef HALOGNN_NO_LEAK_CHECK
  return "abort_on_error=1:detect_stack_use_after_return=0:detect_leaks=0";
#else
  return "abort_on_error=1:detect_stack_use_after_return=0";
#endif
}

const char* __ubsan_default_options() { return "print_stacktrace=1:halt_on_error=1"; }

// Allocations the MPI runtime and its components keep until exit are theirs, not leaks of ours.
const char* __lsan_default_suppressions() {
  return "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libpmix.so\n"
         "leak:libhwloc.so\n"
         "leak:libevent\n"
         "leak:mca_\n";
}

}  // extern "C"
