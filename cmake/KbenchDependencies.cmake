# Every dependency comes from Debian's packages (see scripts/setup).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(benchmark 1.7 REQUIRED)

# The codecs' libraries: harness/codecs/CMakeLists.txt.
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)

find_package(nlohmann_json 3 REQUIRED)
# librdkafka's statistics, read while a benchmark runs (harness/rdkafka_stats.cc).
find_package(simdjson 3 REQUIRED)

if(KBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
