# Every dependency comes from Debian's packages (see scripts/setup).
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
find_package(benchmark 1.7 REQUIRED)

pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
pkg_check_modules(LZ4 REQUIRED IMPORTED_TARGET liblz4)
pkg_check_modules(SNAPPY REQUIRED IMPORTED_TARGET snappy)
pkg_check_modules(RDKAFKA REQUIRED IMPORTED_TARGET rdkafka)

find_package(nlohmann_json 3 REQUIRED)

if(KBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
