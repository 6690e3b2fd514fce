// The run-delay reading behind cores_contended() (Note [Waiting for a core] in spin.h).
#include "rill/util/spin.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace rill {

namespace {

/** One thread's schedstat file and what it said at the last verdict. */
struct RunDelay {
  int fd = -1;
  bool opened = false;
  bool contended = false;
  int64_t exec_ns = 0, delay_ns = 0;  // at the last verdict
  std::chrono::steady_clock::time_point next_read{}, verdict_at{};

  ~RunDelay() {
    if (fd >= 0) close(fd);
  }

  /** Time on a CPU and time waiting on a run queue, in ns, so far; false when the file is not there. */
  bool read(int64_t* exec, int64_t* delay) {
    if (!opened) {
      opened = true;
      fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) return false;
    char buf[96];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return false;
    buf[n] = '\0';
    char* end = nullptr;
    *exec = std::strtoll(buf, &end, 10);
    *delay = std::strtoll(end, nullptr, 10);
    return true;
  }
};

thread_local RunDelay t_run_delay;

}  // namespace

bool cores_contended() {
  RunDelay& r = t_run_delay;
  auto now = std::chrono::steady_clock::now();
  if (now < r.next_read) return r.contended;
  r.next_read = now + kContendedEvery;
  int64_t exec = 0, delay = 0;
  if (!r.read(&exec, &delay)) return r.contended = false;
  int64_t d_exec = exec - r.exec_ns, d_delay = delay - r.delay_ns;
  bool long_ago = now - r.verdict_at >= kContendedStale;
  if (d_exec + d_delay < std::chrono::nanoseconds(kContendedWindow).count() && !long_ago) return r.contended;
  r.contended = d_delay >= std::chrono::nanoseconds(kContendedDelay).count() &&
                static_cast<double>(d_delay) > kContendedShare * static_cast<double>(d_exec + d_delay);
  r.verdict_at = now;
  r.exec_ns = exec;
  r.delay_ns = delay;
  return r.contended;
}

}  // namespace rill
