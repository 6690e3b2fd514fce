// The VM as Python sees it: interruptible sync points with the GIL released,
// where-issued capture for error messages, back-pressure without the GIL, exit.
#include "bind.h"  // Python.h first

#include <frameobject.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <cstring>
#include <unordered_map>

#include "rill/eager/trace.h"
#include "rill/util/parallel.h"
#include "rill/vm/park.h"
#include "rill/vm/trace.h"
#include "rill/vm/virtual_machine.h"

namespace rill::py {
namespace {

// Note [Where an op was issued]
// At submission we keep the caller's code object and bytecode offset: two
// loads, no line-table walk. Code objects are kept alive in a table the first
// time they are seen (the GIL, held at submission, guards it), so the pointer
// stays valid until an error needs it; only then is it turned into file:line.
// An op issued by rill's own Python (rill.nn.functional, an optimizer, rill.distributed, DDP's hooks) is
// named by the first frame outside the package, where the user called in: each code object's "inside rill"
// bit is computed once, when the table first sees it.
std::unordered_map<PyObject*, bool>* g_codes = new std::unordered_map<PyObject*, bool>();

// The folder of rill's Python package (python/rill/, or site-packages/rill/), with its trailing '/'; empty
// until the package is importable.
const std::string& rill_dir() {
  static std::string dir;
  if (!dir.empty()) return dir;
  PyObject* name = PyUnicode_FromString("rill");
  PyObject* module = name ? PyImport_GetModule(name) : nullptr;  // new reference, or null
  Py_XDECREF(name);
  if (!module) {
    PyErr_Clear();
    return dir;
  }
  PyObject* file = PyObject_GetAttrString(module, "__file__");
  Py_DECREF(module);
  if (file && PyUnicode_Check(file)) {
    std::string path = PyUnicode_AsUTF8(file);
    size_t slash = path.rfind('/');
    if (slash != std::string::npos) dir = path.substr(0, slash + 1);
  }
  Py_XDECREF(file);
  PyErr_Clear();
  return dir;
}

bool inside_rill(PyCodeObject* code) {
  const std::string& dir = rill_dir();
  if (dir.empty() || !PyUnicode_Check(code->co_filename)) return false;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  return file != nullptr && std::strncmp(file, dir.c_str(), dir.size()) == 0;
}

vm::SourceLocation capture() {
  if (!PyGILState_Check()) return {};
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  PyFrameObject* owned = nullptr;            // frames from PyFrame_GetBack are new references
  vm::SourceLocation innermost;
  while (frame) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new reference
    PyObject* key = reinterpret_cast<PyObject*>(code);
    auto [it, inserted] = g_codes->try_emplace(key, false);
    if (inserted) {
      it->second = inside_rill(code);  // the table keeps the reference: the pointer stays valid
    } else {
      Py_DECREF(code);
    }
    vm::SourceLocation here{key, PyFrame_GetLasti(frame)};
    if (!innermost.code) innermost = here;
    if (!it->second) {
      Py_XDECREF(owned);
      return here;
    }
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference, or null
    Py_XDECREF(owned);
    owned = back;
    frame = back;
  }
  return innermost;  // every frame is rill's own (its import, say)
}

std::string format(vm::SourceLocation where) {
  if (!Py_IsInitialized() || _Py_IsFinalizing() || !where.code) return {};
  PyGILState_STATE gil = PyGILState_Ensure();
  auto* code = static_cast<PyCodeObject*>(const_cast<void*>(where.code));
  int line = PyCode_Addr2Line(code, where.offset);
  std::string file = PyUnicode_Check(code->co_filename) ? PyUnicode_AsUTF8(code->co_filename) : "?";
  PyGILState_Release(gil);
  return file + ":" + std::to_string(line);
}

void run_unlocked(void (*fn)(void*), void* ctx) {
  if (PyGILState_Check()) {
    nb::gil_scoped_release release;
    fn(ctx);
  } else {
    fn(ctx);
  }
}

// Note [Spinning with the GIL]
// Releasing and re-taking the GIL costs about as much as issuing an op (a mutex,
// a condition variable, thread-state swaps), and a sync point that follows its
// work usually finishes within a few microseconds: `(v * 2).sum().item()` waits
// for one small reduction. So a waiter first polls for up to kHeldSpin with the
// GIL held, then releases it. The spin is bounded: a VM thread that needs the GIL
// (to free a numpy buffer, or to name the line of a failed op) waits at most that
// long, and so does any other Python thread.
constexpr auto kHeldSpin = std::chrono::microseconds(20);

// Each poll is vm::wait_turn: past a short grace it runs the queued work itself when the scheduler thread is
// not at it, and otherwise yields rather than pausing: when the machine is busy, the VM thread that will
// finish the work may be queued on this very core, and a pause loop would hold it off for the whole spin
// (measured: 27 us per item() instead of 7 with compilers running on both cores).
bool spin_until_done(vm::SyncSignal& signal) {
  int64_t since = vm::now_ns();
  auto until = std::chrono::steady_clock::now() + kHeldSpin;
  while (!signal.done.load(std::memory_order_acquire)) {
    // A parallel region is running: wait (and help it) with the GIL released, in vm::wait_for.
    if (std::chrono::steady_clock::now() >= until || parallel::busy()) return false;
    vm::wait_turn(since);  // runs the queued work here when the scheduler is not at it (Note [A waiter runs the queue])
  }
  return true;
}

// Waits with the GIL released, waking every 50 ms to let Ctrl-C through. The
// signal stays owned by the VM's sync marker too, so an interrupted wait leaves
// nothing dangling and the VM usable. Work queued behind a VM thread stopped by
// rill.odb (Note [Parking] in vm/park.h): a stopped scheduler raises, a stopped
// worker gets a warning after a second.
void wait_interruptible(vm::SyncSignal& signal) {
  if (spin_until_done(signal)) return;
  for (int turns = 1;; ++turns) {
    bool done;
    {
      nb::gil_scoped_release release;
      done = vm::wait_for(signal, std::chrono::milliseconds(50));
    }
    if (done) return;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
    vm::check_not_stalled();
    if (turns == 20) {
      vm::StoppedSet stopped = vm::stopped_threads();
      for (int k = 0; k < vm::kMaxThreadIds; ++k) {
        if (!stopped.workers[k]) continue;
        std::string text = "rill: this sync point has waited 1 s while VM worker " + std::to_string(k) +
                           " is stopped (rill.odb.stop_vm_worker); if it waits for that worker's work, it resumes "
                           "only after rill.odb.restart_vm_worker(" + std::to_string(k) + ") (Ctrl-C interrupts it)";
        if (PyErr_WarnEx(PyExc_RuntimeWarning, text.c_str(), 1) != 0) throw nb::python_error();
        break;
      }
    }
  }
}

// Test-only (tests/python/test_fork.py): a native thread, which never used rill and holds no
// Python state, forks `forks` times while the calling thread keeps the VM busy with elementwise
// ops, plus matmuls or convolutions (`heavy`: "none", "matmul", "conv"). Each child computes with
// rill (a matmul and a convolution included) and exits 0 when its values are right. Returns each
// child's exit status (-1: still running after 30 s, then killed).
std::vector<int> fork_from_native_thread(int forks, const std::string& heavy) {
  auto child = []() {
    int code = 0;
    try {
      Tensor a = eager::full({32, 32}, Scalar(1.0), DType::kFloat32);
      Tensor b = eager::binary(eager::op("add"), a, a);
      Tensor c = eager::matmul(b, a);
      Tensor k = eager::conv2d(eager::full({1, 2, 8, 8}, Scalar(1.0), DType::kFloat32),
                               eager::full({3, 2, 3, 3}, Scalar(1.0), DType::kFloat32), std::nullopt, {1}, {0}, {1}, 1);
      vm::wait_readable(c);
      vm::wait_readable(k);
      if (static_cast<const float*>(b.data_ptr())[7] != 2.0f) code = 1;
      if (static_cast<const float*>(c.data_ptr())[9] != 64.0f) code = 2;
      if (static_cast<const float*>(k.data_ptr())[5] != 18.0f) code = 4;
    } catch (...) {
      code = 3;
    }
    _exit(code);
  };
  std::atomic<bool> stop{false};
  std::vector<int> codes;
  nb::gil_scoped_release release;
  std::thread forker([&] {
    for (int i = 0; i < forks; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      pid_t pid = ::fork();
      if (pid == 0) child();
      int status = 0;
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      int code = -1;
      while (true) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
          code = WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
          break;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      codes.push_back(code);
    }
    stop = true;
  });
  Tensor x = eager::full({256, 256}, Scalar(0.0), DType::kFloat32);
  Tensor one = eager::full({256, 256}, Scalar(1.0), DType::kFloat32);
  Tensor images = eager::full({8, 16, 32, 32}, Scalar(1.0), DType::kFloat32);
  Tensor filters = eager::full({16, 16, 3, 3}, Scalar(0.01), DType::kFloat32);
  while (!stop) {
    for (int i = 0; i < 20; ++i) x = eager::binary(eager::op("add"), x, one);
    if (heavy == "matmul") x = eager::matmul(x, one);
    if (heavy == "conv") images = eager::conv2d(images, filters, std::nullopt, {1}, {1}, {1}, 1);
    vm::drain();
  }
  forker.join();
  return codes;
}

// What a sync point is called in graph mode's refusal (Note [Tracing] in eager/trace.h).
constexpr const char* kSyncPoint =
    "a sync point (item(), numpy(), tolist(), printing a value, a Python `if` on a tensor)";

}  // namespace

