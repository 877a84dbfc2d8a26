#include "batch_key.h"

namespace normserve::server {

absl::string_view OpName(Op op) { return op == Op::kForward ? "forward" : "backward"; }

bool operator==(const BatchKey& a, const BatchKey& b) {
  return a.op == b.op && a.dtype == b.dtype && a.residual_dtype == b.residual_dtype &&
         a.hidden == b.hidden && a.config.center == b.config.center &&
         a.config.eps == b.config.eps && a.config.c == b.config.c &&
         a.config.partial == b.config.partial && SameParams(a.params.get(), b.params.get());
}

}  // namespace normserve::server
