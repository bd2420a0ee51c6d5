// What a test needs to know about the build it runs in: a sanitizer build is several times
// slower, and on a shared machine its threads can stall for a hundred milliseconds, so a test
// that measures in wall-clock slices widens them there rather than loosen what it checks.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define KBENCH_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KBENCH_TEST_ASAN 1
#endif
#endif
#ifndef KBENCH_TEST_ASAN
#define KBENCH_TEST_ASAN 0
#endif

namespace kbench::testing_support {

// The factor a wall-clock slice of a test is stretched by in this build.
inline constexpr int kWallClockStretch = KBENCH_TEST_ASAN ? 4 : 1;

}  // namespace kbench::testing_support
