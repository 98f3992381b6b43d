# Test registration helpers. Labels: unit, mpi, cuda, slow.
#   halognn_add_unit_test(NAME SOURCES a.cpp b.cpp [LABELS slow ...] [STARTS_MPI])
#     one GoogleTest binary linked with gtest_main, discovered test by test, label `unit`; extra
#     LABELS apply to every test of the calling folder. STARTS_MPI: its tests start MPI (as a
#     singleton), so a sanitizer build checks it for leaks as little as the MPI tests (below).
#   halognn_add_mpi_test(NAME SOURCES a.cpp [RANKS 2 4] [LABELS ...])
#     one GoogleTest binary linked with test/mpi_main.cpp, registered once per rank count as
#     NAME.npN under mpiexec --oversubscribe, label `mpi`.
# halognn_no_leak_check(TARGET): in a sanitizer build, TARGET runs without LeakSanitizer (its
# copy of core/sanitizer_defaults.cpp says so), wherever it is started. Open MPI unloads its
# plugins before exit, so LeakSanitizer cannot tell their allocations from ours in a process that
# started MPI: leaks are checked by the tests that do not.
function(halognn_no_leak_check target)
  if(GNN_SANITIZE)
    target_compile_definitions(${target} PRIVATE HALOGNN_NO_LEAK_CHECK=1)
  endif()
endfunction()

function(halognn_add_unit_test name)
  cmake_parse_arguments(T "STARTS_MPI" "" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE halognn ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(T_STARTS_MPI)
    halognn_no_leak_check(${name})
  endif()
  # DISCOVERY_TIMEOUT must precede PROPERTIES: after it, every word is a property. Only one
  # label survives gtest_discover_tests in CMake 3.25 (a list is split into property names,
  # escaped or not), so extra labels (slow, cuda) go on the test folder: the LABELS directory
  # property adds them to every test registered there.
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS unit TIMEOUT 300
                       ENVIRONMENT "HALOGNN_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  if(T_LABELS)
    set_property(DIRECTORY APPEND PROPERTY LABELS ${T_LABELS})
  endif()
endfunction()

function(halognn_add_mpi_test name)
  cmake_parse_arguments(T "" "" "SOURCES;RANKS;LABELS;LIBS" ${ARGN})
  if(NOT T_RANKS)
    set(T_RANKS 2 4)
  endif()
  add_executable(${name} ${T_SOURCES} ${PROJECT_SOURCE_DIR}/test/mpi_main.cpp)
  target_link_libraries(${name} PRIVATE halognn ${T_LIBS} GTest::gtest)
  halognn_no_leak_check(${name})
  foreach(np IN LISTS T_RANKS)
    add_test(NAME ${name}.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
                     --allow-run-as-root ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}>
                     --gtest_color=no ${MPIEXEC_POSTFLAGS})
    # One OpenMP thread per rank: with more ranks than cores, spinning OpenMP threads of
    # different ranks starve each other (a 4-rank suite ran 10x slower on 2 cores).
    set_tests_properties(${name}.np${np} PROPERTIES PROCESSORS ${np} TIMEOUT 600
                         LABELS "mpi;${T_LABELS}"
                         ENVIRONMENT "HALOGNN_SOURCE_DIR=${PROJECT_SOURCE_DIR};OMP_NUM_THREADS=1")
  endforeach()
endfunction()
