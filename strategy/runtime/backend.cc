#include "strategy/runtime/backend.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpusim::runtime {

std::string Device::DebugString() const {
  return absl::StrCat("device ", id(), " (task ", task(), ", TPU:", ordinal(),
                      ", coords (", absl::StrJoin(coords(), ","), "), ", kind(),
                      ")");
}

}  // namespace tpusim::runtime
