#pragma once

#include <chrono>
#include <thread>

namespace kbench {

// librdkafka's mock cluster thread serves its op queue and only then drains its wake-up pipe,
// and a queue writes one wake-up byte per serving. A call made in between (the next of
// back-to-back calls: a topic, then a leader per partition) loses its byte to the drain and
// waits for the thread's 1-s poll timeout: 25 of 40 two-partition topics took 1.0 s on
// kbench-mock (librdkafka 2.0.2). Pausing before the next call lets the thread drain first.
inline void PauseBeforeNextMockCall() { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }

}  // namespace kbench
