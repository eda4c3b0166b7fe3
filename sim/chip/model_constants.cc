#include "sim/chip/model_constants.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/check.h"

namespace tpusim::sim {
namespace {

constexpr ModelConstant kTable[] = {
    {"kernel_issue_overhead", 1, "us", ConstantKind::kAdditive, true,
     "chosen: the sheet gives no per-kernel issue cost; 1 us for the "
     "sequencer's launch and pipeline start of one fused kernel, every "
     "generation",
     true},
    {"host_loop_overhead", 100, "us", ConstantKind::kAdditive, true,
     "chosen: the sheet has no figure; 100 us per device call, the order of "
     "TF's TPU host-loop cost per session.run",
     true},
    {"ici_hop_latency", 1, "us", ConstantKind::kAdditive, false,
     "sheet A.5, A.9 item 6 [C]: ~1 us per hop (scaling book, newer), "
     "preferred over 0.5 us; every generation",
     true},
    {"on_chip_core_latency", 0.1, "us", ConstantKind::kAdditive, true,
     "chosen: no source gives the v2/v3 path between a chip's two "
     "TensorCores; a tenth of the hop latency (> 0: a link needs a minimum "
     "latency)",
     false, "v2,v3"},
    {"collective_forwarding_granule", 64, "KiB", ConstantKind::kAdditive, true,
     "chosen: a ring step forwards a received chunk granule by granule, as a "
     "DMA engine does; the sheet gives no granule",
     false},
    {"on_chip_core_rate", 2, "x raw link", ConstantKind::kRate, true,
     "chosen: sheet A.2 only says on-board links are \"2x faster\" [M], "
     "between chips; the v2/v3 core-to-core path at 2x the raw link rate",
     false, "v2,v3"},
    {"ici_achieved_fraction_v2_v3", 0.9, "fraction", ConstantKind::kEfficiency,
     true,
     "chosen: v2/v3 achieved link rates are not published; 90% of raw, the "
     "ratio of v4 45/50, v5e 45/50, v5p and v6e 90/100 (A.9 item 1)",
     false, "v2,v3"},
    {"hbm_achievable_fraction", 1.0, "fraction", ConstantKind::kEfficiency,
     true,
     "chosen: achievable HBM bandwidth is not in the sheet; kernels and DMA "
     "get 100% of the peak (C.1 uses the peak)",
     false},
    {"collective_reduce_bytes_per_alu_cycle", 4, "B/ALU/cycle",
     ConstantKind::kRate, true,
     "chosen: a collective's reduction combines one f32 element (4 bytes of "
     "incoming data) per VPU ALU per cycle; the sheet gives no reduce rate",
     false},
    {"vpu_alus_per_lane_v4", 2, "ALU/lane", ConstantKind::kRate, false,
     "sheet A.4 [V]: 2 ALUs per lane/sublane pair (SB-tpus)", false, "v4"},
    {"vpu_alus_per_lane_v5p", 4, "ALU/lane", ConstantKind::kRate, false,
     "sheet A.6 [V], C.1: 4 independent FP ALUs per lane/sublane pair "
     "(SB-tpus)",
     false, "v5p"},
    {"vpu_alus_per_lane_unpublished", 1, "ALU/lane", ConstantKind::kRate, true,
     "chosen: the sheet gives no ALU count for v2, v3, v5e, v6e; 1 per lane "
     "(the fewest a lane can have)",
     false, "v2,v3,v5e,v6e"},
    {"pcie_unpublished", 16, "GB/s", ConstantKind::kRate, true,
     "chosen: v3's host PCIe rate is not in the sheet (A.8 \"?\"); 16 GB/s, "
     "the v2/v4 figure",
     false, "v3"},
};

std::map<std::string, double>& Scales() {
  static auto* scales = new std::map<std::string, double>();
  return *scales;
}

const ModelConstant* Find(absl::string_view name) {
  for (const ModelConstant& c : kTable) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

}  // namespace

const char* ConstantKindName(ConstantKind kind) {
  switch (kind) {
    case ConstantKind::kAdditive:
      return "additive";
    case ConstantKind::kRate:
      return "rate";
    case ConstantKind::kEfficiency:
      return "efficiency";
  }
  return "?";
}

absl::Span<const ModelConstant> ModelConstants() { return kTable; }

bool ConstantApplies(const ModelConstant& c, absl::string_view generation) {
  if (std::string(c.generations).empty()) return true;
  for (absl::string_view g : absl::StrSplit(c.generations, ',')) {
    if (g == generation) return true;
  }
  return false;
}

double ScaledValue(const ModelConstant& c, double factor) {
  double v = c.value * factor;
  if (c.kind == ConstantKind::kEfficiency) v = std::min(v, 1.0);
  return v;
}

double ModelConstantValue(absl::string_view name) {
  const ModelConstant* c = Find(name);
  TPUSIM_CHECK(c != nullptr) << "no model constant " << std::string(name);
  auto it = Scales().find(c->name);
  if (it == Scales().end()) return c->value;
  return ScaledValue(*c, it->second);
}

common::Picoseconds ModelConstantTime(absl::string_view name) {
  const ModelConstant* c = Find(name);
  TPUSIM_CHECK(c != nullptr && std::string(c->unit) == "us")
      << "no time constant " << std::string(name);
  return common::Picoseconds(
      static_cast<int64_t>(std::llround(ModelConstantValue(name) * 1e6)));
}

absl::Status ScaleModelConstant(absl::string_view name, double factor) {
  const ModelConstant* c = Find(name);
  if (c == nullptr) {
    std::string names;
    for (const ModelConstant& k : kTable) {
      if (k.chosen) absl::StrAppend(&names, names.empty() ? "" : ", ", k.name);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "model constant \"", name, "\" is not known; chosen constants: ",
        names));
  }
  if (!c->chosen) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model constant ", name, " has a source (", c->source,
        "); only chosen constants are scaled"));
  }
  if (!std::isfinite(factor) || factor < 0 ||
      (factor == 0 && !c->zero_allowed)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scale of ", name, "=", factor, ": must be a finite factor ",
        c->zero_allowed ? ">= 0" : "> 0"));
  }
  Scales()[c->name] = factor;
  return absl::OkStatus();
}

std::vector<double> SensitivityFactors(const ModelConstant& c) {
  if (c.kind == ConstantKind::kAdditive && c.zero_allowed) {
    return {0, 0.5, 1, 2};
  }
  return {0.5, 1, 2};
}

}  // namespace tpusim::sim
