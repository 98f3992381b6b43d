# Test registration helpers. Labels: unit, mpi, cuda, slow.
#   halognn_add_unit_test(NAME SOURCES a.cpp b.cpp [LABELS slow ...])
#     one GoogleTest binary linked with gtest_main, discovered test by test, label `unit`; extra
#     LABELS apply to every test of the calling folder.
#   halognn_add_mpi_test(NAME SOURCES a.cpp [RANKS 2 4] [LABELS ...])
#     one GoogleTest binary linked with test/mpi_main.cpp, registered once per rank count as
#     NAME.npN under mpiexec --oversubscribe, label `mpi`.
function(halognn_add_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LABELS;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE halognn ${T_LIBS} GTest::gtest GTest::gtest_main)
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
  foreach(np IN LISTS T_RANKS)
    add_test(NAME ${name}.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} --oversubscribe
                     --allow-run-as-root ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}>
                     --gtest_color=no ${MPIEXEC_POSTFLAGS})
    # One OpenMP thread per rank: with more ranks than cores, spinning OpenMP threads of
    # different ranks starve each other (a 4-rank suite ran 10x slower on 2 cores).
    set(_env "HALOGNN_SOURCE_DIR=${PROJECT_SOURCE_DIR};OMP_NUM_THREADS=1")
    if(GNN_SANITIZE)
      # Open MPI unloads its plugins before exit, so LeakSanitizer cannot tell their allocations
      # from ours in MPI processes: leaks are checked by the serial tests only.
      list(APPEND _env "ASAN_OPTIONS=detect_leaks=0")
    endif()
    set_tests_properties(${name}.np${np} PROPERTIES PROCESSORS ${np} TIMEOUT 600
                         LABELS "mpi;${T_LABELS}" ENVIRONMENT "${_env}")
  endforeach()
endfunction()
