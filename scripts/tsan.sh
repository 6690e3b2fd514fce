#!/usr/bin/env bash
# The VM's and the actor runtime's C++ tests under ThreadSanitizer (a separate build tree, build/tsan).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/tsan -G Ninja -DRILL_SANITIZE=thread -DRILL_BUILD_TESTS=ON -DRILL_BUILD_PYTHON=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build/tsan rill_cpp_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ./build/tsan/tests/cpp/rill_cpp_tests --gtest_filter='VM.*:VMWaiter.*:VMCommHandOff.*:Parallel.*:Eager.*:SyncRead.*:AsyncThreads.*:FinishLater.*:Runtime*'
