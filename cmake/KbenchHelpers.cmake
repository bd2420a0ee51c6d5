# Helpers shared by every directory: one way to add a library, a benchmark source or a test.

# Warnings (as errors, by default) apply to kbench's own targets only, never to dependencies.
function(kbench_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  if(KBENCH_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(KBENCH_SANITIZE)
    # GCC 12's -Wmaybe-uninitialized gives false positives inside libstdc++ (std::regex,
    # std::function) once sanitizer instrumentation is on. -O1 -g1 (after the build type's
    # flags, so they win): ASan's advice, line tables enough for its reports, and less than
    # half the compile time of -O2 -g (scripts/test builds this beside ctest).
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all -Wno-maybe-uninitialized
                                             -O1 -g1)
    target_link_options(${target} PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()

# kbench_add_library(NAME SOURCES ... [DEPS ...]) -> target NAME, alias kbench::<NAME without kbench_>
function(kbench_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  string(REGEX REPLACE "^kbench_" "" short ${name})
  add_library(kbench::${short} ALIAS ${name})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  kbench_target_defaults(${name})
endfunction()

# kbench_add_benchmark(SOURCE [MORE...]): adds one family's sources to the single `kbench`
# executable.
# Sources go straight into the executable, so static family registrars are always linked.
function(kbench_add_benchmark source)
  target_sources(kbench PRIVATE ${source} ${ARGN})
endfunction()

# kbench_add_test(NAME SOURCES ... [DEPS ...] [LABELS ...]): one GoogleTest executable,
# registered with ctest.
function(kbench_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  kbench_target_defaults(${name})
  add_test(NAME ${name} COMMAND ${name} --gtest_brief=1)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "unit;${ARG_LABELS}")
  set_property(GLOBAL APPEND PROPERTY KBENCH_UNIT_TESTS ${name})
endfunction()

# A test that cannot run here (not root, a tool missing, a registry unreachable) exits with
# this code, and ctest reports it as skipped, never as passed; scripts/test fails on a skip
# under CI=true. tests/scripts/unittest_runner.py uses the same code.
set(KBENCH_SKIP_RETURN_CODE 77)

# kbench_add_script_test(NAME COMMAND ... [LABELS ...] [TIMEOUT s] [LOCK resource...]): a ctest
# entry that runs a script (bash or python) from the source tree; exit KBENCH_SKIP_RETURN_CODE
# means skipped; tests with the same LOCK never run at once (the Kafka brokers they start).
function(kbench_add_script_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "COMMAND;LABELS;LOCK" ${ARGN})
  add_test(NAME ${name} COMMAND ${ARG_COMMAND} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
    SKIP_RETURN_CODE ${KBENCH_SKIP_RETURN_CODE}
    ENVIRONMENT "KBENCH_BIN=$<TARGET_FILE:kbench>;KBENCH_BUILD_DIR=${PROJECT_BINARY_DIR}")
  if(ARG_LOCK)
    # COST: with ctest -j and no timing history (a fresh clone), the locked tests, which
    # run one after the other and take longest together, start first; the rest fill the
    # other slot.
    # LOCK may name several resources (LOCK kafka bench_commits_cache).
    set_tests_properties(${name} PROPERTIES RESOURCE_LOCK "${ARG_LOCK}" COST 1000)
  endif()
endfunction()
