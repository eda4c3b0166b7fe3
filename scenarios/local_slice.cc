#include "scenarios/local_slice.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tpusim::scenarios {

absl::StatusOr<LocalSliceLayout> ResolveSliceNameLocally(
    absl::string_view slice) {
  std::vector<std::string> prefixes;
  for (const runtime::TpuGeneration& g : runtime::TpuGenerations()) {
    prefixes.push_back(g.slice_prefix);
  }
  const size_t dash = slice.rfind('-');
  const runtime::TpuGeneration* gen = nullptr;
  if (dash != absl::string_view::npos) {
    for (const runtime::TpuGeneration& g : runtime::TpuGenerations()) {
      if (slice.substr(0, dash) == g.slice_prefix) gen = &g;
    }
  }
  if (gen == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice \"", slice, "\" is not <generation>-<count>; generations: ",
        absl::StrJoin(prefixes, ", "), " (e.g. \"v3-32\", \"v5litepod-16\")"));
  }
  int64_t count = 0;
  if (!absl::SimpleAtoi(slice.substr(dash + 1), &count) || count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("slice \"", slice,
                     "\": the count after '-' must be a positive integer"));
  }
  int64_t chips = count;
  if (gen->slice_name_counts_cores) {
    if (count % gen->cores_per_chip != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice \"", slice, "\": ", count,
                       " TensorCores is not a whole number of ", gen->name,
                       " chips (", gen->cores_per_chip, " cores per chip)"));
    }
    chips = count / gen->cores_per_chip;
  }
  const int64_t max_chips =
      int64_t{gen->max_slice[0]} * gen->max_slice[1] * gen->max_slice[2];
  if (chips > max_chips) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice \"", slice, "\": ", chips, " chips exceed the largest ",
        gen->name, " slice (", max_chips, " chips)"));
  }
  if (chips > gen->chips_per_host && chips % gen->chips_per_host != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice \"", slice, "\": ", chips, " chips is not a whole number of ",
        gen->name, " hosts (", gen->chips_per_host, " chips per host)"));
  }
  LocalSliceLayout layout;
  layout.generation = gen;
  layout.chips = static_cast<int>(chips);
  const int64_t chips_per_host =
      chips < gen->chips_per_host ? chips : gen->chips_per_host;
  layout.hosts = static_cast<int>(chips / chips_per_host);
  layout.devices_per_host =
      static_cast<int>(chips_per_host * gen->devices_per_chip);
  return layout;
}

}  // namespace tpusim::scenarios
