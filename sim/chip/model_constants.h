// sim/chip/model_constants.h
//
// Every time-scaling constant of the pod model that is not a per-generation
// datasheet figure of ChipPreset, in one table: name, value, unit, its source
// (an entry of shared/spec/tpu-hardware-reference.md, the "sheet") or
// "chosen" (tpusim's choice, with the reason), and its kind:
//   additive   a time (or size) added per event: issue overhead, host loop,
//              latencies, the forwarding granule;
//   rate       a multiplier of a rate: ALUs per lane, the on-chip core path;
//   efficiency a fraction of a peak rate, at most 1.
// The model reads these values (and only these) from the table; the docs
// (`tpusim validate --constants`, docs/model.md) and `tpusim validate
// --sensitivity` read the same table.
//
//   const common::Picoseconds issue =
//       ModelConstantTime("kernel_issue_overhead");
//
// For `--sensitivity`, a process may scale one chosen constant before it
// builds anything (ScaleModelConstant); the scale holds for the process.

#ifndef TPUSIM_SIM_CHIP_MODEL_CONSTANTS_H_
#define TPUSIM_SIM_CHIP_MODEL_CONSTANTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/units.h"

namespace tpusim::sim {

enum class ConstantKind { kAdditive, kRate, kEfficiency };

// "additive", "rate", "efficiency".
const char* ConstantKindName(ConstantKind kind);

struct ModelConstant {
  const char* name;
  double value;      // in `unit`, unscaled
  const char* unit;  // "us", "KiB", "x link", "ALU/lane", "fraction"
  ConstantKind kind;
  bool chosen;         // true: tpusim's choice (no source gives the value)
  const char* source;  // the sheet entry, or why it was chosen
  bool zero_allowed;   // additive constants that may be scaled to 0
  // The generations whose model reads it ("v2,v3"), or "" for every one.
  const char* generations = "";
};

// Whether the model of generation `generation` ("v4") reads constant `c`.
bool ConstantApplies(const ModelConstant& c, absl::string_view generation);
// The value `c` takes when scaled by `factor` (an efficiency capped at 1).
double ScaledValue(const ModelConstant& c, double factor);

// The table, in a fixed order.
absl::Span<const ModelConstant> ModelConstants();

// The value of `name` in its unit, times this process's scale for it. A name
// not in the table is a programming error (CHECK).
double ModelConstantValue(absl::string_view name);
// A constant whose unit is "us", as picoseconds (rounded to the nearest).
common::Picoseconds ModelConstantTime(absl::string_view name);

// Scales chosen constant `name` by `factor` for the rest of the process (an
// efficiency is capped at 1). InvalidArgument naming the value and what is
// allowed: an unknown name, a constant with a source (only chosen ones are
// scaled), a factor that is not finite or < 0, or 0 for a constant that must
// stay positive.
absl::Status ScaleModelConstant(absl::string_view name, double factor);

// The factors `--sensitivity` runs a constant at (1 is the baseline):
// additive 0 (where allowed), 1/2, 1, 2; rates and efficiencies 1/2, 1, 2.
std::vector<double> SensitivityFactors(const ModelConstant& c);

}  // namespace tpusim::sim

#endif  // TPUSIM_SIM_CHIP_MODEL_CONSTANTS_H_
