#include "rill/vm/dependence.h"

#include <algorithm>

namespace rill::vm {
namespace {

// A marker that runs on the scheduler waits for every edge; one a worker completes (Note [Markers on a worker]
// in scheduler.cpp) is ordered on its thread like a kernel.
bool runs_on_scheduler(const Instruction* i) { return i->is_sync() && !i->on_worker; }

bool must_wait(const Instruction* pred, const Instruction* succ) {
  if (pred == succ) return false;
  if (runs_on_scheduler(succ) || runs_on_scheduler(pred)) return true;
  return pred->stream.thread_id != succ->stream.thread_id;  // same thread: program order suffices
}

void depend_on(void* pred, Instruction* succ) {
  auto* p = static_cast<Instruction*>(pred);
  if (must_wait(p, succ)) add_edge(p, succ);
}

}  // namespace

void link_dependences(Instruction* instr) {
  for (const Tensor& t : instr->inputs) {
    AccessList& a = t.storage()->accesses();
    if (a.last_write) depend_on(a.last_write, instr);
    a.reads.push_back(instr);
  }
  if (instr->is_sync()) return;
  for (const Tensor& t : instr->outputs) {
    AccessList& a = t.storage()->accesses();
    if (a.last_write && a.last_write != instr) depend_on(a.last_write, instr);
    for (void* r : a.reads) depend_on(r, instr);
    a.last_write = instr;
    a.reads.clear();
  }
}

void unlink_dependences(Instruction* instr) {
  auto drop_reader = [&](AccessList& a) {
    auto it = std::find(a.reads.begin(), a.reads.end(), static_cast<void*>(instr));
    if (it != a.reads.end()) {
      *it = a.reads.back();
      a.reads.pop_back();
    }
  };
  for (const Tensor& t : instr->inputs) drop_reader(t.storage()->accesses());
  for (const Tensor& t : instr->outputs) {
    AccessList& a = t.storage()->accesses();
    if (a.last_write == instr) a.last_write = nullptr;
  }
}

}  // namespace rill::vm