void wait_readable(const Tensor& t) {
  if (eager::TraceSink* sink = eager::trace_sink()) [[unlikely]]
    sink->on_sync(t, kSyncPoint);
  auto signal = vm::submit_readable(t);
  if (!signal) return;
  wait_interruptible(*signal);
  vm::check(*signal);
}

void read_element(const Tensor& t, void* dst) {
  if (eager::TraceSink* sink = eager::trace_sink()) [[unlikely]]
    sink->on_sync(t, kSyncPoint);
  if (vm::SyncSignal* signal = vm::submit_read(t, dst)) {
    wait_interruptible(*signal);
    vm::finish_read(dst);
  }
}

void synchronize() {
  wait_all();
  vm::raise_unreported_error();
}

void wait_all() {
  if (vm::num_in_flight() > 0) wait_interruptible(*vm::submit_sync({}, true));
}

void init_vm(nb::module_& m) {
  vm::set_location_hooks(capture, format);
  vm::set_unlocked_runner(run_unlocked);
  m.def("synchronize", &synchronize, "Wait for every issued op to finish (a sync point).");
  m.def("_shutdown", []() {
    vm::restart_all();  // Note [Parking] in vm/park.h: exit finishes the work queued behind a stopped thread
    try {
      synchronize();
    } catch (const Error&) {
      // At exit an error nobody looked at is dropped, like a tensor nobody read.
    }
    vm::trace::finish_env();
  }, "Drain the VM and write the RILL_VM_TRACE trace (registered with atexit).");
  m.def("_num_in_flight", &vm::num_in_flight);

  // rill.asyncs (python/rill/asyncs.py)
  m.def("_asyncs_reserve", &vm::reserve_thread_id, "Reserve the lowest free VM thread id above 0.");
  m.def("_asyncs_release", &vm::release_thread_id, nb::arg("thread_id"), "Free a reserved VM thread id.");
  m.def("_asyncs_current", &vm::current_thread_id, "The VM thread id this Python thread submits to.");
  m.def("_asyncs_set", &vm::set_current_thread_id, nb::arg("thread_id"),
        "Send this Python thread's instructions to a VM thread id.");

  m.def("_test_fork_from_native_thread", &fork_from_native_thread, nb::arg("forks"), nb::arg("heavy"));

  // The item() breakdown in bench/: one read with the clock stamps of its stages (ns).
  m.def("_now_ns", &vm::now_ns);
  m.def("_item_timed", [](const Tensor& t) {
    RILL_CHECK(t.numel() == 1, Runtime, "[_item_timed] needs a one-element tensor");
    vm::ReadTimes times;
    vm::profile_reads(&times);
    alignas(16) char value[16];
    try {
      read_element(t, value);
    } catch (...) {
      vm::profile_reads(nullptr);
      throw;
    }
    int64_t woken = vm::now_ns();
    vm::profile_reads(nullptr);
    return nb::make_tuple(times.enter, times.submitted, times.ready, times.done, woken);
  });
}

}  // namespace rill::py
