// Optimizer update ops: one call updates one parameter and its state with PyTorch's formulas (graph mode's
// optimizer step, and the fused update of later issues).
#include "rill/ops/op_schema.h"

namespace rill {

void register_optim_ops() {}

}  // namespace rill
