#include "tools/presets_command.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "sim/chip/chip_preset.h"

namespace tpusim::tools {
namespace {

using sim::ChipPreset;

std::string Opt(const std::optional<double>& v) {
  return v.has_value() ? absl::StrFormat("%g", *v) : "-";
}

std::string MaxSlice(const ChipPreset& p) {
  const auto& s = p.generation->max_slice;
  return p.generation->torus_rank == 3
             ? absl::StrCat(s[0], "x", s[1], "x", s[2])
             : absl::StrCat(s[0], "x", s[1]);
}

// One row per field: label, unit, value.
std::vector<std::vector<std::string>> Fields(const ChipPreset& p) {
  const auto* g = p.generation;
  return {
      {"TensorCores per chip", "", absl::StrCat(g->cores_per_chip)},
      {"devices per chip", "", absl::StrCat(g->devices_per_chip)},
      {"MXUs per core", "", absl::StrCat(p.mxus_per_core)},
      {"MXU size", "", absl::StrCat(p.mxu_dim, "x", p.mxu_dim)},
      {"clock", "GHz", absl::StrFormat("%g", p.clock_ghz)},
      {"peak bf16 (datasheet)", "TFLOPS/chip",
       absl::StrFormat("%g", p.datasheet_bf16_tflops)},
      {"peak bf16 (MXU identity)", "TFLOPS/chip",
       absl::StrFormat("%.1f", p.PeakBf16FlopsPerSecond() / 1e12)},
      {"int8", "TOPS/chip", Opt(p.int8_tops)},
      {"HBM", "GiB/chip", absl::StrFormat("%g", p.hbm_capacity.gib())},
      {"HBM bandwidth", "GB/s/chip", absl::StrFormat("%g", p.hbm_gbps)},
      {"ICI ports", "", absl::StrCat(p.ici_ports)},
      {"ICI link (raw)", "GB/s/dir", absl::StrFormat("%g", p.ici_link_gbps)},
      {"ICI link (achieved)", "GB/s/dir", Opt(p.ici_link_achieved_gbps)},
      {"ICI hop latency", "us",
       absl::StrFormat("%g", p.ici_hop_latency.microseconds())},
      {"torus", "", absl::StrCat(g->torus_rank, "-D")},
      {"max slice", "chips", MaxSlice(p)},
      {"chips per host", "", absl::StrCat(g->chips_per_host)},
      {"PCIe", "GB/s/chip", Opt(p.pcie_gbps)},
      {"DCN", "GB/s/chip", Opt(p.dcn_gbps)},
      {"vector unit", "lanes x sublanes",
       absl::StrCat(p.vpu_lanes, "x", p.vpu_sublanes)},
  };
}

void PrintTable(std::ostream& out) {
  out << absl::StrFormat(
      "%-5s %5s %7s %7s %6s %9s %8s %7s %8s %5s %9s %6s %9s %5s %8s %8s\n",
      "gen", "cores", "MXU", "clock", "bf16", "int8", "HBM", "HBM", "ICI",
      "links", "link", "torus", "max", "chips", "PCIe", "DCN");
  out << absl::StrFormat(
      "%-5s %5s %7s %7s %6s %9s %8s %7s %8s %5s %9s %6s %9s %5s %8s %8s\n", "",
      "/chip", "/core", "GHz", "TF", "TOPS", "GiB", "GB/s", "hop us", "/chip",
      "GB/s/dir", "", "slice", "/host", "GB/s", "GB/s");
  for (const ChipPreset& p : sim::ChipPresets()) {
    const auto* g = p.generation;
    out << absl::StrFormat(
        "%-5s %5d %7s %7g %6g %9s %8g %7g %8g %5d %9g %6s %9s %5d %8s %8s\n",
        p.name(), g->cores_per_chip,
        absl::StrCat(p.mxus_per_core, "x", p.mxu_dim), p.clock_ghz,
        p.datasheet_bf16_tflops, Opt(p.int8_tops), p.hbm_capacity.gib(),
        p.hbm_gbps, p.ici_hop_latency.microseconds(), p.ici_ports,
        p.ici_link_gbps, absl::StrCat(g->torus_rank, "-D"), MaxSlice(p),
        g->chips_per_host, Opt(p.pcie_gbps), Opt(p.dcn_gbps));
  }
  out << "\nNumbers per chip; sources and chosen values for conflicts: "
         "sim/chip/chip_preset.cc. '-' = not published.\n";
}

std::string JsonEscape(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void PrintJson(absl::Span<const ChipPreset* const> presets, std::ostream& out) {
  out << "[";
  for (size_t i = 0; i < presets.size(); ++i) {
    out << (i ? ",\n " : "") << "{\"name\": \"" << presets[i]->name() << "\"";
    for (const auto& f : Fields(*presets[i])) {
      out << ", \"" << JsonEscape(f[0])
          << (f[1].empty() ? "" : " (" + f[1] + ")") << "\": ";
      double number;
      if (f[2] == "-") {
        out << "null";
      } else if (absl::SimpleAtod(f[2], &number) &&
                 f[2].find('x') == std::string::npos &&
                 f[2].find('D') == std::string::npos) {
        out << f[2];
      } else {
        out << "\"" << JsonEscape(f[2]) << "\"";
      }
    }
    out << "}";
  }
  out << "]\n";
}

absl::Status RunPresets(const ParsedArgs& args, std::ostream& out) {
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--format=", format, " is not allowed; expected text or json"));
  }
  std::vector<const ChipPreset*> selected;
  if (args.positional().empty()) {
    for (const ChipPreset& p : sim::ChipPresets()) selected.push_back(&p);
  } else {
    TPUSIM_ASSIGN_OR_RETURN(const ChipPreset* p,
                            sim::FindChipPreset(args.positional()[0]));
    selected.push_back(p);
  }
  if (format == "json") {
    PrintJson(selected, out);
  } else if (args.positional().empty()) {
    PrintTable(out);
  } else {
    out << "preset " << selected[0]->name() << "\n";
    for (const auto& f : Fields(*selected[0])) {
      out << absl::StrFormat("  %-26s %-12s %s\n", f[0], f[2], f[1]);
    }
  }
  return absl::OkStatus();
}

}  // namespace

Subcommand PresetsCommand() {
  Subcommand s;
  s.name = "presets";
  s.summary =
      "print the TPU chip presets (v2, v3, v4, v5e, v5p, v6e) with units";
  s.usage = "tpusim presets [NAME] [--format=text|json]";
  s.flags = {{"format", true, "text (default) or json"}};
  s.min_positional = 0;
  s.max_positional = 1;
  s.description =
      "Without NAME, a table of every preset; with NAME, every field of that "
      "preset.\n"
      "Numbers come from shared/spec/tpu-hardware-reference.md; each cites its "
      "entry in\n"
      "sim/chip/chip_preset.cc.";
  s.run = &RunPresets;
  return s;
}

}  // namespace tpusim::tools
