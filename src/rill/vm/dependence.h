// Note [Dependences]
// Every storage carries an AccessList of the in-flight instructions that touch
// it: the last writer and the readers since. Linking a new instruction I:
//   - a read of s depends on s's last writer (RAW);
//   - a write of s depends on the last writer (WAW) and on every reader since (WAR),
//     then I becomes the last writer and the reader list is cleared.
// Views share their base's storage, so they share its AccessList; an in-place op
// lists the tensor it modifies among its outputs, so it is a write.
// Edges between two kernel instructions of the same VM thread are not counted:
// that thread runs its instructions in submission order, so the later one
// cannot start before the earlier one ends (this keeps a chain of ops flowing
// without a round trip through the scheduler per op). Sync markers run on the
// scheduler itself, so every edge into them counts, unless the scheduler queued
// the marker on the one VM thread it waits for (Note [Markers on a worker] in
// scheduler.cpp): it is then ordered like a kernel of that thread.
// Only the scheduler thread links and retires, so none of this is locked.
#pragma once

#include "rill/vm/instruction.h"

namespace rill::vm {

/** Record instruction's accesses and add edges from the in-flight instructions it must follow. */
void link_dependences(Instruction* instruction);

/** Remove a finished instruction from the access lists it appears in. */
void unlink_dependences(Instruction* instruction);

/** Add the edge pred -> succ (succ waits for pred). */
inline void add_edge(Instruction* pred, Instruction* succ) {
  pred->successors.push_back(succ);
  ++succ->pending;
}

}  // namespace rill::vm
